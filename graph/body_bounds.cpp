// Static bounds proofs of Body loads and stores by symbolic interval arithmetic; see
// body_bounds.hpp.
#include "graph/body_bounds.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

// Loop variables nest only a few deep; a deeper chain of extents naming variables is a cycle.
constexpr int kMaxDepth = 32;
// The name of a Body access's dynamic row: not an identifier a Body can use (no loop variable
// or dim starts with two underscores).
constexpr const char* kRowVar = "__row";
// The name of the bounded sum of a fact (Prover::range_by_fact).
constexpr const char* kSumVar = "__sum";

// Inclusive symbolic bounds of an Expr.
struct Range {
  Expr lo;
  Expr hi;
};

class Prover {
 public:
  explicit Prover(const DimRanges& ranges) : ranges_(ranges) {}

  // Loop variable `var` ranges over [lo, hi] (inclusive; the Exprs may name other variables).
  void bound(const std::string& var, const Expr& lo, const Expr& hi) { vars_[var] = {lo, hi}; }
  void forget(const std::string& var) { vars_.erase(var); }
  bool is_var(const std::string& name) const { return vars_.count(name) != 0; }

  // Narrows the ranges of variables by a validity mask: a product of comparisons, each of which
  // is 1 wherever the mask is. A factor that bounds one variable with coefficient +-1 narrows it;
  // the others are ignored (the proof then just does not use them).
  void assume_valid(const Expr& valid) {
    if (valid.op() == ExprOp::Mul) {
      for (const Expr& factor : valid.args()) assume_valid(factor);
      return;
    }
    std::optional<Expr> slack;  // an Expr that is >= 0 where the factor is 1
    if (valid.op() == ExprOp::Lt) slack = valid.args()[1] - valid.args()[0] - 1;
    if (valid.op() == ExprOp::Le) slack = valid.args()[1] - valid.args()[0];
    if (!slack) return;
    for (const std::string& name : free_dims(*slack)) {
      if (!is_var(name)) continue;
      // slack = coefficient * var + rest, with rest free of var.
      const Expr rest = without(*slack, name);
      const Expr term = *slack - rest;
      const Expr var = Expr::dim(name);
      Range& r = vars_.at(name);
      const std::vector<std::string> rest_dims = free_dims(rest);
      if (std::find(rest_dims.begin(), rest_dims.end(), name) != rest_dims.end()) continue;
      if (term == var) r.lo = max(r.lo, -rest);        // var + rest >= 0
      else if (term == -var) r.hi = min(r.hi, rest);   // rest - var >= 0
      if (term == -var) add_fact(name, rest, false);
      if (term == var) add_fact(name, rest, true);
    }
  }

  // A bound `var + others <= limit` (from `rest - var >= 0`, rest = limit - others) or
  // `var + others >= limit` (from `var + rest >= 0`, rest = others - limit), kept when the
  // limit is free of variables: a position linear in var + others (a tiled loop's o*T + t, the
  // chunk of a split reduction c*C + r) is bounded through the sum, which interval arithmetic
  // on its terms alone cannot see (their ranges are correlated).
  struct Fact {
    std::string var;
    Expr others;  // the sum's other terms
    Expr limit;   // the sum's bound, free of variables
    bool lower;   // limit <= sum, else sum <= limit
  };
  void add_fact(const std::string& var, const Expr& rest, bool lower) {
    // rest's terms that name variables, and the others (the limit's part).
    Expr named(0);
    Expr free(0);
    for (const Expr& t : rest.op() == ExprOp::Add ? rest.args() : std::vector<Expr>{rest}) {
      bool has_var = false;
      for (const std::string& d : free_dims(t)) has_var = has_var || is_var(d);
      if (has_var) named = named + t;
      else free = free + t;
    }
    if (named == Expr(0)) return;  // a plain bound on var, already narrowed
    if (lower) facts_.push_back(Fact{var, named, -free, true});
    else facts_.push_back(Fact{var, -named, free, false});
  }

