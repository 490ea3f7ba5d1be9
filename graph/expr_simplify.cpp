// Canonicalization of Expr: the arithmetic operators and simplify().
//
// The canonical form is a sum of monomials with non-zero integer coefficients, each monomial a
// sorted product of atoms (dims and canonical div/mod/min/max/comparison nodes), monomials of
// higher degree first, the constant last. What is simplified:
//   + - *      collected into that form (distributing products over sums), constants folded;
//   a / c      (c constant) multiples of c taken out of the coefficients (toward zero; the
//              constant down to [0, c)): (x*8 + 3)/8 = x + 3/8 = x, (x*12 + y)/8 = x + (4*x + y)/8;
//              a numerator whose terms are all negative flipped: (-x)/8 = -((x + 7)/8);
//              (x/c1 + r)/c2 = (x + r*c1)/(c1*c2); a common factor g of c and the coefficients
//              divided out: (4*x + 2)/8 = x/2; decided by bounds when the numerator stays in one
//              block of c: (x % 8)/8 = 0; c < 0 negated.
//   a % c      the same reductions: (x*8 + 3) % 8 = 3, (4*x + 2) % 8 = 4*(x % 2) + 2,
//              (x % 16) % 8 = x % 8, by bounds (x % 8) % 16 = x % 8.
//   ceil_div   by a constant: ceil_div(a, c) = (a + c - 1)/c.
//   a / b      (b not constant) terms divisible by a monomial b taken out: (x*y + z)/y =
//              x + z/y; a multiple of b gives its factor: (2*y + 2)/(y + 1) = 2. Same for % and
//              ceil_div.
//   sums       k*(a % c) + k*c*(a / c) = k*a, and k*a - k*c*(a / c) = k*(a % c).
//   min, max   flattened, constants folded, arguments dominated by another dropped by the
//              bounds of their difference (min(x, x + 1) = x, max(x, 0) = x), the rest sorted
//              with the constant last.
//   <, <=, ==  a < b becomes a + 1 <= b; both sides moved to one difference d, decided by its
//              bounds, divided by the gcd of its coefficients, and split back into
//              `negative terms <= positive terms` (for ==, with the first term's sign fixed).
// Bounds come from per-dim intervals: [0, +inf) unless simplify() was given ranges.
#include <algorithm>
#include <numeric>

#include "graph/expr.hpp"
#include "graph/expr_node.hpp"
#include "graph/int_math.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

using support::UserError;

namespace {

// A product of atoms, sorted by compare(), with repeats for powers; empty for the constant.
using Monomial = std::vector<Expr>;

// Higher degree first, then lexicographic; so the constant (degree 0) comes last.
struct MonomialLess {
  bool operator()(const Monomial& a, const Monomial& b) const {
    if (a.size() != b.size()) return a.size() > b.size();
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::strong_ordering c = compare(a[i], b[i]);
      if (c != 0) return c < 0;
    }
    return false;
  }
};

// A sum of monomials with non-zero coefficients.
using Poly = std::map<Monomial, std::int64_t, MonomialLess>;

// A coefficient or constant that does not fit in 64 bits (a UserError; some rules catch it and
// fall back to a form that fits).
class Overflow : public UserError {
 public:
  using UserError::UserError;
};

[[noreturn]] void overflow() { throw Overflow("integer overflow in a symbolic expression"); }

std::int64_t checked(std::optional<std::int64_t> v) {
  if (!v) overflow();
  return *v;
}

void add_term(Poly& p, const Monomial& m, std::int64_t k) {
  if (k == 0) return;
  auto [it, inserted] = p.emplace(m, k);
  if (inserted) return;
  it->second = checked(int_math::add(it->second, k));
  if (it->second == 0) p.erase(it);
}

Poly sum(Poly a, const Poly& b) {
  for (const auto& [m, k] : b) add_term(a, m, k);
  return a;
}

Poly scale(const Poly& a, std::int64_t k) {
  Poly out;
  if (k == 0) return out;
  for (const auto& [m, c] : a) out.emplace(m, checked(int_math::mul(c, k)));
  return out;
}

Poly product(const Poly& a, const Poly& b) {
  Poly out;
  for (const auto& [ma, ka] : a) {
    for (const auto& [mb, kb] : b) {
      Monomial m;
      m.reserve(ma.size() + mb.size());
      std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m), ExprLess{});
      add_term(out, m, checked(int_math::mul(ka, kb)));
    }
  }
  return out;
}

