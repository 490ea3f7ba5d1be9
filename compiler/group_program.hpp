// A group's program as the search builds it: steps over the chunk graph's inputs, with the
// search's report. Shared by the search phases, lowering and the command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/body.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/hlir.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

// A value the group program reads or makes: a chunk-graph Input node, or an earlier step.
struct Ref {
  enum class Kind : std::uint8_t { Input, Step } kind = Kind::Input;
  std::size_t index = 0;  // Input: the chunk-graph node id; Step: the step index
  friend bool operator==(const Ref&, const Ref&) = default;
};

struct GroupStep {
  std::variant<graph::Body, runtime::LibraryCall> op;
  std::vector<Ref> inputs;
  graph::DType dtype = graph::DType::F32;
  std::vector<graph::Expr> shape;
  std::optional<graph::NodeId> node;  // the chunk-graph node it computes, when it is one
  std::string how;  // "Add" (one-op), "kernel", "kernel in place", "gemm", "quantized gemm"
  // The output overwrites its aliased input's buffer (Body::output_aliases) instead of a copy
  // of it: extraction chose the in-place form the rules allowed (consumed_buffer.egg).
  bool in_place = false;
  std::vector<std::string> rules;     // rules that put e-nodes in its e-class
  double seconds = 0.0;               // measured (or estimated) time
  bool measured = false;
};

struct Rejection {
  std::string what;                // the candidate
  std::string why;                 // the check that failed
  std::vector<std::string> rules;  // suspects: rules that put e-nodes into its e-class
};

struct GroupReport {
  std::size_t eclasses = 0, enodes = 0, candidates = 0, measured = 0, cache_hits = 0;
  std::size_t checked = 0;
  std::size_t pruned = 0;  // ranked out by the cost model before checking (rank_candidates)
  // One-op Kernels that fusion had subsumed, restored as candidates of e-classes whose every
  // candidate failed its check.
  std::size_t fallbacks = 0;
  // The last bound on measuring (the cheapest program over the candidates timed before the
  // last batch; infinite: none), and the candidates timed by one run for being slower.
  double bound_seconds = 0;
  std::size_t over_bound = 0;
  std::vector<Rejection> rejected;
  std::string stop_reason;          // of the saturation
  double saturation_seconds = 0, check_seconds = 0, measure_seconds = 0, extract_seconds = 0;
  double program_seconds = 0;       // the chosen program, timed end to end
  double one_op_seconds = 0;        // the one-op-per-kernel program, timed end to end
  bool kept_one_op = false;         // the one-op program was faster (or the only checked one)
  std::size_t searched_steps = 0;   // steps of the program the rules gave (0: none checked)
  std::size_t extractions = 0;      // 1, or more when a chosen program failed its check
  std::string rule_stats;           // per-rule matches and times
  // Read from the program cache (compiler/group_cache.hpp): no search ran, so the counts and
  // times of its phases are zero; the rest describes the search that chose the program.
  bool from_cache = false;
};

struct GroupProgram {
  std::vector<GroupStep> steps;                 // in execution order
  std::map<graph::NodeId, Ref> outputs;         // chunk-graph Output node -> its value
  GroupReport report;
};

}  // namespace kiln::compiler
