// Expr as a value: construction, structural hash, equality and order, and the walks over a tree
// (free dims, substitution, evaluation).
#include "graph/expr.hpp"

#include <algorithm>
#include <set>

#include "graph/expr_node.hpp"
#include "graph/int_math.hpp"
#include "support/diagnostic.hpp"
#include "support/hash.hpp"

namespace kiln::graph {

using support::UserError;

namespace {

constexpr std::uint64_t kHashSeed = 0x6b696c6e2d657870ULL;  // "kiln-exp"

bool valid_dim_name(std::string_view name) {
  if (name.empty()) return false;
  auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!is_alpha(name[0])) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return is_alpha(c) || is_digit(c); });
}

bool is_variadic(ExprOp op) {
  return op == ExprOp::Add || op == ExprOp::Mul || op == ExprOp::Min || op == ExprOp::Max;
}

}  // namespace

Expr ExprBuilder::make(ExprOp op, std::vector<Expr> args, bool canonical) {
  KILN_ASSERT(op != ExprOp::Const && op != ExprOp::Dim, "ExprBuilder::make builds operators");
  auto node = std::make_shared<Expr::Node>();
  node->op = op;
  node->canonical = canonical;
  node->args = std::move(args);
  std::uint64_t h = support::hash_combine(kHashSeed, static_cast<std::uint64_t>(op));
  for (const Expr& arg : node->args) h = support::hash_combine(h, arg.hash());
  node->hash = h;
  return Expr(std::shared_ptr<const Expr::Node>(std::move(node)));
}

Expr::Expr() : Expr(std::int64_t{0}) {}

Expr::Expr(std::int64_t value) {
  auto node = std::make_shared<Node>();
  node->op = ExprOp::Const;
  node->canonical = true;
  node->value = value;
  node->hash = support::hash_combine(
      support::hash_combine(kHashSeed, static_cast<std::uint64_t>(ExprOp::Const)),
      static_cast<std::uint64_t>(value));
  node_ = std::move(node);
}

Expr Expr::dim(std::string_view name) {
  if (!valid_dim_name(name)) {
    throw UserError("invalid dim name '" + std::string(name) +
                    "': a dim name is a letter or '_' followed by letters, digits or '_'");
  }
  auto node = std::make_shared<Node>();
  node->op = ExprOp::Dim;
  node->canonical = true;
  node->name = std::string(name);
  node->hash = support::hash_combine(
      support::hash_combine(kHashSeed, static_cast<std::uint64_t>(ExprOp::Dim)),
      support::hash64(name));
  return Expr(std::shared_ptr<const Node>(std::move(node)));
}

Expr Expr::node(ExprOp op, std::vector<Expr> args) {
  KILN_ASSERT(op != ExprOp::Const && op != ExprOp::Dim,
              "Expr::node builds operators; use Expr(value) or Expr::dim(name)");
  if (is_variadic(op)) {
    KILN_ASSERT(args.size() >= 2, std::string("Expr::node: '") + detail::op_symbol(op) +
                                      "' needs at least two arguments");
  } else {
    KILN_ASSERT(args.size() == 2, std::string("Expr::node: '") + detail::op_symbol(op) +
                                      "' needs exactly two arguments");
  }
  return ExprBuilder::make(op, std::move(args), false);
}

ExprOp Expr::op() const { return node_->op; }

std::int64_t Expr::value() const {
  KILN_ASSERT(node_->op == ExprOp::Const, "Expr::value on a non-constant");
  return node_->value;
}

const std::string& Expr::name() const {
  KILN_ASSERT(node_->op == ExprOp::Dim, "Expr::name on a non-dim");
  return node_->name;
}

const std::vector<Expr>& Expr::args() const { return node_->args; }

std::optional<std::int64_t> Expr::as_constant() const {
  if (node_->op != ExprOp::Const) return std::nullopt;
  return node_->value;
}

std::uint64_t Expr::hash() const { return node_->hash; }

bool Expr::is_canonical() const { return node_->canonical; }

bool operator==(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return true;
  const Expr::Node& x = *a.node_;
  const Expr::Node& y = *b.node_;
  if (x.hash != y.hash || x.op != y.op || x.args.size() != y.args.size()) return false;
  if (x.op == ExprOp::Const) return x.value == y.value;
  if (x.op == ExprOp::Dim) return x.name == y.name;
  return std::equal(x.args.begin(), x.args.end(), y.args.begin());
}