  // Bounds of `position` through the facts about the sum of `f`: position = c * (var +
  // others) + y with c and y free of var, the sum in [lowest, highest] of its own range and
  // every fact about it; nullopt when not of that form.
  std::optional<Range> range_by_fact(const Expr& position, const Fact& f) {
    const Expr v = Expr::dim(f.var);
    const Expr slope = position - without(position, f.var);  // c * var when linear in var
    const Expr c = substitute(slope, {{f.var, Expr(1)}});
    for (const std::string& d : free_dims(c)) {
      if (d == f.var) return std::nullopt;
    }
    if (!(c * v == slope)) return std::nullopt;
    const Expr sum = v + f.others;
    const Expr y = position - c * sum;
    for (const std::string& d : free_dims(y)) {
      if (d == f.var) return std::nullopt;
    }
    // The sum's own range: its lowest value with var at its lowest (var's upper bound may be
    // what cannot be bounded alone), its highest where it can be bounded.
    Prover lowest = *this;
    lowest.vars_.at(f.var).hi = lowest.vars_.at(f.var).lo;
    std::optional<Range> low = lowest.range(sum);
    if (!low) return std::nullopt;
    Expr lo = low->lo;
    Prover whole = *this;
    std::optional<Range> own = whole.range(sum);
    std::optional<Expr> hi;
    if (own) hi = own->hi;
    // A fact's limit replaces the sum's own bound (a min or max of the two would be tighter,
    // but interval arithmetic cannot compare it with a buffer's extent).
    // Of several facts, the tighter where both limits are constants, else the first.
    auto tighter = [](const Expr& a, const Expr& b, bool upper) {
      auto ca = a.as_constant(), cb = b.as_constant();
      if (!ca || !cb) return a;
      return Expr(upper ? std::min(*ca, *cb) : std::max(*ca, *cb));
    };
    std::optional<Expr> lo_fact, hi_fact;
    for (const Fact& g : facts_) {
      if (g.var != f.var || !(g.others == f.others)) continue;
      std::optional<Expr>& b = g.lower ? lo_fact : hi_fact;
      b = b ? tighter(*b, g.limit, !g.lower) : g.limit;
    }
    if (lo_fact) lo = *lo_fact;
    if (hi_fact) hi = *hi_fact;
    if (!hi) return std::nullopt;
    Prover with_sum = *this;
    with_sum.bound(kSumVar, lo, *hi);
    return with_sum.range(c * Expr::dim(kSumVar) + y);
  }
  const std::vector<Fact>& facts() const { return facts_; }

  // Bounds of `e` as Exprs free of loop variables, or nullopt with `why_not` set.
  std::optional<Range> range(const Expr& e, int depth = 0) {
    if (depth > kMaxDepth) return fail("the extents of the loops refer to each other");
    switch (e.op()) {
      case ExprOp::Const: return Range{e, e};
      case ExprOp::Dim: {
        auto it = vars_.find(e.name());
        if (it == vars_.end()) return Range{e, e};  // a symbolic dim
        const Range declared = it->second;
        auto lo = range(declared.lo, depth + 1);
        auto hi = range(declared.hi, depth + 1);
        if (!lo || !hi) return std::nullopt;
        return Range{lo->lo, hi->hi};
      }
      case ExprOp::Add: {
        std::optional<Range> sum = range(e.args()[0], depth);
        for (std::size_t i = 1; sum && i < e.args().size(); ++i) {
          auto next = range(e.args()[i], depth);
          if (!next) return std::nullopt;
          sum = Range{sum->lo + next->lo, sum->hi + next->hi};
        }
        return sum;
      }
      case ExprOp::Mul: {
        std::optional<Range> product = range(e.args()[0], depth);
        for (std::size_t i = 1; product && i < e.args().size(); ++i) {
          auto next = range(e.args()[i], depth);
          if (!next) return std::nullopt;
          product = multiply(*product, *next, e);
        }
        return product;
      }
      case ExprOp::FloorDiv: case ExprOp::CeilDiv: {
        auto a = range(e.args()[0], depth);
        auto b = range(e.args()[1], depth);
        if (!a || !b) return std::nullopt;
        if (!at_least(b->lo, 1)) return fail("cannot show that the divisor of `" + to_string(e) +
                                             "` is positive");
        auto divide = [&](const Expr& x, const Expr& y) {
          return e.op() == ExprOp::FloorDiv ? floor_div(x, y) : ceil_div(x, y);
        };
        // Grows with the dividend; for a non-negative dividend shrinks as the divisor grows.
        if (b->lo == b->hi) return Range{divide(a->lo, b->lo), divide(a->hi, b->lo)};
        if (!at_least(a->lo, 0)) return fail("cannot bound `" + to_string(e) + "`");
        return Range{divide(a->lo, b->hi), divide(a->hi, b->lo)};
      }
      case ExprOp::Mod: {
        auto a = range(e.args()[0], depth);
        auto b = range(e.args()[1], depth);
        if (!a || !b) return std::nullopt;
        if (!at_least(b->lo, 1)) return fail("cannot show that the divisor of `" + to_string(e) +
                                             "` is positive");
        // Within one period the value is the dividend; otherwise [0, divisor - 1].
        if (at_least(a->lo, 0) && at_least(b->lo - 1 - a->hi, 0)) return a;
        if (at_least(a->lo, 0)) return Range{Expr(0), min(a->hi, b->hi - 1)};
        return Range{Expr(0), b->hi - 1};
      }
      case ExprOp::Min: case ExprOp::Max: {
        std::optional<Range> acc = range(e.args()[0], depth);
        for (std::size_t i = 1; acc && i < e.args().size(); ++i) {
          auto next = range(e.args()[i], depth);
          if (!next) return std::nullopt;
          acc = e.op() == ExprOp::Min ? Range{min(acc->lo, next->lo), min(acc->hi, next->hi)}
                                      : Range{max(acc->lo, next->lo), max(acc->hi, next->hi)};
        }
        return acc;
      }
      case ExprOp::Lt: case ExprOp::Le: case ExprOp::Eq:
        return Range{Expr(0), Expr(1)};
    }
    return fail("cannot bound `" + to_string(e) + "`");
  }