Poly constant_poly(std::int64_t k) {
  Poly p;
  add_term(p, {}, k);
  return p;
}

std::int64_t constant_of(const Poly& p) {
  auto found = p.find(Monomial{});
  return found == p.end() ? 0 : found->second;
}

std::optional<std::int64_t> as_constant(const Poly& p) {
  if (p.empty()) return 0;
  if (p.size() == 1 && p.begin()->first.empty()) return p.begin()->second;
  return std::nullopt;
}

// gcd of |k| over the non-constant coefficients, and `seed`; 0 if there are none. Returns
// nullopt when the gcd does not fit (every coefficient is INT64_MIN).
std::optional<std::int64_t> coefficient_gcd(const Poly& p, std::uint64_t seed) {
  std::uint64_t g = seed;
  for (const auto& [m, k] : p) {
    if (m.empty()) continue;
    std::uint64_t magnitude = k < 0 ? 0 - static_cast<std::uint64_t>(k) : static_cast<std::uint64_t>(k);
    g = std::gcd(g, magnitude);
  }
  if (g > static_cast<std::uint64_t>(Interval::kPosInf)) return std::nullopt;
  return static_cast<std::int64_t>(g);
}

// `m` with one copy of each atom of `divisor` removed, or nullopt if `m` lacks one.
std::optional<Monomial> divide_monomial(const Monomial& m, const Monomial& divisor) {
  Monomial rest;
  std::size_t j = 0;
  for (const Expr& atom : m) {
    if (j < divisor.size() && atom == divisor[j]) {
      ++j;
    } else {
      rest.push_back(atom);
    }
  }
  if (j != divisor.size()) return std::nullopt;
  return rest;
}

const DimRanges kNoRanges;

class Simplifier {
 public:
  explicit Simplifier(const DimRanges* ranges) : ranges_(ranges) {}

  // Simplifies any tree, bottom-up; canonical subtrees are reused when there are no ranges.
  Expr rebuild(const Expr& e) {
    if (ranges_ == nullptr && e.is_canonical()) return e;
    switch (e.op()) {
      case ExprOp::Const:
        return e;
      case ExprOp::Dim: {
        if (ranges_ == nullptr) return e;
        auto found = ranges_->find(e.name());
        if (found != ranges_->end() && found->second.lo == found->second.hi) return found->second.lo;
        return e;
      }
      default: {
        std::vector<Expr> args;
        args.reserve(e.args().size());
        for (const Expr& arg : e.args()) args.push_back(rebuild(arg));
        return apply(e.op(), args);
      }
    }
  }

  // Applies an operator to simplified arguments.
  Expr apply(ExprOp op, const std::vector<Expr>& args) {
    switch (op) {
      case ExprOp::Add: {
        Poly p;
        for (const Expr& arg : args) p = sum(std::move(p), to_poly(arg));
        return to_expr(std::move(p));
      }
      case ExprOp::Mul: {
        Poly p = to_poly(args[0]);
        for (std::size_t i = 1; i < args.size(); ++i) p = product(p, to_poly(args[i]));
        return to_expr(std::move(p));
      }
      case ExprOp::FloorDiv:
      case ExprOp::CeilDiv:
      case ExprOp::Mod:
        return divide(op, args[0], args[1]);
      case ExprOp::Min:
      case ExprOp::Max:
        return min_max(op, args);
      case ExprOp::Lt:
      case ExprOp::Le:
      case ExprOp::Eq:
        return comparison(op, args[0], args[1]);
      default:
        KILN_ASSERT(false, "apply: Const and Dim are not operators");
    }
    return {};
  }

 private:
  const DimRanges* ranges_;

  Expr make(ExprOp op, std::vector<Expr> args) const {
    return ExprBuilder::make(op, std::move(args), ranges_ == nullptr);
  }

  Interval bounds_of(const Expr& e) const { return bounds(e, ranges_ ? *ranges_ : kNoRanges); }

