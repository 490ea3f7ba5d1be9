// How many work-groups a GPU kernel launches for its dims: group_count (schedule.hpp)
// evaluated at the launch's dims, capped (kernels stride) and at least 1. The last dims and
// their count are kept, so that a plan launching a kernel with the same dims run after run
// evaluates nothing and allocates nothing.
#pragma once

#include <string>
#include <vector>

#include "graph/expr.hpp"

namespace kiln::targets::gpu {

class GroupCount {
 public:
  // `dims`: the kernel's dim names, in the order of the values launch() gets.
  GroupCount(graph::Expr groups, std::vector<std::string> dims, long long max_groups);
  long long operator()(const std::vector<long long>& values) const;

 private:
  graph::Expr groups_;
  std::vector<std::string> dims_;
  long long max_groups_;
  mutable std::vector<long long> last_values_;
  mutable long long last_ = -1;
};

}  // namespace kiln::targets::gpu
