// Interval bounds of an Expr: interval arithmetic over the tree, with unbounded ends and
// overflow both widening to infinity, so a bound is never wrong, only loose.
#include <algorithm>

#include "graph/expr.hpp"
#include "graph/expr_node.hpp"
#include "graph/int_math.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

constexpr std::int64_t kNegInf = Interval::kNegInf;
constexpr std::int64_t kPosInf = Interval::kPosInf;

// An interval end as an extended integer: -inf, a finite value, or +inf.
struct End {
  int inf = 0;  // -1, 0 or +1
  std::int64_t v = 0;

  int sign() const { return inf != 0 ? inf : (v > 0) - (v < 0); }
  friend bool operator<(const End& a, const End& b) {
    if (a.inf != b.inf) return a.inf < b.inf;
    return a.inf == 0 && a.v < b.v;
  }
};

End finite(std::int64_t v) { return {0, v}; }
End infinite(int sign) { return {sign, 0}; }
End lo_end(const Interval& i) { return i.lo == kNegInf ? infinite(-1) : finite(i.lo); }
End hi_end(const Interval& i) { return i.hi == kPosInf ? infinite(+1) : finite(i.hi); }
// Back to an Interval end; anything that does not fit widens to unbounded.
std::int64_t as_lo(const End& e) { return e.inf != 0 ? kNegInf : e.v; }
std::int64_t as_hi(const End& e) { return e.inf != 0 ? kPosInf : e.v; }

End add(const End& a, const End& b) {
  if (a.inf != 0) return a;
  if (b.inf != 0) return b;
  auto r = int_math::add(a.v, b.v);
  return r ? finite(*r) : infinite(a.v < 0 ? -1 : 1);
}

End neg(const End& a) {
  if (a.inf != 0) return infinite(-a.inf);
  auto r = int_math::sub(0, a.v);
  return r ? finite(*r) : infinite(+1);
}

End mul(const End& a, const End& b) {
  if ((a.inf == 0 && a.v == 0) || (b.inf == 0 && b.v == 0)) return finite(0);
  if (a.inf != 0 || b.inf != 0) return infinite(a.sign() * b.sign());
  auto r = int_math::mul(a.v, b.v);
  return r ? finite(*r) : infinite(a.sign() * b.sign());
}

// floor(a / b) for b a finite non-zero value or +inf (then a's sign decides: 0 or -1).
End floor_div(const End& a, const End& b) {
  if (b.inf != 0) {
    if (a.inf != 0) return infinite(a.inf * b.inf);  // only reached for loose bounds
    return finite(a.v >= 0 ? 0 : -1);
  }
  if (a.inf != 0) return infinite(a.inf * b.sign());
  auto r = int_math::floor_div(a.v, b.v);
  return r ? finite(*r) : infinite(a.sign() * b.sign());
}

Interval make(const End& lo, const End& hi) { return {as_lo(lo), as_hi(hi)}; }

Interval add(const Interval& a, const Interval& b) {
  return make(add(lo_end(a), lo_end(b)), add(hi_end(a), hi_end(b)));
}

Interval neg(const Interval& a) { return make(neg(hi_end(a)), neg(lo_end(a))); }

Interval mul(const Interval& a, const Interval& b) {
  End products[] = {mul(lo_end(a), lo_end(b)), mul(lo_end(a), hi_end(b)),
                    mul(hi_end(a), lo_end(b)), mul(hi_end(a), hi_end(b))};
  return make(*std::min_element(std::begin(products), std::end(products)),
              *std::max_element(std::begin(products), std::end(products)));
}

bool is_const(const Interval& i) { return i.lo == i.hi && i.lo != kNegInf && i.hi != kPosInf; }

// The largest |v| over the interval, or nullopt when unbounded.
std::optional<std::int64_t> max_abs(const Interval& i) {
  if (i.lo == kNegInf || i.hi == kPosInf) return std::nullopt;
  auto a = int_math::sub(0, i.lo);
  auto b = int_math::sub(0, i.hi);
  if (!a || !b) return std::nullopt;
  return std::max({i.lo, *a, i.hi, *b});
}

Interval symmetric(std::optional<std::int64_t> m) {
  if (!m) return {};
  return {-*m, *m};
}

Interval floor_div(const Interval& a, const Interval& b) {
  if (b.lo != kNegInf && b.lo >= 1) {
    // floor(a/b) grows with a; for a >= 0 it shrinks as b grows, for a < 0 it grows.
    End al = lo_end(a), ah = hi_end(a);
    End lo = al.sign() >= 0 ? floor_div(al, hi_end(b)) : floor_div(al, lo_end(b));
    End hi = ah.sign() >= 0 ? floor_div(ah, lo_end(b)) : floor_div(ah, hi_end(b));
    return make(lo, hi);
  }
  if (b.hi <= -1) return floor_div(neg(a), neg(b));  // floor(a/b) == floor(-a/-b)
  return symmetric(max_abs(a));                       // |b| >= 1, so |floor(a/b)| <= |a|
}

