// The check phase; see check_candidates.hpp.
#include "compiler/check_candidates.hpp"

#include <algorithm>
#include <iostream>

#include "graph/body_bounds.hpp"
#include "graph/compare.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

void reject(CandidateInfo& c, std::string why, const RulesOf& rules_of, GroupReport& report,
            bool verbose) {
  c.rejected = true;
  c.why = std::move(why);
  report.rejected.push_back({c.what, c.why, rules_of(c.output)});
  if (verbose) {
    std::string rules;
    for (const std::string& r : report.rejected.back().rules) rules += (rules.empty() ? "" : ", ") + r;
    std::cerr << "  rejected " << c.what << ": " << c.why << " (rules: " << rules << ")\n";
  }
}

namespace {

graph::Expr numel(const std::vector<graph::Expr>& shape) {
  graph::Expr n(1);
  for (const graph::Expr& d : shape) n = n * d;
  return n;
}

// "" when every access of the candidate is proven inside its buffers (graph/body_bounds) for
// all dims, or else for every binding up to the dims of the compile (a model's own views may
// need that: KV-cache reads of pos + seq rows are valid only while they fit the cache); else
// why not.
std::string prove_in_bounds(const CandidateInfo& c, ClassValues& values,
                            const graph::DimValues& real_dims) {
  std::vector<graph::Expr> ins;
  for (engine::Value v : c.inputs) ins.push_back(numel(values.get(v)->shape));
  const graph::Expr out = numel(values.get(c.output)->shape);
  graph::DimRanges up_to_compile;
  for (const auto& [dim, v] : real_dims) up_to_compile[dim] = graph::Interval{std::min<std::int64_t>(1, v), v};
  if (const graph::Body* body = std::get_if<graph::Body>(&c.op)) {
    const std::string why = graph::prove_in_bounds(*body, ins, out);
    if (why.empty() || graph::prove_in_bounds(*body, ins, out, up_to_compile).empty()) return "";
    return why;
  }
  // A library call reads strided operands whose symbolic extents often depend on positions
  // (KV caches): size_candidate checks them against their buffers at the check and real dims.
  return "";
}

// "" when the target says it can run the candidate: its library op is one of the target's, and
// a kernel's buffers have dtypes the target's kernels handle; else why not. A target without a
// library op (OpenCL has no gemm) then drops such candidates here, before sizing and preparing.
std::string unsupported_by(const runtime::Capabilities& can, const CandidateInfo& c) {
  auto has = [](const auto& list, const auto& x) {
    return std::find(list.begin(), list.end(), x) != list.end();
  };
  if (const auto* call = std::get_if<runtime::LibraryCall>(&c.op)) {
    return has(can.library_ops, call->op) ? "" : "the target has no library op '" + call->op + "'";
  }
  const graph::Body& body = std::get<graph::Body>(c.op);
  std::vector<graph::DType> dtypes = body.inputs();
  dtypes.push_back(body.dtype());
  for (graph::DType t : dtypes) {
    if (!has(can.dtypes, t)) {
      return "the target's kernels do not handle " + std::string(graph::dtype_name(t));
    }
  }
  return "";
}

}  // namespace

void check_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                      Measurer& measurer, const graph::DimValues& real_dims,
                      const RulesOf& rules_of, GroupReport& report, bool verbose) {
  const graph::DimValues& dims = values.dims();
  // Size every candidate at the check dims; prepare the survivors in one batch.
  std::vector<Candidate> batch;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    CandidateInfo& c = candidates[i];
    if (c.rejected) {
      if (!c.pruned) report.rejected.push_back({c.what, c.why, rules_of(c.output)});
      continue;
    }
    if (std::string why = unsupported_by(measurer.capabilities(), c); !why.empty()) {
      reject(c, why, rules_of, report, verbose);
      continue;
    }
    Sized s = size_candidate(c, values, dims);
    if (!s.candidate) {
      reject(c, s.why, rules_of, report, verbose);
      continue;
    }
    if (std::string why = prove_in_bounds(c, values, real_dims); !why.empty()) {
      reject(c, "not proven in bounds: " + why, rules_of, report, verbose);
      continue;
    }
    batch.push_back(std::move(*s.candidate));
    index.push_back(i);
  }
  const std::vector<std::string> errors = measurer.prepare(batch, dims);
  // The survivors run in one worker process (compiler/sandbox): a crash or hang rejects only
  // its candidate, and the batch pays for one fork.
  std::vector<Candidate> runnable;
  std::vector<std::vector<std::vector<double>>> inputs;
  std::vector<std::size_t> runnable_index;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    CandidateInfo& c = candidates[index[b]];
    if (!errors[b].empty()) {
      reject(c, "the target rejected it: " + errors[b], rules_of, report, verbose);
      continue;
    }
    std::vector<std::vector<double>> in;
    for (engine::Value v : c.inputs) in.push_back(values.get(v)->data);
    runnable.push_back(batch[b]);
    inputs.push_back(std::move(in));
    runnable_index.push_back(index[b]);
  }
  const std::vector<Measurer::RunResult> got = measurer.try_run_all(runnable, inputs, dims);
  for (std::size_t r = 0; r < runnable.size(); ++r) {
    CandidateInfo& c = candidates[runnable_index[r]];
    const ClassValue& want = *values.get(c.output);
    // A combine of partial states completes the reductions that made them.
    const std::string why =
        got[r].ok() ? graph::mismatch(got[r].output, want.data,
                                      graph::tolerance(want.dtype,
                                                       reduction_length(runnable[r], dims) *
                                                           values.upstream_reduction(c.inputs)),
                                      want.spread)
                    : "it failed to run: " + got[r].failure;
    ++report.checked;
    if (!why.empty()) reject(c, why + " (reference: " + want.term + ")", rules_of, report, verbose);
  }
}

}  // namespace kiln::compiler
