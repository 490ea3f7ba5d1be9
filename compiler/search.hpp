// The search for one group (DESIGN §5, §7): encode the representative chunk into an e-graph,
// grow it with the rule files, check and measure every executable e-node, extract the
// cheapest program and check it end to end.
//
// Steps:
//  1. Encode. The chunk graph (chunk_graph.hpp) becomes terms of rules/hlir.egg in a fresh
//     dsl::Session with the graph sorts; its outputs are gathered in a `Program` term.
//  2. Saturate. The rule files run in order (hlir, dtype_prop, kernel_rewrite, matmul
//     flattening, the target's rules, consumed_buffer, any --rules files), then the graph's
//     terms, then rules/pipeline.egg (the staged schedule), under the options' limits.
//  3. Candidates. Every Kernel and Gemm e-node is a candidate: the target prepares them in one
//     batch. Where the e-classes of a candidate's inputs and output hold an original node, it
//     is run on the reference inputs and compared with the interpreter's values; a mismatch (or
//     NaN) rejects it, and the report names the rules that put e-nodes into that e-class.
//  4. Costs. Each accepted candidate costs its measured time (Measurer: cached on disk), up to
//     the measurement budget; beyond it, a roofline estimate. Input, a contiguous Output and
//     the structural terms cost nothing; an HLIR op node cannot be executed (infinite cost).
//  5. Extract. DAG-aware (engine::DagExtractor: a kernel used twice is paid once).
//  6. Check end to end: the chosen program runs on the target against the interpreter; then it
//     is timed against the one-op-per-kernel program, which replaces it only when clearly
//     faster (by 30%: end-to-end times on a busy machine are noisy).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/chunk_graph.hpp"
#include "compiler/measure.hpp"
#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/runner.hpp"
#include "graph/body.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

struct SearchOptions {
  std::vector<std::filesystem::path> rule_files;  // in load order, before the graph's terms
  std::filesystem::path pipeline;                  // the schedule, run after the terms
  graph::DimValues dims;                           // representative values of symbolic dims
  engine::RunLimits limits;                        // saturation limits
  std::size_t max_measurements = 1000;
  unsigned seed = 1;
  bool verbose = false;  // progress lines on stderr
};

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
  std::string how;                    // "one-op kernel", "gemm", "kernel"
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
  std::vector<Rejection> rejected;
  std::string stop_reason;          // of the saturation
  double saturation_seconds = 0, measure_seconds = 0, extract_seconds = 0;
  double program_seconds = 0;       // the chosen program, timed end to end
  double one_op_seconds = 0;        // the one-op-per-kernel program, timed end to end
  bool kept_one_op = false;         // the one-op program was faster and was kept
  std::string rule_stats;           // per-rule matches and times
};

struct GroupProgram {
  std::vector<GroupStep> steps;                 // in execution order
  std::map<graph::NodeId, Ref> outputs;         // chunk-graph Output node -> its value
  GroupReport report;
};

// Steps 1-2 alone: registers the graph sorts in `session`, loads the rule files and the chunk's
// terms (`$tN` for node N, `$program` for the outputs) and, with `saturate`, runs the pipeline.
GraphSorts encode_group(dsl::Session& session, const ChunkGraph& chunk,
                        const SearchOptions& options, bool saturate);

// Searches the best program for `chunk` (a chunk graph) on `target`.
GroupProgram search_group(const ChunkGraph& chunk, runtime::Target& target, Measurer& measurer,
                          const SearchOptions& options);

// The one-op-per-kernel program of a chunk graph (no search): the baseline, and the fallback.
GroupProgram one_op_program(const ChunkGraph& chunk);

}  // namespace kiln::compiler
