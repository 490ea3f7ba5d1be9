// Inlining a producer Body into its consumer; see body_inline.hpp.
#include "graph/body_inline.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/body_copy.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

// ---- the producer's output as a mixed-radix number ----------------------------------------

// The producer's loop variables, outermost digit first, with the stride and extent of each:
// store position = sum of var * stride, a dense cover of [0, output size).
struct Radix {
  std::vector<std::string> vars;
  std::vector<Expr> strides;
  std::vector<Expr> extents;
};

// The coefficients of `e` as a linear function of `vars` (nullopt: not linear, or a coefficient
// that depends on one of them): e = constant + sum of coefficient[v] * v.
struct Linear {
  Expr constant;
  std::map<std::string, Expr> coefficient;
};
std::optional<Linear> linear_in(const Expr& e, const std::vector<std::string>& vars) {
  std::map<std::string, Expr> zero;
  for (const std::string& v : vars) zero[v] = Expr(0);
  Linear out;
  out.constant = substitute(e, zero);
  Expr rebuilt = out.constant;
  for (const std::string& v : vars) {
    std::map<std::string, Expr> unit = zero;
    unit[v] = Expr(1);
    Expr c = simplify(substitute(e, unit) - out.constant);
    if (c == Expr(0)) continue;
    for (const std::string& d : free_dims(c)) {
      for (const std::string& w : vars) {
        if (d == w) return std::nullopt;
      }
    }
    out.coefficient[v] = c;
    rebuilt = rebuilt + c * Expr::dim(v);
  }
  if (!(simplify(e - rebuilt) == Expr(0))) return std::nullopt;
  return out;
}

Radix dense_store(const Body& p) {
  if (p.store_row()) throw UserError("the producer writes rows through an index (Scatter)");
  if (!(p.guard() == Expr(1))) throw UserError("the producer is tiled (its store is guarded)");
  if (p.output_aliases()) throw UserError("the producer writes over one of its inputs");
  std::vector<std::string> vars;
  for (const Loop& l : p.loops()) {
    if (!l.parallel) throw UserError("the producer has a serial loop");
    vars.push_back(l.var);
  }
  std::optional<Linear> lin = linear_in(p.store_index(), vars);
  if (!lin || !(lin->constant == Expr(0))) {
    throw UserError("the producer's store is not linear in its loops");
  }
  // Innermost digit first: stride 1, then each stride the previous one times its extent. A
  // loop of extent 1 may share its stride with the next digit; it goes first.
  std::vector<bool> used(p.loops().size(), false);
  Radix inner_first;
  Expr place(1);
  for (std::size_t n = 0; n < p.loops().size(); ++n) {
    std::optional<std::size_t> pick;
    for (std::size_t j = 0; j < p.loops().size(); ++j) {
      auto c = lin->coefficient.find(vars[j]);
      const Expr stride = c == lin->coefficient.end() ? Expr(0) : c->second;
      const bool matches = stride == place || p.loops()[j].extent == Expr(1);
      if (used[j] || !matches) continue;
      if (!pick || p.loops()[j].extent == Expr(1)) pick = j;
    }
    if (!pick) throw UserError("the producer's store is not a dense row-major cover");
    used[*pick] = true;
    inner_first.vars.push_back(vars[*pick]);
    inner_first.strides.push_back(place);
    inner_first.extents.push_back(p.loops()[*pick].extent);
    place = simplify(place * p.loops()[*pick].extent);
  }
  if (!(simplify(place - p.output_size()) == Expr(0))) {
    throw UserError("the producer's loops do not cover its output");
  }
  Radix out;
  for (std::size_t j = inner_first.vars.size(); j-- > 0;) {
    out.vars.push_back(inner_first.vars[j]);
    out.strides.push_back(inner_first.strides[j]);
    out.extents.push_back(inner_first.extents[j]);
  }
  return out;
}

bool provably_nonnegative(const Expr& e) { return bounds(simplify(e)).lo >= 0; }

