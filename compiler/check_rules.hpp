// `kiln check-rules`: each rule judged by what it did to real graphs (DESIGN §7). The example
// graphs are saturated with the rule files; every e-node a rule created is a union the rule
// claimed (the e-node computes its e-class's value). For a sample of them per rule, both sides
// are evaluated on random inputs at small dims: the e-node over its inputs' reference values
// (an HLIR op by the interpreter, a Kernel or Gemm on the reference target), and the e-class by
// another term (the original node, or another e-node). A rule whose unions disagree is named,
// with an example of both terms.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "compiler/search.hpp"
#include "graph/hlir.hpp"

namespace kiln::compiler {

struct RuleCheck {
  std::size_t sampled = 0;   // unions evaluated on both sides
  std::size_t failures = 0;  // ... that disagreed
  std::size_t skipped = 0;   // unions with no other side to compare (a class the rule made)
  std::string example;       // the first failure: both terms and the difference
};

struct CheckRulesOptions {
  SearchOptions search;            // rule files, pipeline, dims (capped for checks), limits
  std::size_t samples_per_rule = 32;  // per group
};

// Judges the rules on every group of `g`; adds to `results` (by rule name).
void check_rules(const graph::Graph& g, const CheckRulesOptions& options,
                 std::map<std::string, RuleCheck>& results);

}  // namespace kiln::compiler
