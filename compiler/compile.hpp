// The compiler (DESIGN §1): a model graph in, a checked program (LLIR) out.
//
//   partition (chunks at graph breaks, groups of identical chunks)
//   -> per group: its program from the program cache (group_cache.hpp), else search_group on
//      its representative chunk (search.hpp), then stored there
//   -> per chunk, in order: the group's program instantiated as LLIR steps, its boundary inputs
//      bound to the values earlier chunks produced, its weights to its own inputs.
//
// Rule files, in load order: rules_dir/hlir.egg (the declarations every file may use); every
// other *.egg under rules_dir, at any depth, in path order (files named pipeline.egg
// excepted); the target's rule files; `extra_rules` (a user's --rules); then the graph's terms;
// then rules_dir/pipeline.egg, the staged schedule, and with `schedules` the opt-in layer
// rules_dir/schedule/pipeline.egg. Adding a rule file is dropping it into rules/ (or a
// target's rules/) and naming its ruleset in one line of pipeline.egg.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "compiler/measure.hpp"
#include "compiler/search.hpp"
#include "graph/hlir.hpp"
#include "runtime/llir.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

struct CompileOptions {
  std::filesystem::path rules_dir;                 // empty: default_rules_dir()
  std::vector<std::filesystem::path> extra_rules;  // loaded after the built-in files
  SearchOptions search;                            // dims, limits, budget, verbosity
  // Also run rules_dir/schedule/pipeline.egg: tiled, reordered and split kernels as candidates
  // (the cost model keeps the few promising ones of each e-class: SearchOptions::measure_top).
  bool schedules = true;
};

struct GroupSummary {
  std::vector<std::size_t> members;  // chunk indices
  std::size_t nodes = 0;             // HLIR nodes of the representative
  GroupProgram program;              // steps and report
};

struct CompiledProgram {
  runtime::Llir llir;
  std::vector<GroupSummary> groups;
  double seconds = 0.0;  // whole compile
};

// The rule folder: $KILN_RULES_DIR, else the source tree's rules/ (fixed at build time).
std::filesystem::path default_rules_dir();

// The rule files a compile for `target` loads, in order (see above).
std::vector<std::filesystem::path> rule_files(const CompileOptions& options,
                                              const runtime::Target& target);

CompiledProgram compile(const graph::Graph& g, runtime::Target& target, Measurer& measurer,
                        const CompileOptions& options);

}  // namespace kiln::compiler
