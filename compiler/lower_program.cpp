// Group programs as LLIR; see lower_program.hpp.
#include "compiler/lower_program.hpp"

#include <string>

namespace kiln::compiler {

std::map<graph::NodeId, runtime::ValueId> instantiate(
    const GroupProgram& program, runtime::Llir& llir,
    const std::function<runtime::ValueId(graph::NodeId)>& input_value,
    const std::function<std::string(const GroupStep&)>& label) {
  std::vector<runtime::ValueId> step_value;
  auto resolve = [&](const Ref& r) {
    return r.kind == Ref::Kind::Input ? input_value(r.index) : step_value.at(r.index);
  };
  for (const GroupStep& s : program.steps) {
    std::vector<runtime::ValueId> inputs;
    for (const Ref& r : s.inputs) inputs.push_back(resolve(r));
    if (const graph::Body* body = std::get_if<graph::Body>(&s.op)) {
      step_value.push_back(llir.add_kernel(*body, inputs, s.shape, label(s), s.in_place));
    } else {
      step_value.push_back(llir.add_call(std::get<runtime::LibraryCall>(s.op), inputs, s.dtype,
                                         s.shape, label(s)));
    }
  }
  std::map<graph::NodeId, runtime::ValueId> outputs;
  for (const auto& [node, ref] : program.outputs) outputs[node] = resolve(ref);
  return outputs;
}

runtime::Llir standalone_llir(const GroupProgram& program, const graph::Graph& g) {
  runtime::Llir llir;
  std::map<graph::NodeId, runtime::ValueId> inputs;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == graph::Op::Input) inputs[id] = llir.add_input(n.name, n.dtype, n.shape, n.persistent);
  }
  auto outputs = instantiate(
      program, llir, [&](graph::NodeId id) { return inputs.at(id); },
      [](const GroupStep& s) {
        return (s.node ? "%" + std::to_string(*s.node) + " " : std::string()) + s.how;
      });
  for (const auto& [node, value] : outputs) llir.add_output(g.node(node).name, value);
  return llir;
}

}  // namespace kiln::compiler