Interval mod(const Interval& a, const Interval& b) {
  if (b.lo != kNegInf && b.lo >= 1) {
    if (a.lo != kNegInf && a.lo >= 0 && a.hi < b.lo) return a;  // 0 <= a < b: a itself
    if (is_const(b) && a.lo != kNegInf && a.hi != kPosInf) {
      std::int64_t k = *int_math::floor_div(a.lo, b.lo);
      if (k == *int_math::floor_div(a.hi, b.lo)) {
        // One block [k*b, k*b + b): the result is a - k*b.
        auto base = int_math::mul(k, b.lo);
        auto lo = base ? int_math::sub(a.lo, *base) : std::nullopt;
        auto hi = base ? int_math::sub(a.hi, *base) : std::nullopt;
        if (lo && hi) return {*lo, *hi};
      }
    }
    std::int64_t hi = b.hi == kPosInf ? kPosInf : b.hi - 1;
    if (a.lo != kNegInf && a.lo >= 0) hi = std::min(hi, a.hi);
    return {0, hi};
  }
  if (b.hi <= -1) return neg(mod(neg(a), neg(b)));  // mod(a, b) == -mod(-a, -b)
  auto m = max_abs(b);
  if (!m || *m == 0) return {};  // b is always 0 when *m == 0: the value never exists
  return symmetric(*m - 1);      // |mod| < |b|
}

// 1 / 0 / unknown for `d >= threshold` given d's interval.
Interval at_least(const Interval& d, std::int64_t threshold) {
  if (d.lo != kNegInf && d.lo >= threshold) return Interval::exactly(1);
  if (d.hi != kPosInf && d.hi < threshold) return Interval::exactly(0);
  return {0, 1};
}

Interval bounds_of(const Expr& e, const DimRanges& ranges) {
  switch (e.op()) {
    case ExprOp::Const:
      return Interval::exactly(e.value());
    case ExprOp::Dim: {
      auto found = ranges.find(e.name());
      return found == ranges.end() ? Interval::at_least(0) : found->second;
    }
    default:
      break;
  }
  const std::vector<Expr>& args = e.args();
  Interval acc = bounds_of(args[0], ranges);
  if (e.op() == ExprOp::Add || e.op() == ExprOp::Mul || e.op() == ExprOp::Min ||
      e.op() == ExprOp::Max) {
    for (std::size_t i = 1; i < args.size(); ++i) {
      Interval next = bounds_of(args[i], ranges);
      switch (e.op()) {
        case ExprOp::Add: acc = add(acc, next); break;
        case ExprOp::Mul: acc = mul(acc, next); break;
        // kNegInf and kPosInf order correctly as plain integers here.
        case ExprOp::Min: acc = {std::min(acc.lo, next.lo), std::min(acc.hi, next.hi)}; break;
        default: acc = {std::max(acc.lo, next.lo), std::max(acc.hi, next.hi)}; break;
      }
    }
    return acc;
  }
  Interval rhs = bounds_of(args[1], ranges);
  switch (e.op()) {
    case ExprOp::FloorDiv: return floor_div(acc, rhs);
    case ExprOp::CeilDiv: return neg(floor_div(neg(acc), rhs));  // ceil(a/b) == -floor(-a/b)
    case ExprOp::Mod: return mod(acc, rhs);
    case ExprOp::Lt: return at_least(add(rhs, neg(acc)), 1);
    case ExprOp::Le: return at_least(add(rhs, neg(acc)), 0);
    case ExprOp::Eq: {
      Interval d = add(rhs, neg(acc));
      if (d.lo == 0 && d.hi == 0) return Interval::exactly(1);
      if (!d.contains(0)) return Interval::exactly(0);
      return {0, 1};
    }
    default:
      KILN_ASSERT(false, "bounds: unknown Expr op");
  }
  return {};
}

}  // namespace

Interval bounds(const Expr& e, const DimRanges& ranges) {
  for (const auto& [name, range] : ranges) {
    if (range.lo == kNegInf || range.lo < 0) {
      throw support::UserError("the range of dim '" + name +
                               "' reaches below 0, but dims are non-negative");
    }
    if (range.hi < range.lo) {
      throw support::UserError("the range of dim '" + name + "' is empty");
    }
  }
  return bounds_of(e, ranges);
}

}  // namespace kiln::graph
