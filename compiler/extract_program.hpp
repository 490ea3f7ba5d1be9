// The search's extract phase (DESIGN §7): the cheapest program DAG (engine::DagExtractor: a
// kernel used twice is paid once) over the accepted candidates, as steps. Input, ConsumedBuffer,
// a contiguous Output of its producer and the structural terms (lists, operands, dtypes, the
// program) cost nothing; rejected or banned candidates and bare HLIR ops cannot be chosen.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compiler/candidates.hpp"
#include "compiler/check_candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/egraph_view.hpp"
#include "compiler/group_program.hpp"

namespace kiln::compiler {

struct ExtractInputs {
  const EGraphView* view = nullptr;
  const std::vector<CandidateInfo>* candidates = nullptr;
  ClassValues* values = nullptr;
  std::map<engine::Value, graph::NodeId> node_of_class;  // original nodes
  std::vector<graph::NodeId> outputs;                    // chunk-graph Output nodes, in order
  std::vector<engine::Value> output_classes;             // their e-classes
  engine::Value root = 0;                                // the $program term
  RulesOf rules_of;
};

// The chosen program, or nullopt when no finite-cost program exists. `banned`: candidate
// indices that must not be chosen (a failed end-to-end check). The steps record the index of
// their candidate in `chosen` (same order as the steps).
std::optional<GroupProgram> extract_program(const ExtractInputs& in,
                                            const std::set<std::size_t>& banned,
                                            std::vector<std::size_t>* chosen);

}  // namespace kiln::compiler