  static Poly to_poly(const Expr& e) {
    Poly p;
    switch (e.op()) {
      case ExprOp::Const:
        add_term(p, {}, e.value());
        break;
      case ExprOp::Add:
        for (const Expr& term : e.args()) p = sum(std::move(p), to_poly(term));
        break;
      case ExprOp::Mul: {
        const std::vector<Expr>& args = e.args();
        bool has_coefficient = args[0].op() == ExprOp::Const;
        Monomial m(args.begin() + (has_coefficient ? 1 : 0), args.end());
        add_term(p, m, has_coefficient ? args[0].value() : 1);
        break;
      }
      default:
        add_term(p, {e}, 1);
        break;
    }
    return p;
  }

  Expr monomial_expr(const Monomial& m, std::int64_t k) const {
    if (m.empty()) return k;
    if (k == 1 && m.size() == 1) return m[0];
    std::vector<Expr> factors;
    if (k != 1) factors.emplace_back(k);
    factors.insert(factors.end(), m.begin(), m.end());
    return make(ExprOp::Mul, std::move(factors));
  }

  // The Expr of a polynomial in normal form (after recombine()).
  Expr build(const Poly& p) const {
    std::vector<Expr> terms;
    for (const auto& [m, k] : p) terms.push_back(monomial_expr(m, k));
    if (terms.empty()) return 0;
    if (terms.size() == 1) return terms[0];
    return make(ExprOp::Add, std::move(terms));
  }

  Expr to_expr(Poly p) {
    recombine(p);
    return build(p);
  }

  Expr negate(const Expr& e) { return to_expr(scale(to_poly(e), -1)); }

  // Rewrites k*M*(a % c) + k*c*M*(a / c) to k*M*a, and k*M*a - k*c*M*(a / c) to k*M*(a % c)
  // (the second when every non-constant term of k*M*a is present with the same sign and at
  // least its magnitude), until neither applies. Each step removes a monomial holding a / c and
  // adds only smaller atoms, so it terminates.
  void recombine(Poly& p) {
    while (recombine_once(p)) {
    }
  }

  bool recombine_once(Poly& p) {
    for (const auto& [m, k] : p) {
      for (std::size_t i = 0; i < m.size(); ++i) {
        const Expr& atom = m[i];
        if ((atom.op() != ExprOp::Mod && atom.op() != ExprOp::FloorDiv) ||
            !atom.args()[1].as_constant()) {
          continue;
        }
        Monomial rest = m;
        rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
        if (atom.op() == ExprOp::Mod ? merge_div_mod(p, m, k, i, rest) : split_mod(p, m, k, i, rest)) {
          return true;
        }
      }
    }
    return false;
  }

  // k*M*(a % c) + k*c*M*(a / c) -> k*M*a, with M*(a % c) = m and M = rest.
  bool merge_div_mod(Poly& p, const Monomial& m, std::int64_t k, std::size_t i, const Monomial& rest) {
    Expr a = m[i].args()[0];
    std::int64_t c = m[i].args()[1].value();
    if (c <= 1) return false;
    Poly quotient = to_poly(divide_by_constant(to_poly(a), c));
    if (quotient.size() != 1 || quotient.begin()->second != 1 || quotient.begin()->first.size() != 1) {
      return false;
    }
    Monomial partner = rest;
    const Expr& div_atom = quotient.begin()->first[0];
    partner.insert(std::upper_bound(partner.begin(), partner.end(), div_atom, ExprLess{}), div_atom);
    auto found = p.find(partner);
    auto want = int_math::mul(k, c);
    if (found == p.end() || !want || found->second != *want) return false;
    Poly replacement = scale(product(Poly{{rest, 1}}, to_poly(a)), k);
    Monomial mod_monomial = m;
    p.erase(found);
    p.erase(mod_monomial);
    p = sum(std::move(p), replacement);
    return true;
  }

