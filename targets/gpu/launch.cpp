// Group counts at launch; see launch.hpp.
#include "targets/gpu/launch.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"

namespace kiln::targets::gpu {

GroupCount::GroupCount(graph::Expr groups, std::vector<std::string> dims, long long max_groups)
    : groups_(std::move(groups)), dims_(std::move(dims)), max_groups_(max_groups) {}

long long GroupCount::operator()(const std::vector<long long>& values) const {
  KILN_ASSERT(values.size() == dims_.size(), "gpu launch: wrong number of dims");
  if (last_ >= 0 && values == last_values_) return last_;
  graph::DimValues named;
  for (std::size_t i = 0; i < values.size(); ++i) named[dims_[i]] = values[i];
  last_ = std::clamp<long long>(graph::evaluate(groups_, named), 1, max_groups_);
  last_values_ = values;
  return last_;
}

}  // namespace kiln::targets::gpu