std::strong_ordering compare(const Expr& a, const Expr& b) {
  if (a.node_ == b.node_) return std::strong_ordering::equal;
  const Expr::Node& x = *a.node_;
  const Expr::Node& y = *b.node_;
  if (x.op != y.op) return x.op <=> y.op;
  if (x.op == ExprOp::Const) return x.value <=> y.value;
  if (x.op == ExprOp::Dim) return x.name.compare(y.name) <=> 0;
  std::size_t n = std::min(x.args.size(), y.args.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::strong_ordering c = compare(x.args[i], y.args[i]);
    if (c != 0) return c;
  }
  return x.args.size() <=> y.args.size();
}

namespace {

void collect_dims(const Expr& e, std::set<std::string>& out) {
  if (e.op() == ExprOp::Dim) {
    out.insert(e.name());
    return;
  }
  for (const Expr& arg : e.args()) collect_dims(arg, out);
}

Expr substitute_in(const Expr& e, const std::map<std::string, Expr>& replacements) {
  switch (e.op()) {
    case ExprOp::Const:
      return e;
    case ExprOp::Dim: {
      auto found = replacements.find(e.name());
      return found == replacements.end() ? e : found->second;
    }
    default: {
      std::vector<Expr> args;
      args.reserve(e.args().size());
      for (const Expr& arg : e.args()) args.push_back(substitute_in(arg, replacements));
      return detail::apply(e.op(), args, nullptr);
    }
  }
}

[[noreturn]] void evaluation_error(const std::string& what, const Expr& e) {
  throw UserError(what + " evaluating `" + to_string(e) + "`");
}

std::int64_t checked(std::optional<std::int64_t> result, const Expr& e) {
  if (!result) evaluation_error("integer overflow", e);
  return *result;
}

std::int64_t eval(const Expr& e, const DimValues& values) {
  switch (e.op()) {
    case ExprOp::Const:
      return e.value();
    case ExprOp::Dim: {
      auto found = values.find(e.name());
      if (found == values.end()) throw UserError("no value for dim '" + e.name() + "'");
      if (found->second < 0) {
        throw UserError("dim '" + e.name() + "' is " + std::to_string(found->second) +
                        ", but dims are non-negative");
      }
      return found->second;
    }
    default:
      break;
  }
  const std::vector<Expr>& args = e.args();
  std::int64_t acc = eval(args[0], values);
  switch (e.op()) {
    case ExprOp::Add:
      for (std::size_t i = 1; i < args.size(); ++i) acc = checked(int_math::add(acc, eval(args[i], values)), e);
      return acc;
    case ExprOp::Mul:
      for (std::size_t i = 1; i < args.size(); ++i) acc = checked(int_math::mul(acc, eval(args[i], values)), e);
      return acc;
    case ExprOp::Min:
      for (std::size_t i = 1; i < args.size(); ++i) acc = std::min(acc, eval(args[i], values));
      return acc;
    case ExprOp::Max:
      for (std::size_t i = 1; i < args.size(); ++i) acc = std::max(acc, eval(args[i], values));
      return acc;
    default:
      break;
  }
  std::int64_t rhs = eval(args[1], values);
  switch (e.op()) {
    case ExprOp::FloorDiv:
    case ExprOp::CeilDiv:
    case ExprOp::Mod:
      if (rhs == 0) evaluation_error("division by zero", e);
      if (e.op() == ExprOp::FloorDiv) return checked(int_math::floor_div(acc, rhs), e);
      if (e.op() == ExprOp::CeilDiv) return checked(int_math::ceil_div(acc, rhs), e);
      return checked(int_math::mod(acc, rhs), e);
    case ExprOp::Lt:
      return acc < rhs ? 1 : 0;
    case ExprOp::Le:
      return acc <= rhs ? 1 : 0;
    case ExprOp::Eq:
      return acc == rhs ? 1 : 0;
    default:
      KILN_ASSERT(false, "evaluate: unknown Expr op");
  }
  return 0;
}

}  // namespace

std::vector<std::string> free_dims(const Expr& e) {
  std::set<std::string> dims;
  collect_dims(e, dims);
  return {dims.begin(), dims.end()};
}

Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements) {
  std::map<std::string, Expr> simplified;
  for (const auto& [name, replacement] : replacements) {
    Expr r = simplify(replacement);
    Interval range = bounds(r);
    if (range.lo == Interval::kNegInf || range.lo < 0) {
      throw UserError("cannot substitute `" + to_string(r) + "` for dim '" + name +
                      "': it may be negative, and dims are non-negative");
    }
    simplified.emplace(name, std::move(r));
  }
  return substitute_in(simplify(e), simplified);
}

std::int64_t evaluate(const Expr& e, const DimValues& values) { return eval(e, values); }

}  // namespace kiln::graph
