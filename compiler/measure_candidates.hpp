// The search's measure phase (DESIGN §7): each checked candidate costs its median time at the
// real dims (Measurer: sandboxed, cached on disk), up to the measurement budget; beyond it, a
// roofline estimate. A candidate whose output starts as a copy of an input (a Scatter that is
// not in place) also pays for that copy, so extraction can weigh it against the in-place form.
#pragma once

#include <vector>

#include "compiler/candidates.hpp"
#include "compiler/check_candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"

namespace kiln::compiler {

void measure_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                        Measurer& measurer, const graph::DimValues& dims, std::size_t budget,
                        const RulesOf& rules_of, GroupReport& report, bool verbose);

}  // namespace kiln::compiler