  // True if `e` (free of loop variables) is >= `k` for every dim >= 1 (or in its given range).
  bool at_least(const Expr& e, std::int64_t k) const {
    const Expr d = e - k;
    for (const std::string& name : free_dims(d)) {
      if (is_var(name)) return false;  // only reached for ranges not yet resolved
    }
    const Interval i = bounds(d, dims_of(d));
    return i.lo != Interval::kNegInf && i.lo >= 0;
  }

  const std::string& why_not() const { return why_not_; }

 private:
  // `e` with variable `name` set to 0.
  static Expr without(const Expr& e, const std::string& name) {
    return substitute(e, {{name, Expr(0)}});
  }

  DimRanges dims_of(const Expr& e) const {
    DimRanges out;
    for (const std::string& name : free_dims(e)) {
      auto it = ranges_.find(name);
      out[name] = it != ranges_.end() ? it->second : Interval::at_least(1);
    }
    return out;
  }

  std::optional<Range> multiply(const Range& a, const Range& b, const Expr& whole) {
    auto scale = [](const Range& r, std::int64_t c) {
      return c >= 0 ? Range{r.lo * c, r.hi * c} : Range{r.hi * c, r.lo * c};
    };
    if (auto c = a.lo.as_constant(); c && a.lo == a.hi) return scale(b, *c);
    if (auto c = b.lo.as_constant(); c && b.lo == b.hi) return scale(a, *c);
    if (at_least(a.lo, 0) && at_least(b.lo, 0)) return Range{a.lo * b.lo, a.hi * b.hi};
    return fail("cannot bound the product `" + to_string(whole) + "` (a factor may be negative)");
  }

  std::nullopt_t fail(std::string why) {
    if (why_not_.empty()) why_not_ = std::move(why);
    return std::nullopt;
  }

  const DimRanges& ranges_;
  std::map<std::string, Range> vars_;
  std::vector<Fact> facts_;
  std::string why_not_;
};

// "" when every position of `index` (+ a row in [0, row_count) times row_stride) lies in
// [0, elements), else why not, naming the access `what`.
std::string prove_access(Prover prover, const std::string& what, const Expr& index,
                         const Expr& elements, const std::optional<Expr>& row_stride = {},
                         const std::optional<Expr>& row_count = {}) {
  Expr position = index;
  if (row_stride) {
    prover.bound(kRowVar, Expr(0), *row_count - 1);
    position = position + Expr::dim(kRowVar) * *row_stride;
  }
  const std::string at = what + " at `" + to_string(position) + "`";
  Prover own = prover;
  std::optional<Range> r = own.range(position);
  // A bound through a sum the validity mask or a reduction's extent bounds, where that proves
  // what the terms' own ranges cannot.
  auto in_bounds = [&](const Range& x) {
    return prover.at_least(x.lo, 0) && prover.at_least(elements - 1 - x.hi, 0);
  };
  for (std::size_t k = 0; k < prover.facts().size() && !(r && in_bounds(*r)); ++k) {
    std::optional<Range> by_fact = prover.range_by_fact(position, prover.facts()[k]);
    if (by_fact && in_bounds(*by_fact)) r = by_fact;
  }
  if (!r) return at + ": " + own.why_not();
  if (!prover.at_least(r->lo, 0)) {
    return at + " may be negative (its lowest position is `" + to_string(r->lo) + "`)";
  }
  if (!prover.at_least(elements - 1 - r->hi, 0)) {
    return at + " may reach position `" + to_string(r->hi) + "`, outside its `" +
           to_string(elements) + "` elements";
  }
  return "";
}

