// The search's measure phase (DESIGN §7): each checked candidate costs its median time at the
// real dims (Measurer: sandboxed, cached on disk), up to the measurement budget; beyond it, a
// roofline estimate. A candidate whose output starts as a copy of an input (a Scatter that is
// not in place) also pays for that copy, so extraction can weigh it against the in-place form.
//
// In batches: library calls, other kernels, then kernels that fold products. Once the candidates
// timed so far make a whole program, a candidate is timed only until it shows itself slower
// than that program (one run), since no program using it can beat it. A naive fused product
// that takes seconds a run then costs one run instead of two, and a hang a few seconds instead
// of the sandbox's limit.
#pragma once

#include <functional>
#include <vector>

#include "compiler/candidates.hpp"
#include "compiler/check_candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"

namespace kiln::compiler {

// `program_seconds`: the cost of the cheapest program over the candidates timed so far
// (infinite when there is none).
void measure_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                        Measurer& measurer, const graph::DimValues& dims, std::size_t budget,
                        const std::function<double()>& program_seconds, const RulesOf& rules_of,
                        GroupReport& report, bool verbose);

}  // namespace kiln::compiler
