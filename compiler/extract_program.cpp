// The extract phase; see extract_program.hpp.
#include "compiler/extract_program.hpp"

#include <cmath>
#include <functional>
#include <limits>

#include "engine/extract.hpp"
#include "graph/view.hpp"

namespace kiln::compiler {

using engine::ENode;
using engine::FunctionId;
using engine::RowId;
using engine::Value;

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

std::optional<GroupProgram> extract_program(const ExtractInputs& in,
                                            const std::set<std::size_t>& banned,
                                            std::vector<std::size_t>* chosen) {
  const EGraphView& view = *in.view;
  const engine::EGraph& egraph = view.egraph();
  const std::vector<CandidateInfo>& candidates = *in.candidates;
  std::map<std::pair<FunctionId, RowId>, std::size_t> index_of;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    index_of[{candidates[i].node.function, candidates[i].node.row}] = i;
  }
  auto usable = [&](std::size_t i) { return !candidates[i].rejected && !banned.count(i); };

  engine::DagExtractor extractor(egraph, [&](const engine::EGraph&, const ENode& node) {
    if (auto it = index_of.find({node.function, node.row}); it != index_of.end()) {
      return usable(it->second) ? candidates[it->second].cost : kInfinity;
    }
    if (view.is(node, "Kernel") || view.is(node, "Gemm") || view.is(node, "GemmBias") ||
        view.is(node, "QGemm")) {
      return kInfinity;
    }
    if (egraph.function(node.function).output != view.hlir_sort() || view.is(node, "Input") ||
        view.is(node, "ConsumedBuffer")) {
      return 0.0;
    }
    if (view.is(node, "Output")) {  // free when it is its producer's buffer as it stands
      const Value* row = view.row(node);
      const ClassValue* producer = in.values->get(row[0]);
      if (producer && view.sorts().view_sort->get(row[1]) == graph::View::contiguous(producer->shape)) {
        return 0.0;
      }
    }
    return kInfinity;
  }, /*subsumed_too=*/true);  // a subsumed Kernel costs its time only where it is a candidate
  auto result = extractor.extract(in.root);
  if (!result || !std::isfinite(result->cost)) return std::nullopt;

  GroupProgram program;
  std::map<Value, Ref> done;
  std::function<Ref(Value)> lower = [&](Value eclass) -> Ref {
    eclass = view.find(eclass);
    if (auto it = done.find(eclass); it != done.end()) return it->second;
    const ENode& node = result->choice.at(eclass);
    const Value* row = view.row(node);
    Ref ref;
    if (view.is(node, "Input")) {
      ref = Ref{Ref::Kind::Input, in.node_of_class.at(eclass)};
    } else if (view.is(node, "Output") || view.is(node, "ConsumedBuffer")) {
      ref = lower(row[0]);
    } else {
      const std::size_t i = index_of.at({node.function, node.row});
      const CandidateInfo& c = candidates[i];
      GroupStep s;
      s.op = c.op;
      for (Value input : c.inputs) s.inputs.push_back(lower(input));
      const ClassValue& value = *in.values->get(eclass);
      s.dtype = value.dtype;
      s.shape = value.shape;
      if (auto original = in.node_of_class.find(eclass); original != in.node_of_class.end()) {
        s.node = original->second;
      }
      s.how = c.how;
      s.in_place = c.in_place;
      s.rules = in.rules_of(eclass);
      s.seconds = c.cost;
      s.measured = c.measured;
      program.steps.push_back(std::move(s));
      if (chosen) chosen->push_back(i);
      ref = Ref{Ref::Kind::Step, program.steps.size() - 1};
    }
    done[eclass] = ref;
    return ref;
  };
  for (std::size_t k = 0; k < in.outputs.size(); ++k) {
    program.outputs[in.outputs[k]] = lower(in.output_classes[k]);
  }
  return program;
}

}  // namespace kiln::compiler