// `c / s` when s divides c exactly as polynomials.
std::optional<Expr> exact_quotient(const Expr& c, const Expr& s) {
  Expr q = simplify(floor_div(c, s));
  if (simplify(q * s - c) == Expr(0)) return q;
  return std::nullopt;
}

// The factors of a validity Expr (a product of comparisons).
std::vector<Expr> factors_of(const Expr& valid) {
  return valid.op() == ExprOp::Mul ? valid.args() : std::vector<Expr>{valid};
}

// The range of each loop variable where `valid` holds: [0, extent - 1], narrowed by the
// factors of `valid` that bound the variable alone (`lo <= v`, `v <= hi`, `v < hi`: a pad's or
// a concatenation's mask), so that a load of one half of a concatenation solves exactly.
struct VarRange {
  Expr lo, hi;
};
std::map<std::string, VarRange> valid_ranges(const Expr& valid,
                                             const std::map<std::string, Expr>& extents) {
  std::map<std::string, VarRange> out;
  for (const auto& [v, e] : extents) out[v] = {Expr(0), simplify(e - Expr(1))};
  auto free_of_vars = [&](const Expr& e) {
    for (const std::string& d : free_dims(e)) {
      if (extents.count(d)) return false;
    }
    return true;
  };
  for (const Expr& f : factors_of(valid)) {
    if (f.op() != ExprOp::Le && f.op() != ExprOp::Lt) continue;
    const Expr& a = f.args()[0];
    const Expr& b = f.args()[1];
    const Expr strict(f.op() == ExprOp::Lt ? 1 : 0);
    if (a.op() == ExprOp::Dim && out.count(a.name()) && free_of_vars(b)) {
      const Expr hi = simplify(b - strict);
      Expr& old = out[a.name()].hi;
      if (provably_nonnegative(old - hi)) old = hi;  // the tighter bound
    }
    if (b.op() == ExprOp::Dim && out.count(b.name()) && free_of_vars(a)) {
      const Expr lo = simplify(a + strict);
      Expr& old = out[b.name()].lo;
      if (provably_nonnegative(lo - old)) old = lo;
    }
  }
  return out;
}

// `e` with each max(v, c) of a loop variable v and a constant c replaced by a fresh variable
// (recorded in `clamped`, its range added to `range`).
Expr name_clamps(const Expr& e, const std::map<std::string, Expr>& extents,
                 std::map<std::string, VarRange>& range, std::map<std::string, Expr>& clamped) {
  if (e.op() == ExprOp::Max && e.args().size() == 2) {
    for (std::size_t i = 0; i < 2; ++i) {
      const Expr& v = e.args()[i];
      std::optional<std::int64_t> c = e.args()[1 - i].as_constant();
      if (v.op() != ExprOp::Dim || !extents.count(v.name()) || !c || *c < 0) continue;
      const std::string name = "kiln_clamped_" + v.name() + "_" + std::to_string(*c);
      clamped[name] = e;
      const VarRange& r = range.at(v.name());
      range[name] = {simplify(max(r.lo, Expr(*c))), simplify(max(r.hi, Expr(*c)))};
      return Expr::dim(name);
    }
  }
  if (e.args().empty()) return e;
  std::vector<Expr> args;
  for (const Expr& a : e.args()) args.push_back(name_clamps(a, extents, range, clamped));
  return simplify(Expr::node(e.op(), std::move(args)));
}

