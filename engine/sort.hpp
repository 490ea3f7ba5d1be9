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
  // True for sorts whose values hold e-class ids (containers of eq-sorts): such values must be
  // re-canonicalized when classes merge.
  virtual bool holds_eclasses() const { return false; }
  // The order of egglog's printed literals (i64 by value, String by text, ...), used to print
  // the elements of sets and maps; by default the raw Value order.
  virtual int compare(Value a, Value b) const { return a < b ? -1 : (a > b ? 1 : 0); }
};

class ContainerSort;

struct Sort {
  std::string name;
  bool is_eq = false;
  std::shared_ptr<const PrimitiveSort> primitive;  // null for eq-sorts
  // Filled in by EGraph::add_sort: the container behind `primitive`, if it is one, and whether
  // the values hold e-class ids.
  const ContainerSort* container = nullptr;
  bool holds_eclasses = false;
};

}  // namespace kiln::engine
