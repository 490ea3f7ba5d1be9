// Per-rule soundness checks; see check_rules.hpp.
#include "compiler/check_rules.hpp"

#include <set>
#include <sstream>

#include "compiler/candidates.hpp"
#include "compiler/chunk_graph.hpp"
#include "compiler/class_values.hpp"
#include "compiler/egraph_view.hpp"
#include "compiler/measure.hpp"
#include "compiler/partition.hpp"
#include "graph/compare.hpp"
#include "graph/interpret.hpp"
#include "graph/random_inputs.hpp"
#include "targets/registry.hpp"

namespace kiln::compiler {

namespace {

using engine::ENode;
using engine::Value;

// The most scalar operations one sampled Kernel may take on the reference target.
constexpr double kMaxInterpretedWork = 1 << 24;

// Both sides of one union: "" when they agree, else the difference.
std::string compare(const ClassValue& got, const ClassValue& want) {
  if (got.shape != want.shape) {
    std::string g, w;
    for (const graph::Expr& d : got.shape) g += (g.empty() ? "" : ", ") + graph::to_string(d);
    for (const graph::Expr& d : want.shape) w += (w.empty() ? "" : ", ") + graph::to_string(d);
    return "shape [" + g + "] vs [" + w + "]";
  }
  if (got.dtype != want.dtype) {
    return "dtype " + std::string(graph::dtype_name(got.dtype)) + " vs " +
           std::string(graph::dtype_name(want.dtype));
  }
  // One op at the check dims folds at most a few thousand elements (the dims are capped; the
  // constant ones are model widths).
  return graph::mismatch(got.data, want.data, want.dtype, 4096);
}

void check_group(const ChunkGraph& chunk, const CheckRulesOptions& options, Measurer& measurer,
                 std::map<std::string, RuleCheck>& results) {
  const graph::Graph& g = chunk.graph;
  const graph::DimValues dims = check_dims_of(options.search.dims, options.search.check_dim_cap);
  check_reference_fits(g, dims);
  std::ostringstream printed;
  dsl::Session session(printed);
  const GraphSorts sorts = encode_group(session, chunk, options.search, /*saturate=*/true);
  const EGraphView view(session.egraph(), sorts);
  const auto inputs = graph::random_inputs(g, dims, options.search.seed);
  const auto reference = graph::interpret_all(g, dims, inputs);
  ClassValues values(view, dims);
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const Value c = view.find(session.global("$t" + std::to_string(id))->value);
    const graph::Node& n = g.node(id);
    values.set(c, ClassValue{n.dtype, n.shape, reference[id], "%" + std::to_string(id)});
  }

  std::map<std::string, std::size_t> taken;  // samples per rule in this group
  std::size_t failures = 0;                   // in this group
  auto record = [&](const std::string& rule, const std::string& left, const ClassValue* right,
                    const std::string& why) {
    RuleCheck& r = results[rule];
    ++r.sampled;
    if (why.empty()) return;
    ++r.failures;
    ++failures;
    if (r.example.empty()) {
      r.example = left + " = " + (right ? right->term : std::string("?")) + ": " + why;
    }
  };

