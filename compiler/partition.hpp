// Partition: splits an HLIR graph at its graph breaks into chunks and groups structurally
// identical chunks, so the compiler searches each distinct block (a decoder layer) once and
// applies the result to every copy (DESIGN §1).
//
// Chunk. The nodes of one Graph::chunk_of value. A producer outside the chunk that a chunk node
// reads is a boundary input; a chunk node read by a node of another chunk, or by an Output
// node, is a boundary output. Output nodes belong to the chunk they were added in.
//
// Local numbering. The nodes of a chunk are numbered 0, 1, ... in a topological order of the
// chunk's own edges, ties broken by node id (for graphs built with the GraphTensor API this is
// id order). Boundary inputs are numbered in order of first read (by local consumer, then
// slot); boundary outputs in local order. Two chunks built by the same code therefore get the
// same numbering whatever their node ids; chunks that differ only in the order independent
// nodes were added are not recognized as equal (no graph canonicalization is attempted).
//
// Structural hash. XXH3-128 (support/hash.hpp) of a canonical byte encoding of the chunk: per
// local node its op, dtype, shape, the relevant attribute (Constant value bits, reduction axis,
// CustomOp name), the persistent flag and its inputs (local number or boundary-input number,
// slot, and the edge's View); the dtype and shape of each boundary input; the local numbers
// of the boundary outputs. Input and Output names, node ids and weight values are not part of
// it. Shapes and Views are encoded as their canonical text (to_string), which is exact.
//
// Grouping. Chunks with equal hashes whose encodings are also byte-equal form a group, so a
// hash collision can never merge different chunks. Groups are ordered by their first member.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "graph/hlir.hpp"
#include "support/hash.hpp"

namespace kiln::compiler {

// One chunk of a graph, in its local numbering.
struct Chunk {
  std::size_t index = 0;                // the Graph::chunk_of value
  std::vector<graph::NodeId> nodes;     // nodes[i] is local node i
  std::vector<graph::NodeId> inputs;    // boundary inputs: producers outside the chunk
  std::vector<graph::NodeId> outputs;   // boundary outputs: chunk nodes read from outside
  support::Hash128 hash;                // the structural hash

  // The local number of node `id`; nullopt if `id` is not in this chunk.
  std::optional<std::size_t> local_index(graph::NodeId id) const;
};

// Chunks with the same structure. members[0] is the representative: a result computed for it
// applies to each member through the member's local numbering (Partition::map_node).
struct ChunkGroup {
  support::Hash128 hash;
  std::vector<std::size_t> members;  // indices into Partition::chunks, ascending
};

struct Partition {
  std::vector<Chunk> chunks;       // non-empty chunks, by chunk index
  std::vector<ChunkGroup> groups;  // ordered by first member
  std::vector<std::size_t> group_of_chunk;  // parallel to `chunks`: the group holding each

  // The node of chunk `member` corresponding to node `rep_node` of the representative of the
  // member's group; nullopt if `rep_node` is not in the representative.
  std::optional<graph::NodeId> map_node(std::size_t member, graph::NodeId rep_node) const;
  // The same for boundary inputs: the member's producer that plays the role of the
  // representative's boundary input `rep_producer`.
  std::optional<graph::NodeId> map_input(std::size_t member, graph::NodeId rep_producer) const;
};

// Splits `g` at its breaks and groups identical chunks. Empty chunks (adjacent breaks, or a
// break at the end) are left out. Deterministic.
Partition partition(const graph::Graph& g);

}  // namespace kiln::compiler
