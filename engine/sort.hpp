// Sorts: eq-sorts (values are e-class ids) and primitive sorts (values are the data itself, or
// an index into the sort's intern table). Primitive sorts are registered through this interface;
// kiln's Expr, View and Body sorts use it too.
#pragma once

#include <memory>
#include <string>

#include "engine/value.hpp"

namespace kiln::engine {

// Behaviour of a primitive sort: how its values print (egglog's text form).
class PrimitiveSort {
 public:
  virtual ~PrimitiveSort() = default;
  virtual std::string print(Value value) const = 0;
  // Cost of a literal of this sort in tree-cost extraction (egglog: 1).
  virtual std::uint64_t literal_cost() const { return 1; }
};

struct Sort {
  std::string name;
  bool is_eq = false;
  std::shared_ptr<const PrimitiveSort> primitive;  // null for eq-sorts
};

}  // namespace kiln::engine
