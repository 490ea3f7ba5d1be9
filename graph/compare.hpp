// Agreement with the reference interpreter: the one rule every check of a target's results uses
// (the compiler's candidate and program checks, the measurement harness, `kiln run --check`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/dtype.hpp"

namespace kiln::graph {

// The relative tolerance for a dtype: f64 1e-9, f32 2e-4, f16 and bf16 2e-2 (summation order
// and fused operations change rounding), integers and bool 0 (exact).
double reference_tolerance(DType dtype);

// "" when `got` agrees with `want`: each element within tolerance x scale, the scale being the
// largest finite |want| (at least 1); NaN exactly where `want` has NaN; infinities equal. Else
// a message naming the first element that differs. `tolerance` overrides the dtype's.
std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     DType dtype, std::optional<double> tolerance = std::nullopt);

}  // namespace kiln::graph
