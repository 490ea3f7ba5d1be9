// Agreement with the reference interpreter; see compare.hpp.
#include "graph/compare.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kiln::graph {

double reference_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F64: return 1e-9;
    case DType::F32: return 2e-4;
    case DType::F16: case DType::BF16: return 2e-2;
    default: return 0.0;
  }
}

std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     DType dtype, std::optional<double> tolerance) {
  if (got.size() != want.size()) {
    return "has " + std::to_string(got.size()) + " elements, expected " +
           std::to_string(want.size());
  }
  double scale = 1.0;
  for (double w : want) {
    if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
  }
  const double limit = tolerance.value_or(reference_tolerance(dtype)) * scale;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = want[i], g = got[i];
    const bool same = std::isnan(w) ? std::isnan(g)
                      : std::isinf(w) ? g == w
                                      : std::fabs(g - w) <= limit;
    if (!same) {
      std::ostringstream out;
      out << "element " << i << " is " << g << ", the interpreter says " << w;
      return out.str();
    }
  }
  return "";
}

}  // namespace kiln::graph
