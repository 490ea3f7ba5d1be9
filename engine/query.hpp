// A conjunctive query: table atoms and primitive calls over numbered variables. The DSL compiles
// rule bodies into this form once; query_plan turns it into joins.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/primitive.hpp"
#include "engine/value.hpp"

namespace kiln::engine {

struct QueryTerm {
  bool is_var = true;
  std::uint32_t var = 0;
  Value constant = 0;
  bool eq_sort = false;  // a constant e-class id: canonicalized before each search
  // A constant container of e-classes (canonicalized before each search too): its sort.
  std::optional<SortId> container_sort;

  static QueryTerm variable(std::uint32_t v) { return {true, v, 0, false, std::nullopt}; }
  static QueryTerm literal(Value value, bool eq_sort,
                           std::optional<SortId> container_sort = std::nullopt) {
    return {false, 0, value, eq_sort || container_sort.has_value(), container_sort};
  }
};

// `function(columns[0..k-1]) = columns[k]`.
struct QueryAtom {
  FunctionId function = 0;
  std::vector<QueryTerm> columns;
};

// `primitive(args) = result`: binds result if it is a free variable, otherwise checks it.
// A failing primitive rejects the match.
struct QueryPrimitive {
  const Primitive* primitive = nullptr;
  std::vector<QueryTerm> args;
  QueryTerm result;
};

struct Query {
  std::vector<SortId> var_sorts;
  std::vector<QueryAtom> atoms;
  std::vector<QueryPrimitive> primitives;

  std::uint32_t num_vars() const { return static_cast<std::uint32_t>(var_sorts.size()); }
};

}  // namespace kiln::engine