// The producer's digits at flat `position` read where `valid` holds, over variables with the
// given extents. Exact digits when proven in range there (see body_inline.hpp): a constant
// offset joins the digit it keeps in range (the second half of a concatenation reads
// o - 32), and a variable that `valid` bounds from below is clamped to that bound in a digit
// that could otherwise be negative (the value there is never used: the consumer's load reads
// 0, and the producer's loads read nothing). The general div/mod form otherwise.
std::vector<Expr> digits_at(const Expr& position, const Expr& valid, const Radix& radix,
                            const std::map<std::string, Expr>& extents) {
  const std::size_t n = radix.vars.size();
  std::map<std::string, VarRange> range = valid_ranges(valid, extents);
  // A variable clamped by an earlier inlining, max(v, c), is a variable of its own here
  // (ranging over [max(c, lo), max(c, hi)]), so that the position stays linear.
  std::map<std::string, Expr> clamped;
  const Expr linear_position = name_clamps(position, extents, range, clamped);
  std::vector<std::string> vars;
  for (const auto& [v, r] : range) vars.push_back(v);
  if (std::optional<Linear> lin = linear_in(linear_position, vars)) {
    std::vector<Expr> digit(n, Expr(0));
    std::vector<Expr> low(n, Expr(0)), high(n, Expr(0));  // each digit's range where valid
    bool exact = true;
    for (const auto& [v, c] : lin->coefficient) {
      bool placed = false;
      for (std::size_t j = 0; j < n && !placed; ++j) {
        std::optional<Expr> k = exact_quotient(c, radix.strides[j]);
        if (!k) continue;
        if (!provably_nonnegative(*k)) break;
        const VarRange& r = range.at(v);
        digit[j] = digit[j] + *k * Expr::dim(v);
        low[j] = low[j] + *k * r.lo;
        high[j] = high[j] + *k * r.hi;
        placed = true;
      }
      exact = exact && placed;
    }
    auto in_range = [&](const std::vector<Expr>& lo, const std::vector<Expr>& hi) {
      for (std::size_t j = 0; j < n; ++j) {
        if (!provably_nonnegative(lo[j]) ||
            !provably_nonnegative(radix.extents[j] - Expr(1) - hi[j])) {
          return false;
        }
      }
      return true;
    };
    if (exact && !(lin->constant == Expr(0))) {
      // The constant joins the first digit whose stride divides it and that it keeps in range.
      bool placed = false;
      for (std::size_t j = 0; j < n && !placed; ++j) {
        std::optional<Expr> k = exact_quotient(lin->constant, radix.strides[j]);
        if (!k) continue;
        std::vector<Expr> lo = low, hi = high;
        lo[j] = lo[j] + *k;
        hi[j] = hi[j] + *k;
        if (!in_range(lo, hi)) continue;
        digit[j] = digit[j] + *k;
        low = std::move(lo);
        high = std::move(hi);
        placed = true;
      }
      exact = placed;
    }
    if (exact && in_range(low, high)) {
      for (Expr& d : digit) {
        d = simplify(substitute(d, clamped));
        if (provably_nonnegative(d)) continue;
        std::map<std::string, Expr> clamp;
        for (const std::string& v : free_dims(d)) {
          auto r = range.find(v);
          if (r != range.end() && !(r->second.lo == Expr(0))) {
            clamp[v] = max(Expr::dim(v), r->second.lo);
          }
        }
        d = simplify(substitute(d, clamp));
      }
      return digit;
    }
  }
  std::vector<Expr> digit;
  for (std::size_t j = 0; j < n; ++j) {
    Expr q = floor_div(position, radix.strides[j]);
    digit.push_back(simplify(j == 0 ? q : mod(q, radix.extents[j])));
  }
  return digit;
}

// Whether node `id` is 0 wherever `valid` is 0, so that an inlined value needs no select
// there: a load that reads nothing there (the inlined producer's loads carry `valid`), a
// select on `valid` of something and 0, and sums, products, maxima, minima, sines and casts
// of such nodes (0 + 0, 0 * 0, sin 0 are 0).
bool zero_where_invalid(const BodyBuilder& b, ScalarId id, const Expr& valid) {
  const Scalar& s = b.scalar(id);
  auto zero = [&](std::size_t k) { return zero_where_invalid(b, s.args[k], valid); };
  switch (s.op) {
    case ScalarOp::Const:
      return s.value == 0.0;
    case ScalarOp::Load: {
      const std::vector<Expr> has = factors_of(s.valid);
      for (const Expr& f : factors_of(valid)) {
        if (std::find(has.begin(), has.end(), f) == has.end()) return false;
      }
      return true;
    }
    case ScalarOp::Select: {
      const Scalar& c = b.scalar(s.args[0]);
      const bool on_valid = c.op == ScalarOp::Index && c.index == valid;
      return zero(2) && (on_valid || zero(1));
    }
    case ScalarOp::Add: case ScalarOp::Mul: case ScalarOp::Max: case ScalarOp::Min:
      return zero(0) && zero(1);
    case ScalarOp::Sin: case ScalarOp::Cast:
      return zero(0);
    default:
      return false;
  }
}