  // k*M*a - k*c*M*(a / c) -> k*M*(a % c), with M*(a / c) = m (coefficient -k*c) and M = rest.
  bool split_mod(Poly& p, const Monomial& m, std::int64_t kk, std::size_t i, const Monomial& rest) {
    Expr a = m[i].args()[0];
    std::int64_t c = m[i].args()[1].value();
    if (c <= 1 || kk % c != 0) return false;
    auto k = int_math::sub(0, kk / c);
    if (!k) return false;
    Poly whole = scale(product(Poly{{rest, 1}}, to_poly(a)), *k);
    if (as_constant(whole) || whole.count(m) != 0) return false;
    for (const auto& [wm, wk] : whole) {
      if (wm.empty()) continue;  // the constant can always move: x - 8*((x + 3)/8) = (x + 3)%8 - 3
      auto found = p.find(wm);
      if (found == p.end()) return false;
      std::int64_t have = found->second;
      if ((have < 0) != (wk < 0) || (wk < 0 ? have > wk : have < wk)) return false;
    }
    Poly replacement = scale(product(Poly{{rest, 1}}, to_poly(mod_by_constant(to_poly(a), c))), *k);
    Monomial div_monomial = m;
    p.erase(div_monomial);
    p = sum(sum(std::move(p), scale(whole, -1)), replacement);
    return true;
  }

  [[noreturn]] static void division_by_zero(ExprOp op, const Expr& a) {
    throw UserError("division by zero in `" + to_string(Expr::node(op, {a, 0})) + "`");
  }

  Expr divide(ExprOp op, const Expr& a, const Expr& b) {
    std::optional<std::int64_t> c = b.as_constant();
    if (!c) return divide_symbolic(op, a, b);
    if (*c == 0) division_by_zero(op, a);
    Poly p = to_poly(a);
    if (*c < 0) {
      // floor(a/c) = floor(-a/-c), ceil(a/c) = ceil(-a/-c), mod(a, c) = -mod(-a, -c).
      std::int64_t positive = checked(int_math::sub(0, *c));
      if (op == ExprOp::Mod) return negate(mod_by_constant(scale(p, -1), positive));
      return divide(op, to_expr(scale(p, -1)), positive);
    }
    switch (op) {
      case ExprOp::FloorDiv:
        return divide_by_constant(std::move(p), *c);
      case ExprOp::CeilDiv:  // ceil(a/c) = floor((a + c - 1)/c)
        return divide_by_constant(sum(std::move(p), constant_poly(*c - 1)), *c);
      default:
        return mod_by_constant(std::move(p), *c);
    }
  }

  // floor(p / c) for c > 0.
  Expr divide_by_constant(Poly p, std::int64_t c) {
    if (c == 1) return to_expr(std::move(p));
    auto [quotient, remainder] = split_multiples(p, c);
    Expr q = to_expr(std::move(quotient));
    if (as_constant(remainder)) return q;  // the constant part is in [0, c): floor is 0
    // floor(r/c) = -1 - floor((-r - 1)/c): (-x)/8 becomes -((x + 7)/8).
    if (all_negative(remainder)) {
      return add(q, add(-1, negate(divide_by_constant(negate_minus_one(remainder), c))));
    }
    Poly recombined = remainder;
    recombine(recombined);
    if (recombined != remainder) return add(q, divide_by_constant(std::move(recombined), c));
    // (a / c1 + r) / c = (a + r*c1) / (c1*c)
    if (remainder.size() == 1 || (remainder.size() == 2 && remainder.count(Monomial{}) == 1)) {
      const auto& [m, k] = *remainder.begin();
      if (k == 1 && m.size() == 1 && m[0].op() == ExprOp::FloorDiv && m[0].args()[1].as_constant()) {
        std::int64_t c1 = m[0].args()[1].value();
        auto divisor = int_math::mul(c1, c);
        auto offset = int_math::mul(constant_of(remainder), c1);
        if (divisor && offset) {
          Poly inner = sum(to_poly(m[0].args()[0]), constant_poly(*offset));
          return add(q, divide_by_constant(std::move(inner), *divisor));
        }
      }
    }
    // (g*a + r) / (g*c') = (a + floor(r/g)) / c'
    std::optional<std::int64_t> g = coefficient_gcd(remainder, static_cast<std::uint64_t>(c));
    if (g && *g > 1) {
      std::int64_t r = constant_of(remainder);
      remainder.erase(Monomial{});
      Poly inner;
      for (const auto& [m, k] : remainder) add_term(inner, m, k / *g);
      add_term(inner, {}, r / *g);
      return add(q, divide_by_constant(std::move(inner), c / *g));
    }
    Expr numerator = build(remainder);
    if (std::optional<std::int64_t> k = one_block(numerator, c)) return add(q, *k);
    return add(q, make(ExprOp::FloorDiv, {numerator, c}));
  }

