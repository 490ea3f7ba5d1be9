// The search's check phase (DESIGN §7): a candidate counts only once it agrees with the
// reference value of its e-class (class_values.hpp) at the small check dims. Before running,
// its buffers are sized from the e-classes' shapes (a wrong size, dtype or library extent
// rejects it) and every load and store of a Body is proven inside its buffer (graph/body_bounds:
// for all dims, or else for all up to the compile's); then the target prepares every candidate in one batch; then each runs on the
// reference values of its inputs (in the measurement sandbox) and is compared element by
// element. A rejection names the check and the rules that put e-nodes into the e-class.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"

namespace kiln::compiler {

using RulesOf = std::function<std::vector<std::string>(engine::Value eclass)>;

// Marks candidates rejected (with `why`) and records each rejection in `report`.
void check_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                      Measurer& measurer, const graph::DimValues& real_dims,
                      const RulesOf& rules_of, GroupReport& report, bool verbose);

// Rejects one candidate: sets its reason and adds it to the report.
void reject(CandidateInfo& c, std::string why, const RulesOf& rules_of, GroupReport& report,
            bool verbose);

}  // namespace kiln::compiler
