// The search's candidates phase: every executable e-node of a group's e-graph (a Kernel or a
// Gemm or QGemm row) with the e-classes it reads and computes, and how to size it at given dims.
#pragma once

#include <limits>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "compiler/class_values.hpp"
#include "compiler/egraph_view.hpp"
#include "compiler/measure.hpp"
#include "engine/extract.hpp"
#include "graph/body.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

struct CandidateInfo {
  engine::ENode node;
  std::variant<graph::Body, runtime::LibraryCall> op;
  std::vector<engine::Value> inputs;  // e-classes by slot (a ConsumedBuffer as its buffer)
  engine::Value output = 0;           // the e-class it computes
  // The output overwrites its aliased input's buffer (the input was a ConsumedBuffer: the
  // rules proved nothing else reads it); otherwise an aliased input is copied first.
  bool in_place = false;
  std::string what;  // for reports: `c12 (Add) as kernel ...`
  std::string how;   // "kernel", "kernel in place", "gemm", "quantized gemm"
  bool rejected = false;
  std::string why;   // the check that rejected it
  double cost = std::numeric_limits<double>::infinity();
  bool measured = false;
  // The cost model's estimate, its inputs' excluded (rank_candidates.hpp); pruned: ranked out
  // before checking (then also `rejected`, with the reason in `why`, but not a rejection).
  double estimate = std::numeric_limits<double>::infinity();
  bool pruned = false;
};

// Every live Kernel, Gemm and QGemm row, in row order. A row whose operands cannot be read (a Gemm
// dtype that is not a dtype) comes back rejected with the reason.
// `subsumed_too`: also the subsumed rows (for judging the rules that made them).
std::vector<CandidateInfo> collect_candidates(const EGraphView& view, bool subsumed_too = false);
// The one-op Kernels (rules/hlir.egg's `one-op-kernel`) of `classes` that a rule subsumed: fusion
// subsumes a consumer's Kernel once its producer is inlined, so when every fused form of an
// e-class fails its check, its one-op Kernel is what remains. (In-place Kernels, which rules
// subsume for being unsafe, are never one-op Kernels.)
// The e-classes with a candidate that failed its check and none that passed (candidates the
// cost model ranked out count as neither).
std::set<engine::Value> classes_without_checked(const std::vector<CandidateInfo>& candidates);
std::vector<CandidateInfo> subsumed_one_op_kernels(const EGraphView& view,
                                                   const std::set<engine::Value>& classes);

// The candidate sized at `dims`: its buffers are the input e-classes' whole buffers. A reason
// (in `why`) instead when it cannot run there: an input e-class without a known shape, a
// library call reading past its operand's buffer, an output size that is not the e-class's,
// an unbound dim.
struct Sized {
  std::optional<Candidate> candidate;
  std::string why;
};
Sized size_candidate(const CandidateInfo& info, ClassValues& values, const graph::DimValues& dims);

}  // namespace kiln::compiler