// The Load nodes of `slot` in `body`.
std::vector<ScalarId> loads_of(const Body& body, std::size_t slot) {
  std::vector<ScalarId> out;
  for (ScalarId id = 0; id < body.scalars().size(); ++id) {
    const Scalar& s = body.scalar(id);
    if (s.op == ScalarOp::Load && s.slot == slot) out.push_back(id);
  }
  return out;
}

}  // namespace

Body inline_input(const Body& consumer, std::size_t slot, const Body& producer) {
  if (slot >= consumer.inputs().size()) throw UserError("no input " + std::to_string(slot));
  if (consumer.output_aliases() == slot) {
    throw UserError("input " + std::to_string(slot) + " is the buffer the consumer writes over");
  }
  if (consumer.inputs()[slot] != producer.dtype()) {
    throw UserError("the consumer reads input " + std::to_string(slot) + " as " +
                    std::string(dtype_name(consumer.inputs()[slot])) +
                    " but the producer writes " + std::string(dtype_name(producer.dtype())));
  }
  const Radix radix = dense_store(producer);
  const std::size_t m = producer.inputs().size();

  std::vector<DType> inputs(consumer.inputs().begin(),
                            consumer.inputs().begin() + static_cast<std::ptrdiff_t>(slot));
  inputs.insert(inputs.end(), producer.inputs().begin(), producer.inputs().end());
  inputs.insert(inputs.end(), consumer.inputs().begin() + static_cast<std::ptrdiff_t>(slot) + 1,
                consumer.inputs().end());
  BodyBuilder b(inputs);
  std::map<std::string, Expr> extents;
  for (const Loop& l : consumer.loops()) {
    b.output_loop(l.extent, l.parallel);  // same names (o0, o1, ...) as the consumer's
    extents[l.var] = l.extent;
  }
  BodyCopier outer(b, consumer, {}, [&](std::size_t k) { return k < slot ? k : k + m - 1; },
                   Expr(1), extents);
  outer.inline_slot(slot, [&](const Expr& position, const Expr& valid) {
    const std::vector<Expr> digit = digits_at(position, valid, radix, extents);
    std::map<std::string, Expr> subst;
    for (std::size_t j = 0; j < digit.size(); ++j) subst[radix.vars[j]] = digit[j];
    BodyCopier inner(b, producer, std::move(subst), [&](std::size_t k) { return k + slot; },
                     valid, extents);
    ScalarId value = inner.copy(producer.value());
    // Where the consumer's load read 0 (padding), the inlined value must be 0 too.
    if (valid == Expr(1) || zero_where_invalid(b, value, valid)) return value;
    return b.select(b.index(valid, producer.dtype()), value, b.constant(0, producer.dtype()));
  });
  std::optional<std::size_t> aliases = consumer.output_aliases();
  if (aliases) aliases = *aliases < slot ? *aliases : *aliases + m - 1;
  return outer.finish(aliases);
}