  // mod(p, c) for c > 0.
  Expr mod_by_constant(Poly p, std::int64_t c) {
    if (c == 1) return 0;
    Poly remainder;
    bool replaced = false;
    for (const auto& [m, r] : split_multiples(p, c).second) {
      // (x % c1) % c = x % c when c divides c1.
      if (m.size() == 1 && m[0].op() == ExprOp::Mod && m[0].args()[1].as_constant() &&
          m[0].args()[1].value() % c == 0) {
        remainder = sum(std::move(remainder), scale(to_poly(m[0].args()[0]), r));
        replaced = true;
      } else {
        add_term(remainder, m, r);
      }
    }
    if (replaced) return mod_by_constant(std::move(remainder), c);
    if (std::optional<std::int64_t> k = as_constant(remainder)) return *k;
    // mod(r, c) = c - 1 - mod(-r - 1, c), as in divide_by_constant, so that the two recombine.
    if (all_negative(remainder)) {
      return add(c - 1, negate(mod_by_constant(negate_minus_one(remainder), c)));
    }
    Poly recombined = remainder;
    recombine(recombined);
    if (recombined != remainder) return mod_by_constant(std::move(recombined), c);
    // (g*a + r) % (g*c') = g*((a + floor(r/g)) % c') + r % g
    std::optional<std::int64_t> g = coefficient_gcd(remainder, static_cast<std::uint64_t>(c));
    if (g && *g > 1) {
      std::int64_t r = constant_of(remainder);
      remainder.erase(Monomial{});
      Poly inner;
      for (const auto& [m, k] : remainder) add_term(inner, m, k / *g);
      add_term(inner, {}, r / *g);
      return add(mul(*g, mod_by_constant(std::move(inner), c / *g)), r % *g);
    }
    Expr numerator = build(remainder);
    if (std::optional<std::int64_t> k = one_block(numerator, c)) {
      return add(numerator, checked(int_math::mul(-*k, c)));
    }
    return make(ExprOp::Mod, {numerator, c});
  }

  // True when p has non-constant terms and all their coefficients are negative.
  static bool all_negative(const Poly& p) {
    bool any = false;
    for (const auto& [m, k] : p) {
      if (m.empty()) continue;
      if (k > 0) return false;
      any = true;
    }
    return any;
  }

  static Poly negate_minus_one(const Poly& p) { return sum(scale(p, -1), constant_poly(-1)); }

  // p = c*quotient + remainder (c > 0), where the remainder keeps each non-constant coefficient
  // k as k - c*trunc(k/c) (same sign, magnitude below c: (x - y)/4 stays as it is) and the
  // constant as its floor residue in [0, c) (so (x - 1)/8 and (x + 7)/8 - 1 agree).
  static std::pair<Poly, Poly> split_multiples(const Poly& p, std::int64_t c) {
    Poly quotient;
    Poly remainder;
    for (const auto& [m, k] : p) {
      std::int64_t q = m.empty() ? *int_math::floor_div(k, c) : k / c;
      add_term(quotient, m, q);
      add_term(remainder, m, m.empty() ? *int_math::mod(k, c) : k % c);
    }
    return {std::move(quotient), std::move(remainder)};
  }

  // k when the bounds of e lie within [k*c, k*c + c) (c > 0).
  std::optional<std::int64_t> one_block(const Expr& e, std::int64_t c) const {
    Interval range = bounds_of(e);
    if (range.lo == Interval::kNegInf || range.hi == Interval::kPosInf) return std::nullopt;
    std::int64_t k = *int_math::floor_div(range.lo, c);
    if (k != *int_math::floor_div(range.hi, c)) return std::nullopt;
    return k;
  }

  Expr divide_symbolic(ExprOp op, const Expr& a, const Expr& b) {
    Poly pa = to_poly(a);
    Poly pb = to_poly(b);
    // a = k*b exactly: floor and ceil are k, the remainder is 0.
    if (std::optional<std::int64_t> k = exact_multiple(pa, pb)) return op == ExprOp::Mod ? 0 : *k;
    if (pb.size() != 1) return make(op, {a, b});
    // b = kb*M: terms divisible by b come out (floor((q*b + r)/b) = q + floor(r/b)).
    const auto& [mb, kb] = *pb.begin();
    Poly quotient;
    Poly remainder;
    for (const auto& [m, k] : pa) {
      std::optional<Monomial> rest = divide_monomial(m, mb);
      if (rest && *int_math::mod(k, kb) == 0) {
        add_term(quotient, *rest, checked(int_math::floor_div(k, kb)));
      } else {
        add_term(remainder, m, k);
      }
    }
    Expr left = remainder.empty() ? Expr(0) : make(op, {build(remainder), b});
    if (op == ExprOp::Mod) return left;
    return add(to_expr(std::move(quotient)), left);
  }

