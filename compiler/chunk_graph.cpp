// Chunks as standalone graphs; see chunk_graph.hpp.
#include "compiler/chunk_graph.hpp"

#include <string>

namespace kiln::compiler {

using graph::Graph;
using graph::Node;
using graph::NodeId;
using graph::Op;

ChunkGraph make_chunk_graph(const Graph& g, const Chunk& chunk) {
  ChunkGraph out;
  std::map<NodeId, NodeId> boundary;  // boundary producer -> its `in.k` node
  for (std::size_t k = 0; k < chunk.inputs.size(); ++k) {
    const Node& producer = g.node(chunk.inputs[k]);
    Node n;
    n.op = Op::Input;
    n.dtype = producer.dtype;
    n.shape = producer.shape;
    n.name = "in." + std::to_string(k);
    NodeId id = out.graph.add_node(std::move(n));
    out.original.push_back(chunk.inputs[k]);
    out.input_nodes.push_back(id);
    boundary[chunk.inputs[k]] = id;
  }
  for (NodeId original : chunk.nodes) {
    NodeId id = out.graph.add_node(g.node(original));
    out.original.push_back(original);
    out.sub_of[original] = id;
  }
  for (NodeId original : chunk.nodes) {
    for (const Graph::Input& in : g.inputs(original)) {
      auto inside = out.sub_of.find(in.producer);
      NodeId from = inside != out.sub_of.end() ? inside->second : boundary.at(in.producer);
      out.graph.add_edge(from, out.sub_of.at(original), in.edge->slot, in.edge->view);
    }
  }
  for (std::size_t k = 0; k < chunk.outputs.size(); ++k) {
    const Node& produced = g.node(chunk.outputs[k]);
    Node n;
    n.op = Op::Output;
    n.dtype = produced.dtype;
    n.shape = produced.shape;
    n.name = "out." + std::to_string(k);
    NodeId id = out.graph.add_node(std::move(n));
    out.graph.add_edge(out.sub_of.at(chunk.outputs[k]), id, 0,
                       graph::View::contiguous(produced.shape));
    out.original.push_back(chunk.outputs[k]);
    out.output_nodes.push_back(id);
  }
  return out;
}

}  // namespace kiln::compiler