std::optional<std::int64_t> inline_read_factor(const Body& consumer, std::size_t slot,
                                               const Body& producer, bool fold_rows) {
  const std::vector<Loop>& loops = consumer.loops();
  const std::vector<Scalar>& nodes = consumer.scalars();
  auto loop_depth = [&](const Expr& e) {  // 1 + the innermost output loop `e` uses
    std::size_t depth = 0;
    for (const std::string& d : free_dims(e)) {
      for (std::size_t i = 0; i < loops.size(); ++i) {
        if (d == loops[i].var) depth = std::max(depth, i + 1);
      }
    }
    return depth;
  };
  // Where each node runs: backends compute it inside the innermost output loop its subtree
  // uses (ids are topological: operands come first).
  std::vector<std::size_t> depth(nodes.size(), 0);
  std::map<std::string, ScalarId> reduce_of;  // reduction variable -> its Reduce node
  for (ScalarId id = 0; id < nodes.size(); ++id) {
    if (nodes[id].op == ScalarOp::Reduce) reduce_of[nodes[id].var] = id;
  }
  // The reductions each node runs inside: the variables its subtree uses of reductions it
  // does not hold itself (a load in a reduction nested in another runs inside both).
  std::vector<std::set<ScalarId>> inside(nodes.size());
  for (ScalarId id = 0; id < nodes.size(); ++id) {
    const Scalar& s = nodes[id];
    depth[id] = std::max(loop_depth(s.index), loop_depth(s.valid));
    for (ScalarId a : s.args) {
      depth[id] = std::max(depth[id], depth[a]);
      inside[id].insert(inside[a].begin(), inside[a].end());
    }
    for (const Expr* e : {&s.index, &s.valid}) {
      for (const std::string& v : free_dims(*e)) {
        if (auto r = reduce_of.find(v); r != reduce_of.end()) inside[id].insert(r->second);
      }
    }
    if (s.op == ScalarOp::Reduce) inside[id].erase(id);
  }
  // The reduction folded for every column of the innermost loop at once, if any.
  std::optional<ScalarId> folded;
  if (fold_rows && !loops.empty() && loops.back().parallel && loops.back().extent.as_constant() &&
      !consumer.store_row()) {
    for (ScalarId id = 0; id < nodes.size() && !folded; ++id) {
      if (nodes[id].op == ScalarOp::Reduce && depth[id] == loops.size() &&
          loop_depth(nodes[id].extent) < loops.size()) {
        folded = id;
      }
    }
  }
  // A load runs once per iteration of the output loops up to its depth and of the reductions
  // it runs inside; such a reduction runs inside the loops its own subtree needs (the
  // folded one outside the innermost loop, for what does not need it). All loads of the slot
  // together may read no more elements than the producer has.
  Expr reads(0);
  for (ScalarId load : loads_of(consumer, slot)) {
    const std::size_t own =
        std::max(loop_depth(nodes[load].index), loop_depth(nodes[load].valid));
    std::size_t d = own;
    Expr count(1);
    std::set<ScalarId> around;
    for (ScalarId r : inside[load]) {
      around.insert(r);
      around.insert(inside[r].begin(), inside[r].end());
    }
    for (ScalarId r : around) {
      count = count * nodes[r].extent;
      const bool shared = r == folded && own < loops.size();
      d = std::max(d, shared ? depth[r] - 1 : depth[r]);
    }
    for (std::size_t i = 0; i < d; ++i) count = count * loops[i].extent;
    reads = reads + count;
  }
  if (provably_nonnegative(producer.output_size() - reads)) return 1;
  if (std::optional<Expr> q = exact_quotient(reads, producer.output_size())) return q->as_constant();
  return std::nullopt;
}

std::size_t body_compute_nodes(const Body& body) {
  // Only nodes reachable from the value count (a builder may leave dead ones behind).
  std::set<ScalarId> live;
  std::vector<ScalarId> stack{body.value()};
  std::size_t n = 0;
  while (!stack.empty()) {
    ScalarId id = stack.back();
    stack.pop_back();
    if (!live.insert(id).second) continue;
    const Scalar& s = body.scalar(id);
    if (s.op != ScalarOp::Load && s.op != ScalarOp::Const && s.op != ScalarOp::Param) ++n;
    for (ScalarId a : s.args) stack.push_back(a);
  }
  return n;
}

}  // namespace kiln::graph