  // k if a == k*b as polynomials (b non-constant).
  static std::optional<std::int64_t> exact_multiple(const Poly& a, const Poly& b) {
    if (a.empty()) return 0;
    if (a.size() != b.size()) return std::nullopt;
    std::optional<std::int64_t> ratio;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia->first.size() != ib->first.size() || MonomialLess{}(ia->first, ib->first) ||
          MonomialLess{}(ib->first, ia->first)) {
        return std::nullopt;
      }
      if (*int_math::mod(ia->second, ib->second) != 0) return std::nullopt;
      auto k = int_math::floor_div(ia->second, ib->second);
      if (!k || (ratio && *ratio != *k)) return std::nullopt;
      ratio = k;
    }
    return ratio;
  }

  Expr add(const Expr& a, const Expr& b) { return to_expr(sum(to_poly(a), to_poly(b))); }
  Expr mul(const Expr& a, const Expr& b) { return to_expr(product(to_poly(a), to_poly(b))); }

  Expr min_max(ExprOp op, const std::vector<Expr>& args) {
    bool is_min = op == ExprOp::Min;
    std::vector<Expr> items;
    std::optional<std::int64_t> constant;
    auto take = [&](const Expr& e) {
      if (std::optional<std::int64_t> k = e.as_constant()) {
        constant = !constant ? *k : is_min ? std::min(*constant, *k) : std::max(*constant, *k);
      } else {
        items.push_back(e);
      }
    };
    for (const Expr& arg : args) {
      if (arg.op() == op) {
        for (const Expr& inner : arg.args()) take(inner);
      } else {
        take(arg);
      }
    }
    std::sort(items.begin(), items.end(), ExprLess{});
    items.erase(std::unique(items.begin(), items.end()), items.end());
    if (constant) items.emplace_back(*constant);  // last: min(seq, 4096)
    // Drop j when it can never be the result: items[j] - items[i] >= 0 for min (<= 0 for max).
    std::vector<bool> alive(items.size(), true);
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (std::size_t j = 0; j < items.size(); ++j) {
        if (i == j || !alive[i] || !alive[j]) continue;
        std::optional<Interval> d = difference_bounds(items[j], items[i]);
        if (d && (is_min ? (d->lo != Interval::kNegInf && d->lo >= 0)
                         : (d->hi != Interval::kPosInf && d->hi <= 0))) {
          alive[j] = false;
        }
      }
    }
    std::vector<Expr> kept;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (alive[i]) kept.push_back(items[i]);
    }
    if (kept.size() == 1) return kept[0];
    return make(op, std::move(kept));
  }

  // Bounds of a - b, or nullopt if the difference overflows.
  std::optional<Interval> difference_bounds(const Expr& a, const Expr& b) {
    try {
      return bounds_of(to_expr(sum(to_poly(a), scale(to_poly(b), -1))));
    } catch (const Overflow&) {
      return std::nullopt;
    }
  }

  Expr comparison(ExprOp op, const Expr& a, const Expr& b) {
    try {
      if (op == ExprOp::Eq) return equal_zero(sum(to_poly(a), scale(to_poly(b), -1)));
      // a <= b  <=>  b - a >= 0;  a < b  <=>  b - a - 1 >= 0.
      Poly d = sum(to_poly(b), scale(to_poly(a), -1));
      if (op == ExprOp::Lt) d = sum(std::move(d), constant_poly(-1));
      return at_least_zero(std::move(d));
    } catch (const Overflow&) {
      return make(op, {a, b});  // the normal form does not fit in 64 bits: keep it as written
    }
  }

  // d >= 0, as `negative terms <= positive terms`.
  Expr at_least_zero(Poly d) {
    recombine(d);
    if (std::optional<std::int64_t> k = as_constant(d)) return *k >= 0 ? 1 : 0;
    Interval range = bounds_of(to_expr(d));
    if (range.lo != Interval::kNegInf && range.lo >= 0) return 1;
    if (range.hi != Interval::kPosInf && range.hi < 0) return 0;
    // g*a + r >= 0  <=>  a >= -r/g  <=>  a + floor(r/g) >= 0
    std::optional<std::int64_t> g = coefficient_gcd(d, 0);
    if (g && *g > 1) {
      std::int64_t r = constant_of(d);
      d.erase(Monomial{});
      Poly reduced;
      for (const auto& [m, k] : d) add_term(reduced, m, k / *g);
      add_term(reduced, {}, *int_math::floor_div(r, *g));
      d = std::move(reduced);
    }
    auto [negative, positive] = split_by_sign(d);
    // Parts of a recombined sum are recombined already; build() keeps them as they are.
    return make(ExprOp::Le, {build(negative), build(positive)});
  }

  // d == 0, as `positive terms == negative terms` with the first term positive.
  Expr equal_zero(Poly d) {
    recombine(d);
    if (std::optional<std::int64_t> k = as_constant(d)) return *k == 0 ? 1 : 0;
    Interval range = bounds_of(to_expr(d));
    if (!range.contains(0)) return 0;
    std::optional<std::int64_t> g = coefficient_gcd(d, 0);
    if (g && *g > 1) {
      std::int64_t r = constant_of(d);
      if (r % *g != 0) return 0;
      Poly reduced;
      for (const auto& [m, k] : d) add_term(reduced, m, k / *g);
      d = std::move(reduced);
    }
    if (d.begin()->second < 0) d = scale(d, -1);
    auto [negative, positive] = split_by_sign(d);
    return make(ExprOp::Eq, {build(positive), build(negative)});
  }

  // (the negated negative terms, the positive terms) of d.
  static std::pair<Poly, Poly> split_by_sign(const Poly& d) {
    Poly negative;
    Poly positive;
    for (const auto& [m, k] : d) {
      if (k > 0) {
        add_term(positive, m, k);
      } else {
        add_term(negative, m, checked(int_math::sub(0, k)));
      }
    }
    return {std::move(negative), std::move(positive)};
  }
};

}  // namespace

