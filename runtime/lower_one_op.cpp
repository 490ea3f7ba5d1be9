// One kernel per HLIR compute node; see lower_one_op.hpp.
#include "runtime/lower_one_op.hpp"

#include <string>
#include <vector>

#include "graph/body_lower.hpp"
#include "graph/view.hpp"

namespace kiln::runtime {

Llir lower_one_op(const graph::Graph& g) {
  using graph::Op;
  graph::validate(g);
  Llir llir;
  std::vector<ValueId> value_of(g.size(), 0);
  for (graph::NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    const std::vector<graph::Graph::Input> ins = g.inputs(id);
    const std::string label = "%" + std::to_string(id) + " " + std::string(graph::op_name(n.op));
    if (n.op == Op::Input) {
      value_of[id] = llir.add_input(n.name, n.dtype, n.shape, n.persistent);
      continue;
    }
    if (n.op == Op::Output) {
      const graph::Node& producer = g.node(ins[0].producer);
      if (ins[0].edge->view == graph::View::contiguous(producer.shape)) {
        value_of[id] = value_of[ins[0].producer];
      } else {
        value_of[id] = llir.add_kernel(graph::one_op_body(g, id), {value_of[ins[0].producer]},
                                       n.shape, label + " " + n.name);
      }
      llir.add_output(n.name, value_of[id]);
      continue;
    }
    std::vector<ValueId> inputs;
    for (const graph::Graph::Input& in : ins) inputs.push_back(value_of[in.producer]);
    value_of[id] = llir.add_kernel(graph::one_op_body(g, id), std::move(inputs), n.shape, label);
  }
  return llir;
}

}  // namespace kiln::runtime