// The live scalars of a Body: those its value and stored row depend on, including the nodes of
// the monoids their reductions use, in increasing id order.
std::set<ScalarId> live_scalars(const Body& body) {
  std::set<ScalarId> live;
  std::vector<ScalarId> work{body.value()};
  if (body.store_row()) work.push_back(*body.store_row());
  while (!work.empty()) {
    const ScalarId id = work.back();
    work.pop_back();
    if (!live.insert(id).second) continue;
    const Scalar& s = body.scalar(id);
    for (ScalarId a : s.args) work.push_back(a);
    if (s.op == ScalarOp::Reduce) {
      const Monoid& m = body.monoids().at(s.slot);
      for (ScalarId x : m.lift) work.push_back(x);
      for (ScalarId x : m.combine) work.push_back(x);
      work.push_back(m.finalize);
    }
  }
  return live;
}

}  // namespace

std::string prove_in_bounds(const Body& body, const std::vector<Expr>& input_elements,
                            const Expr& output_elements, const DimRanges& ranges) {
  KILN_ASSERT(input_elements.size() == body.inputs().size(),
              "prove_in_bounds: one element count per input is needed");
  Prover prover(ranges);
  for (const Loop& loop : body.loops()) prover.bound(loop.var, Expr(0), loop.extent - 1);
  for (const Scalar& s : body.scalars()) {
    if (s.op == ScalarOp::Reduce) prover.bound(s.var, Expr(0), s.extent - 1);
  }
  // A reduction of extent min(a, b, ...) (a split reduction's ragged chunk) bounds its variable
  // by each argument: facts about the sums they name.
  for (const Scalar& s : body.scalars()) {
    if (s.op != ScalarOp::Reduce || s.extent.op() != ExprOp::Min) continue;
    for (const Expr& limit : s.extent.args()) prover.assume_valid(lt(Expr::dim(s.var), limit));
  }
  for (ScalarId id : live_scalars(body)) {
    const Scalar& s = body.scalar(id);
    if (s.op != ScalarOp::Load) continue;
    Prover masked = prover;
    masked.assume_valid(s.valid);
    const std::string what = "load of in" + std::to_string(s.slot);
    const std::string why =
        s.args.empty()
            ? prove_access(masked, what, s.index, input_elements.at(s.slot))
            : prove_access(masked, what, s.index, input_elements.at(s.slot), s.row_stride,
                           s.row_count);
    if (!why.empty()) return why;
  }
  Prover outputs(ranges);
  for (const Loop& loop : body.loops()) outputs.bound(loop.var, Expr(0), loop.extent - 1);
  outputs.assume_valid(body.guard());  // a guarded-off iteration stores nothing
  return body.store_row()
             ? prove_access(outputs, "store", body.store_index(), output_elements,
                            body.store_row_stride(), body.store_row_count())
             : prove_access(outputs, "store", body.store_index(), output_elements);
}

std::string prove_in_bounds(const Body& body, const std::vector<Expr>& input_elements,
                            const DimRanges& ranges) {
  return prove_in_bounds(body, input_elements, body.output_size(), ranges);
}

std::string prove_in_bounds(const StridedAccess& access, const Expr& elements,
                            const DimRanges& ranges) {
  Prover prover(ranges);
  Expr position = access.offset;
  for (std::size_t i = 0; i < access.extents.size(); ++i) {
    const std::string var = "__i" + std::to_string(i);
    prover.bound(var, Expr(0), access.extents[i].first - 1);
    position = position + Expr::dim(var) * access.extents[i].second;
  }
  return prove_access(prover, access.what, position, elements);
}

}  // namespace kiln::graph
