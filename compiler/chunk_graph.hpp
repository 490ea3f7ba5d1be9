// A chunk as a graph of its own: what the compiler encodes into one e-graph per group.
//
// The chunk's nodes are copied in local order; each boundary input k becomes an Input node
// named `in.k` (its producer's dtype and shape, read through the same views), and each
// boundary output k an Output node named `out.k` reading it contiguously. The chunk's own
// Input nodes (weights, caches) and Output nodes keep their names.
#pragma once

#include <map>
#include <vector>

#include "compiler/partition.hpp"
#include "graph/hlir.hpp"

namespace kiln::compiler {

struct ChunkGraph {
  graph::Graph graph;
  // sub node -> the original node it copies (Input `in.k` nodes map to the boundary producer;
  // `out.k` Output nodes map to the boundary output node they read).
  std::vector<graph::NodeId> original;
  std::vector<graph::NodeId> input_nodes;   // `in.k` for k = 0, 1, ...
  std::vector<graph::NodeId> output_nodes;  // `out.k` for k = 0, 1, ...
  std::map<graph::NodeId, graph::NodeId> sub_of;  // chunk node (original id) -> sub node
};

ChunkGraph make_chunk_graph(const graph::Graph& g, const Chunk& chunk);

}  // namespace kiln::compiler
