// The search for one group (DESIGN §5, §7), as named phases in order; each phase is one file:
//
//   encode     the chunk graph becomes terms of rules/hlir.egg in a fresh e-graph, after the
//              rule files (compile.hpp says which, in which order)            (search.cpp)
//   saturate   rules/pipeline.egg's staged schedule grows it, under the limits (search.cpp)
//   values     the reference value of every e-class at the small check dims   (class_values)
//   candidates every Kernel and Gemm e-node, sized from its e-classes           (candidates)
//   rank       the cost model's estimate of each; per e-class only the best few
//              and the baseline (library calls, the one-op kernel) go on     (rank_candidates)
//   check      each candidate run on its inputs' reference values and compared
//              with its e-class's (in the sandbox); the rest are rejected      (check_candidates)
//   measure    the survivors timed at the real dims (sandboxed, cached), each
//              stopped after one run once slower than a whole program      (measure_candidates)
//   extract    the cheapest program DAG over the survivors                     (extract_program)
//   verify     the whole program checked against the interpreter; a program
//              that fails is reported, its suspect steps banned and the
//              extraction redone; then timed against the one-op program        (verify_program)
//
// Nothing but the absence of any checked program fails the search: a candidate that is wrong,
// crashes or cannot be sized is rejected with the reason and the rules behind its e-class, and
// the one-op-per-kernel program (itself checked) is the fallback.
#pragma once

#include <optional>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/chunk_graph.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"
#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/runner.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

struct SearchOptions {
  std::vector<std::filesystem::path> rule_files;  // in load order, before the graph's terms
  std::filesystem::path pipeline;                  // the schedule, run after the terms
  std::filesystem::path schedules;  // opt-in: rules/schedule/pipeline.egg, run after pipeline
  graph::DimValues dims;                           // representative values of symbolic dims
  std::int64_t check_dim_cap = 13;                 // checks bind every dim to at most this
  engine::RunLimits limits;                        // saturation limits
  std::size_t max_measurements = 1000;
  // Candidates of an e-class checked and measured besides its baseline (library calls and the
  // one-op kernel), best first by the cost model (compiler/rank_candidates.hpp); 0: all.
  std::size_t measure_top = 3;
  unsigned seed = 1;
  bool verbose = false;  // progress lines on stderr
  // Read a group's program from the program cache when it holds one (compiler/group_cache.hpp);
  // false searches anyway (the result is still stored).
  bool program_cache = true;
};

// Encode (and, with `saturate`, saturate): registers the graph sorts in `session`, loads the
// rule files and the chunk's terms (`$tN` for node N, `$program` for the outputs) and runs the
// pipeline. Returns the sorts.
GraphSorts encode_group(dsl::Session& session, const ChunkGraph& chunk,
                        const SearchOptions& options, bool saturate);

// Searches the best checked program for `chunk` (a chunk graph) on `target`.
GroupProgram search_group(const ChunkGraph& chunk, runtime::Target& target, Measurer& measurer,
                          const SearchOptions& options);

// The one-op-per-kernel program of a chunk graph (no search): the baseline, and the fallback;
// nullopt when some node has no one-op kernel (a CustomOp, which only library ops implement).
std::optional<GroupProgram> one_op_program(const ChunkGraph& chunk);

}  // namespace kiln::compiler