namespace detail {

Expr apply(ExprOp op, const std::vector<Expr>& args, const DimRanges* ranges) {
  return Simplifier(ranges).apply(op, args);
}

}  // namespace detail

Expr simplify(const Expr& e) { return Simplifier(nullptr).rebuild(e); }

Expr simplify(const Expr& e, const DimRanges& ranges) {
  bounds(0, ranges);  // validates the ranges
  return Simplifier(&ranges).rebuild(e);
}

namespace {

Expr binary(ExprOp op, const Expr& a, const Expr& b) {
  Simplifier s(nullptr);
  return s.apply(op, {s.rebuild(a), s.rebuild(b)});
}

}  // namespace

Expr operator+(const Expr& a, const Expr& b) { return binary(ExprOp::Add, a, b); }
Expr operator-(const Expr& a, const Expr& b) { return binary(ExprOp::Add, a, binary(ExprOp::Mul, -1, b)); }
Expr operator-(const Expr& a) { return binary(ExprOp::Mul, -1, a); }
Expr operator*(const Expr& a, const Expr& b) { return binary(ExprOp::Mul, a, b); }
Expr floor_div(const Expr& a, const Expr& b) { return binary(ExprOp::FloorDiv, a, b); }
Expr ceil_div(const Expr& a, const Expr& b) { return binary(ExprOp::CeilDiv, a, b); }
Expr mod(const Expr& a, const Expr& b) { return binary(ExprOp::Mod, a, b); }
Expr min(const Expr& a, const Expr& b) { return binary(ExprOp::Min, a, b); }
Expr max(const Expr& a, const Expr& b) { return binary(ExprOp::Max, a, b); }
Expr lt(const Expr& a, const Expr& b) { return binary(ExprOp::Lt, a, b); }
Expr le(const Expr& a, const Expr& b) { return binary(ExprOp::Le, a, b); }
Expr eq(const Expr& a, const Expr& b) { return binary(ExprOp::Eq, a, b); }

}  // namespace kiln::graph
