// Printing an Expr: the infix form that parse_expr() reads back, and an S-expression form.
#include <string>

#include "graph/expr.hpp"
#include "graph/expr_node.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

// Binding strength, loosest first; a child binding looser than its slot needs parentheses.
enum Precedence : int { kComparison = 0, kSum = 1, kProduct = 2, kUnary = 3, kPrimary = 4 };

int precedence(const Expr& e) {
  switch (e.op()) {
    case ExprOp::Const:
      return e.value() < 0 ? kUnary : kPrimary;
    case ExprOp::Add:
      return kSum;
    case ExprOp::Mul:
    case ExprOp::FloorDiv:
    case ExprOp::Mod:
      return kProduct;
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Eq:
      return kComparison;
    default:
      return kPrimary;  // dims and calls: min(...), max(...), ceil_div(...)
  }
}

void print(const Expr& e, int slot, std::string& out);

// For `a - b`: the b of a term written as -b (a negative constant or coefficient).
std::optional<Expr> negated(const Expr& term) {
  if (std::optional<std::int64_t> k = term.as_constant()) {
    if (*k < 0 && *k != Interval::kNegInf) return Expr(-*k);
    return std::nullopt;
  }
  if (term.op() != ExprOp::Mul) return std::nullopt;
  std::optional<std::int64_t> k = term.args()[0].as_constant();
  if (!k || *k >= 0 || *k == Interval::kNegInf) return std::nullopt;
  std::vector<Expr> rest(term.args().begin() + 1, term.args().end());
  if (*k != -1) rest.insert(rest.begin(), Expr(-*k));
  if (rest.size() == 1) return rest[0];
  return ExprBuilder::make(ExprOp::Mul, std::move(rest), false);
}

void print_call(const char* name, const Expr& e, std::string& out) {
  out += name;
  out += '(';
  for (std::size_t i = 0; i < e.args().size(); ++i) {
    if (i > 0) out += ", ";
    print(e.args()[i], kComparison, out);
  }
  out += ')';
}

void print_node(const Expr& e, std::string& out) {
  const std::vector<Expr>& args = e.args();
  switch (e.op()) {
    case ExprOp::Const:
      out += std::to_string(e.value());
      return;
    case ExprOp::Dim:
      out += e.name();
      return;
    case ExprOp::Add:
      print(args[0], kSum, out);
      for (std::size_t i = 1; i < args.size(); ++i) {
        if (std::optional<Expr> positive = negated(args[i])) {
          out += " - ";
          print(*positive, kProduct, out);
        } else {
          out += " + ";
          print(args[i], kProduct, out);
        }
      }
      return;
    case ExprOp::Mul: {
      std::size_t first = 0;
      if (args[0].as_constant() == -1) {
        out += '-';
        first = 1;
      }
      for (std::size_t i = first; i < args.size(); ++i) {
        if (i > first) out += '*';
        print(args[i], kUnary, out);
      }
      return;
    }
    case ExprOp::FloorDiv:
    case ExprOp::Mod:
      // Both operands bracketed unless atomic: (3*i)/4 and (i/4)%8 read unambiguously.
      print(args[0], kUnary, out);
      out += e.op() == ExprOp::FloorDiv ? "/" : "%";
      print(args[1], kUnary, out);
      return;
    case ExprOp::CeilDiv:
      print_call("ceil_div", e, out);
      return;
    case ExprOp::Min:
      print_call("min", e, out);
      return;
    case ExprOp::Max:
      print_call("max", e, out);
      return;
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Eq:
      print(args[0], kSum, out);
      out += e.op() == ExprOp::Lt ? " < " : e.op() == ExprOp::Le ? " <= " : " == ";
      print(args[1], kSum, out);
      return;
  }
  KILN_ASSERT(false, "to_string: unknown Expr op");
}

void print(const Expr& e, int slot, std::string& out) {
  bool parens = precedence(e) < slot;
  if (parens) out += '(';
  print_node(e, out);
  if (parens) out += ')';
}

const char* sexp_symbol(ExprOp op) {
  switch (op) {
    case ExprOp::Add: return "+";
    case ExprOp::Mul: return "*";
    case ExprOp::FloorDiv: return "div";
    case ExprOp::CeilDiv: return "ceil-div";
    case ExprOp::Mod: return "mod";
    case ExprOp::Min: return "min";
    case ExprOp::Max: return "max";
    case ExprOp::Lt: return "<";
    case ExprOp::Le: return "<=";
    case ExprOp::Eq: return "==";
    default: return "?";
  }
}

void print_sexp(const Expr& e, std::string& out) {
  if (e.op() == ExprOp::Const) {
    out += std::to_string(e.value());
    return;
  }
  if (e.op() == ExprOp::Dim) {
    out += e.name();
    return;
  }
  out += '(';
  out += sexp_symbol(e.op());
  for (const Expr& arg : e.args()) {
    out += ' ';
    print_sexp(arg, out);
  }
  out += ')';
}

}  // namespace

namespace detail {

const char* op_symbol(ExprOp op) {
  switch (op) {
    case ExprOp::Const: return "constant";
    case ExprOp::Dim: return "dim";
    case ExprOp::Add: return "+";
    case ExprOp::Mul: return "*";
    case ExprOp::FloorDiv: return "/";
    case ExprOp::CeilDiv: return "ceil_div";
    case ExprOp::Mod: return "%";
    case ExprOp::Min: return "min";
    case ExprOp::Max: return "max";
    case ExprOp::Lt: return "<";
    case ExprOp::Le: return "<=";
    case ExprOp::Eq: return "==";
  }
  return "?";
}

}  // namespace detail

std::string to_string(const Expr& e) {
  std::string out;
  print(e, kComparison, out);
  return out;
}

std::string to_sexp(const Expr& e) {
  std::string out;
  print_sexp(e, out);
  return out;
}

}  // namespace kiln::graph
