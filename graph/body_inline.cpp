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

// The producer's digits at flat `position`, over variables with the given extents. Exact
// digits when proven in range (see body_inline.hpp), the general div/mod form otherwise.
std::vector<Expr> digits_at(const Expr& position, const Radix& radix,
                            const std::map<std::string, Expr>& extents) {
  const std::size_t n = radix.vars.size();
  std::vector<std::string> vars;
  for (const auto& [v, e] : extents) vars.push_back(v);
  if (std::optional<Linear> lin = linear_in(position, vars)) {
    std::vector<Expr> digit(n, Expr(0));
    std::vector<Expr> high(n, Expr(0));  // the largest value of each digit
    bool exact = true;
    auto place = [&](const Expr& coefficient, const Expr& var, const Expr& var_max) {
      for (std::size_t j = 0; j < n; ++j) {
        std::optional<Expr> k = exact_quotient(coefficient, radix.strides[j]);
        if (!k) continue;
        if (!provably_nonnegative(*k)) return false;
        digit[j] = digit[j] + *k * var;
        high[j] = high[j] + *k * var_max;
        return true;
      }
      return false;
    };
    if (!(lin->constant == Expr(0))) exact = place(lin->constant, Expr(1), Expr(1));
    for (const auto& [v, c] : lin->coefficient) {
      if (!exact) break;
      exact = place(c, Expr::dim(v), extents.at(v) - Expr(1));
    }
    for (std::size_t j = 0; exact && j < n; ++j) {
      exact = provably_nonnegative(radix.extents[j] - Expr(1) - high[j]);
    }
    if (exact) {
      for (Expr& d : digit) d = simplify(d);
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
    const std::vector<Expr> digit = digits_at(position, radix, extents);
    std::map<std::string, Expr> subst;
    for (std::size_t j = 0; j < digit.size(); ++j) subst[radix.vars[j]] = digit[j];
    BodyCopier inner(b, producer, std::move(subst), [&](std::size_t k) { return k + slot; },
                     valid, extents);
    ScalarId value = inner.copy(producer.value());
    if (valid == Expr(1)) return value;
    // Where the consumer's load read 0 (padding), the inlined value must be 0 too.
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
