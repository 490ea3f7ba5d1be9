// The inside of an Expr, shared by the files that implement it (construction, simplification,
// bounds, printing); not part of the public API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/expr.hpp"

namespace kiln::graph {

struct Expr::Node {
  ExprOp op = ExprOp::Const;
  bool canonical = false;  // built by the simplifier for the default dim ranges
  std::int64_t value = 0;  // Const
  std::string name;        // Dim
  std::vector<Expr> args;
  std::uint64_t hash = 0;
};

// Builds nodes with a given canonical flag; only the simplifier marks nodes canonical.
class ExprBuilder {
 public:
  static Expr make(ExprOp op, std::vector<Expr> args, bool canonical);
};

namespace detail {

// Applies `op` to arguments that are already simplified (for `ranges`, or for the default
// ranges when it is null) and returns the simplified result.
Expr apply(ExprOp op, const std::vector<Expr>& args, const DimRanges* ranges);

// The user's text for an operator, for messages: "+", "/", "min", ...
const char* op_symbol(ExprOp op);

}  // namespace detail
}  // namespace kiln::graph
