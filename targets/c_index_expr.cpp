// Index Exprs as C; see c_index_expr.hpp.
#include "targets/c_index_expr.hpp"

namespace kiln::targets {

using graph::Expr;
using graph::ExprOp;

std::string c_index_expr(const Expr& e, const std::function<std::string(const std::string&)>& dim,
                         const std::function<std::string(std::int64_t)>& constant) {
  auto expr = [&](const Expr& x) { return c_index_expr(x, dim, constant); };
  auto args = [&](const char* sep) {
    std::string out;
    for (std::size_t i = 0; i < e.args().size(); ++i) out += (i ? sep : "") + expr(e.args()[i]);
    return "(" + out + ")";
  };
  auto fold = [&](const char* fn) {
    std::string out = expr(e.args()[0]);
    for (std::size_t i = 1; i < e.args().size(); ++i) {
      out = std::string(fn) + "(" + out + ", " + expr(e.args()[i]) + ")";
    }
    return out;
  };
  switch (e.op()) {
    case ExprOp::Const: return constant(e.value());
    case ExprOp::Dim: return dim(e.name());
    case ExprOp::Add: return args(" + ");
    case ExprOp::Mul: return args(" * ");
    case ExprOp::FloorDiv: return "kiln_fdiv" + args(", ");
    case ExprOp::CeilDiv: return "kiln_cdiv" + args(", ");
    case ExprOp::Mod: return "kiln_imod" + args(", ");
    case ExprOp::Min: return fold("kiln_imin");
    case ExprOp::Max: return fold("kiln_imax");
    case ExprOp::Lt: return "(kiln_i64)" + args(" < ");
    case ExprOp::Le: return "(kiln_i64)" + args(" <= ");
    case ExprOp::Eq: return "(kiln_i64)" + args(" == ");
  }
  return "0";
}

}  // namespace kiln::targets