  // HLIR op e-nodes: the interpreter on both sides.
  const auto kernel = view.function("Kernel");
  const auto gemm = view.function("Gemm");
  const auto gemm_bias = view.function("GemmBias");
  const auto qgemm = view.function("QGemm");
  std::vector<ENode> executable;
  for (engine::FunctionId f = 0; f < session.egraph().num_functions(); ++f) {
    if (session.egraph().function(f).output != view.hlir_sort()) continue;
    const engine::Table& t = session.egraph().table(f);
    for (engine::RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r)) continue;
      const ENode node{f, r};
      const std::string rule = view.origin(node);
      if (rule.empty() || taken[rule] >= options.samples_per_rule) continue;
      if ((kernel && f == *kernel) || (gemm && f == *gemm) || (gemm_bias && f == *gemm_bias) ||
          (qgemm && f == *qgemm)) {
        executable.push_back(node);
        continue;
      }
      ++taken[rule];
      ClassValues::Evaluated left = values.evaluate(node);
      const std::optional<ClassValue> right = values.other_than(view.eclass(node), node);
      if (!right || (!left.value && left.why.rfind("input", 0) == 0) ||
          (!left.value && left.why.rfind("no interpreter", 0) == 0)) {
        ++results[rule].skipped;
        continue;
      }
      record(rule, values.describe(node), &*right,
             left.value ? compare(*left.value, *right) : "it cannot be evaluated: " + left.why);
    }
  }

  // A class some HLIR term of which disagrees with its value has a wrong rule behind it
  // already: a Kernel faithful to that term is not the culprit, so it is not judged there.
  std::map<Value, bool> consistent;
  auto is_consistent = [&](Value eclass) {
    const Value c = view.find(eclass);
    if (auto it = consistent.find(c); it != consistent.end()) return it->second;
    bool ok = true;
    const ClassValue* want = values.get(c);
    for (const ENode& node : view.nodes(c)) {
      if (!ok || !want || view.is(node, "Kernel") || view.is(node, "Gemm") ||
          view.is(node, "GemmBias") || view.is(node, "QGemm")) {
        continue;
      }
      ClassValues::Evaluated e = values.evaluate(node);
      if (e.value && !compare(*e.value, *want).empty()) ok = false;
    }
    return consistent[c] = ok;
  };

  // A Kernel made by a fusion rule (a ruleset fusion*) computes its producers' e-classes too,
  // from their one-op Kernels, and extends another rule's Kernel; a schedule rule's (schedule*)
  // transforms another rule's Kernel: where any rule of the group is wrong, either may inherit
  // that error. So the other Kernels are judged first (subsumed ones too: a wrong Kernel
  // extended by fusion is subsumed), and these only when nothing in the group failed.
  std::set<std::string> fusion_rules;
  for (const engine::Rule& rule : session.rules()) {
    if (rule.ruleset.rfind("fusion", 0) == 0 || rule.ruleset.rfind("schedule", 0) == 0) {
      fusion_rules.insert(rule.name);
    }
  }
  auto fused = [&](const CandidateInfo& c) { return fusion_rules.count(view.origin(c.node)) > 0; };

  // Kernel and Gemm e-nodes: their Body or call on the reference target.
  std::vector<CandidateInfo> all = collect_candidates(view, /*subsumed_too=*/true);
  std::vector<const CandidateInfo*> direct, fused_ones;
  for (const CandidateInfo& c : all) (fused(c) ? fused_ones : direct).push_back(&c);
  auto judge = [&](const std::vector<const CandidateInfo*>& list) {
  std::vector<Candidate> batch;
  std::vector<const CandidateInfo*> infos;
  for (const CandidateInfo* candidate : list) {
    const CandidateInfo& c = *candidate;
    const std::string rule = view.origin(c.node);
    if (rule.empty() || taken[rule] >= options.samples_per_rule) continue;
    if (!is_consistent(c.output)) {
      ++results[rule].skipped;
      continue;
    }
    ++taken[rule];
    if (c.rejected) {
      record(rule, values.describe(c.node), values.get(c.output), c.why);
      continue;
    }
    Sized s = size_candidate(c, values, dims);
    if (!s.candidate) {
      if (s.why.find("no reference value") != std::string::npos) ++results[rule].skipped;
      else record(rule, values.describe(c.node), values.get(c.output), s.why);
      continue;
    }
    // The reference target interprets the Body element by element: a broadcast product the
    // size of a model's vocabulary head would take minutes, and says nothing more than a small one.
    const double work = static_cast<double>(s.candidate->output_elements) *
                        static_cast<double>(std::max<std::int64_t>(1, reduction_length(*s.candidate, dims)));
    if (work > kMaxInterpretedWork) {
      ++results[rule].skipped;
      continue;
    }
    batch.push_back(*s.candidate);
    infos.push_back(&c);
  }
  const std::vector<std::string> errors = measurer.prepare(batch, dims);
  // The prepared ones run in one worker (one fork for the group's batch).
  std::vector<Candidate> runnable;
  std::vector<std::vector<std::vector<double>>> runnable_inputs;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const CandidateInfo& c = *infos[i];
    if (!errors[i].empty()) {
      record(view.origin(c.node), values.describe(c.node), values.get(c.output), errors[i]);
      continue;
    }
    std::vector<std::vector<double>> in;
    for (Value v : c.inputs) in.push_back(values.get(v)->data);
    runnable.push_back(batch[i]);
    runnable_inputs.push_back(std::move(in));
    index.push_back(i);
  }
  const std::vector<Measurer::RunResult> got = measurer.try_run_all(runnable, runnable_inputs, dims);
  for (std::size_t r = 0; r < runnable.size(); ++r) {
    const CandidateInfo& c = *infos[index[r]];
    const ClassValue* want = values.get(c.output);
    const std::string why =
        got[r].ok() ? graph::mismatch(got[r].output, want->data, want->dtype,
                                      reduction_length(runnable[r], dims) *
                                          values.upstream_reduction(c.inputs))
                    : "it failed to run: " + got[r].failure;
    record(view.origin(c.node), values.describe(c.node), want, why);
  }
  };
  judge(direct);
  if (failures == 0) {
    judge(fused_ones);
  } else {
    for (const CandidateInfo* c : fused_ones) {
      const std::string rule = view.origin(c->node);
      if (!rule.empty()) ++results[rule].skipped;
    }
  }
}

}  // namespace

void check_rules(const graph::Graph& g, const CheckRulesOptions& options,
                 std::map<std::string, RuleCheck>& results) {
  graph::validate(g);
  std::unique_ptr<runtime::Target> target = targets::make_target("reference");
  Measurer measurer(*target);
  const Partition partition = compiler::partition(g);
  for (const ChunkGroup& group : partition.groups) {
    const ChunkGraph chunk = make_chunk_graph(g, partition.chunks[group.members[0]]);
    check_group(chunk, options, measurer, results);
  }
}

}  // namespace kiln::compiler
