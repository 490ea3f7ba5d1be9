// The online-softmax rewrite; see body_online_softmax.hpp.
#include "graph/body_online_softmax.hpp"

#include <cmath>
#include <map>
#include <numbers>
#include <utility>
#include <vector>

#include "graph/body_copy.hpp"
#include "graph/monoid_online_softmax.hpp"

namespace kiln::graph {

namespace {

using Rename = std::map<std::string, Expr>;

bool is_monoid(const Body& body, const Scalar& s, const char* name) {
  if (s.op != ScalarOp::Reduce || s.args.size() != 1) return false;
  const Monoid& m = body.monoids().at(s.slot);
  return m.name == name && m.elements == 1;
}

bool same_expr(const Expr& a, const Expr& b, const Rename& rename) {
  return simplify(substitute(a, rename)) == simplify(b);
}

// True when node `a` computes what node `b` does once `rename` maps a's variables to b's (the
// same x over another reduction variable). Each reduction variable belongs to one Reduce, so a
// pair's answer does not depend on the path that reached it: `memo` keeps it.
using PairMemo = std::map<std::pair<ScalarId, ScalarId>, bool>;
bool equivalent(const Body& body, ScalarId a, ScalarId b, Rename& rename, PairMemo& memo) {
  if (auto it = memo.find({a, b}); it != memo.end()) return it->second;
  const Scalar& x = body.scalar(a);
  const Scalar& y = body.scalar(b);
  bool same = x.op == y.op && x.dtype == y.dtype && x.slot == y.slot &&
              x.args.size() == y.args.size() &&
              (x.op != ScalarOp::Const || x.value == y.value ||
               (std::isnan(x.value) && std::isnan(y.value))) &&
              same_expr(x.index, y.index, rename) && same_expr(x.valid, y.valid, rename) &&
              same_expr(x.row_stride, y.row_stride, rename) &&
              same_expr(x.row_count, y.row_count, rename);
  const bool reduce = same && x.op == ScalarOp::Reduce;
  if (reduce) {
    same = same_expr(x.extent, y.extent, rename) &&
           body.monoids().at(x.slot) == body.monoids().at(y.slot);
    rename[x.var] = Expr::dim(y.var);
  }
  for (std::size_t k = 0; same && k < x.args.size(); ++k) {
    same = equivalent(body, x.args[k], y.args[k], rename, memo);
  }
  if (reduce) rename.erase(x.var);
  memo[{a, b}] = same;
  return same;
}
bool equivalent(const Body& body, ScalarId a, ScalarId b, Rename rename) {
  PairMemo memo;
  return equivalent(body, a, b, rename, memo);
}

// True when the subtree of `id` reads variable `var`.
bool uses_var(const Body& body, ScalarId id, const std::string& var) {
  std::vector<bool> seen(body.scalars().size(), false);
  std::vector<ScalarId> stack{id};
  while (!stack.empty()) {
    const ScalarId n = stack.back();
    stack.pop_back();
    if (seen[n]) continue;
    seen[n] = true;
    const Scalar& s = body.scalar(n);
    for (const Expr* e : {&s.index, &s.valid, &s.row_stride, &s.row_count, &s.extent}) {
      for (const std::string& d : free_dims(*e)) {
        if (d == var) return true;
      }
    }
    for (ScalarId a : s.args) stack.push_back(a);
  }
  return false;
}

// The factors of a product tree of Mul nodes, left to right.
void factors_of(const Body& body, ScalarId id, std::vector<ScalarId>& out) {
  const Scalar& s = body.scalar(id);
  if (s.op == ScalarOp::Mul) {
    factors_of(body, s.args[0], out);
    factors_of(body, s.args[1], out);
    return;
  }
  out.push_back(id);
}

bool is_const(const Body& body, ScalarId id, double value) {
  const Scalar& s = body.scalar(id);
  return s.op == ScalarOp::Const && std::abs(s.value - value) <= 1e-6 * std::abs(value);
}

// e^(x - M) as kiln writes it, 2^((x + M * -1) * log2 e), operands in either order.
struct ShiftedExp {
  ScalarId x;
  ScalarId max;
};
std::optional<ShiftedExp> shifted_exp(const Body& body, ScalarId id) {
  const Scalar& e = body.scalar(id);
  if (e.op != ScalarOp::Exp2) return std::nullopt;
  const Scalar& scaled = body.scalar(e.args[0]);
  if (scaled.op != ScalarOp::Mul) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    if (!is_const(body, scaled.args[1 - k], std::numbers::log2e)) continue;
    const Scalar& diff = body.scalar(scaled.args[k]);
    if (diff.op != ScalarOp::Add) continue;
    for (int i = 0; i < 2; ++i) {
      const Scalar& neg = body.scalar(diff.args[1 - i]);
      if (neg.op != ScalarOp::Mul) continue;
      for (int n = 0; n < 2; ++n) {
        if (is_const(body, neg.args[1 - n], -1.0)) return ShiftedExp{diff.args[i], neg.args[n]};
      }
    }
  }
  return std::nullopt;
}

// A softmax-weighted sum found in the Body: the sum's Reduce node, x_j and the factors of y_j.
struct Match {
  ScalarId sum;
  ScalarId x;
  std::vector<ScalarId> y;
};

// `max` is Max_r x_r over the sum's extent, for the x the sum reads as x_j.
bool is_max_of(const Body& body, ScalarId max, const Scalar& sum, ScalarId x) {
  const Scalar& m = body.scalar(max);
  if (!is_monoid(body, m, "max") || !same_expr(m.extent, sum.extent, {})) return false;
  if (uses_var(body, max, sum.var)) return false;
  return equivalent(body, m.args[0], x, {{m.var, Expr::dim(sum.var)}});
}

// `total` is Sum_r e^(x_r - M) over the sum's extent.
bool is_normalizer(const Body& body, ScalarId total, const Scalar& sum, ScalarId x, ScalarId max) {
  const Scalar& t = body.scalar(total);
  if (!is_monoid(body, t, "sum") || !same_expr(t.extent, sum.extent, {})) return false;
  if (uses_var(body, total, sum.var)) return false;
  std::optional<ShiftedExp> e = shifted_exp(body, t.args[0]);
  if (!e || e->max != max) return false;
  return equivalent(body, e->x, x, {{t.var, Expr::dim(sum.var)}});
}

std::optional<Match> match_at(const Body& body, ScalarId id) {
  const Scalar& sum = body.scalar(id);
  if (!is_monoid(body, sum, "sum")) return std::nullopt;
  std::vector<ScalarId> factors;
  factors_of(body, sum.args[0], factors);
  for (std::size_t i = 0; i < factors.size(); ++i) {
    std::optional<ShiftedExp> e = shifted_exp(body, factors[i]);
    if (!e || body.scalar(e->x).dtype != sum.dtype || !is_max_of(body, e->max, sum, e->x)) {
      continue;
    }
    for (std::size_t k = 0; k < factors.size(); ++k) {
      const Scalar& r = body.scalar(factors[k]);
      if (k == i || r.op != ScalarOp::Recip ||
          !is_normalizer(body, r.args[0], sum, e->x, e->max)) {
        continue;
      }
      Match m{id, e->x, {}};
      for (std::size_t f = 0; f < factors.size(); ++f) {
        if (f != i && f != k) m.y.push_back(factors[f]);
      }
      return m;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Body> online_softmax(const Body& body, std::string& why) {
  std::vector<Match> matches;
  for (ScalarId id = 0; id < body.scalars().size(); ++id) {
    if (std::optional<Match> m = match_at(body, id)) matches.push_back(*m);
  }
  if (matches.empty()) {
    why = "no sum of e^(x - max x) / sum e^(x - max x) times y in the body";
    return std::nullopt;
  }
  BodyBuilder b(body.inputs());
  std::map<std::string, Expr> extents;
  for (const Loop& l : body.loops()) {
    b.output_loop(l.extent, l.parallel);
    extents[l.var] = l.extent;
  }
  BodyCopier copier(b, body, {}, [](std::size_t k) { return k; }, Expr(1), extents);
  for (const Match& m : matches) {
    const DType dtype = body.scalar(m.sum).dtype;
    copier.replace_reduce(m.sum, [&b, &copier, m, dtype](const std::string& var,
                                                         const Expr& extent) {
      ScalarId y = b.constant(1.0, dtype);
      for (std::size_t f = 0; f < m.y.size(); ++f) {
        const ScalarId factor = copier.copy(m.y[f]);
        y = f == 0 ? factor : b.binary(ScalarOp::Mul, y, factor);
      }
      const ScalarId x = copier.copy(m.x);
      return b.reduce(online_softmax_monoid(b, dtype), var, extent, {x, y}, dtype);
    });
  }
  return copier.finish(body.output_aliases());
}

}  // namespace kiln::graph
