#include "engine/query_plan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>

#include "engine/generic_join.hpp"
#include "engine/query_primitives.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {
namespace {

struct Step {
  std::uint32_t atom = 0;
  RowFilter filter = RowFilter::Any;
  ColumnMask mask = 0;                                  // columns known before this step
  std::vector<std::uint32_t> key;  // those columns, in order (their terms are read from the
                                  // query at run time: cached plans outlive constant values)
  std::vector<std::pair<std::uint32_t, std::uint32_t>> binds;   // (column, var) newly bound
  std::vector<std::pair<std::uint32_t, std::uint32_t>> checks;  // (column, var) repeated in atom
  std::vector<std::uint32_t> primitives;                // evaluable once this step has bound
};

struct Plan {
  std::vector<std::uint32_t> initial_primitives;  // evaluable before any atom
  std::vector<bool> primitive_binds_result;
  std::vector<Step> steps;
  double cost = 0;  // estimated partial matches visited
};



std::size_t rows_in_filter(const Table& t, RowFilter filter, Timestamp since) {
  RowId split = t.first_row_at_or_after(since);
  switch (filter) {
    case RowFilter::New: return t.visible_end() - split;
    case RowFilter::Old: return split;
    case RowFilter::Any: return t.visible_size();
  }
  return t.visible_size();
}

// Expected rows per binding of the bound columns. Builds the index on `mask` if needed: the
// join would use it anyway, and a guess without statistics picks bad orders on e-graphs,
// where a few e-classes own most rows.
// `self_join`: the key is read from the same columns of another row of this table (factoring's
// `(Mul a b)` and `(Mul a c)`); a key is then drawn as a row is, and popular keys come up as
// often as they have rows (rows_per_key_of_a_row). A filter keeps its share of each chain.
double estimate_fanout(Table& t, ColumnMask mask, RowFilter filter, Timestamp since,
                       bool self_join = false) {
  double rows = static_cast<double>(rows_in_filter(t, filter, since));
  if (mask == 0) return rows;
  if (t.num_keys() > 0 && (mask & t.key_mask()) == t.key_mask()) return std::min(rows, 1.0);
  if (self_join && t.visible_size() != 0) {
    double share = std::min(1.0, rows / double(t.visible_size()));
    return std::min(rows, t.index(mask).rows_per_key_of_a_row() * share);
  }
  return std::min(rows, t.index(mask).rows_per_key());
}

// Per atom a: the other atoms u of the same function that hold a variable of a in the same
// column, with those columns. Computed once per plan: the greedy search asks at every step.
using SharedColumns = std::vector<std::vector<std::pair<std::size_t, ColumnMask>>>;
SharedColumns shared_columns(const Query& q) {
  SharedColumns shared(q.atoms.size());
  for (std::size_t a = 0; a < q.atoms.size(); ++a) {
    for (std::size_t u = 0; u < q.atoms.size(); ++u) {
      const QueryAtom& x = q.atoms[a];
      const QueryAtom& y = q.atoms[u];
      if (a == u || x.function != y.function) continue;
      ColumnMask columns = 0;
      for (std::uint32_t c = 0; c < x.columns.size(); ++c) {
        const QueryTerm& s = x.columns[c];
        const QueryTerm& t = y.columns[c];
        if (s.is_var && t.is_var && s.var == t.var) columns |= 1u << c;
      }
      if (columns != 0) shared[a].emplace_back(u, columns);
    }
  }
  return shared;
}

// True if an atom in `used` of the same function as atom `a` holds, in every column of
// `mask` (not empty), the variable that atom `a` holds there: a's key is read from those
// columns of a row of its own table.
bool joins_itself(const SharedColumns& shared, std::size_t a, ColumnMask mask,
                  const std::vector<bool>& used) {
  for (auto [u, columns] : shared[a]) {
    if (used[u] && (mask & ~columns) == 0) return true;
  }
  return false;
}

ColumnMask bound_mask(const QueryAtom& atom, const std::vector<bool>& bound) {
  ColumnMask mask = 0;
  for (std::uint32_t c = 0; c < atom.columns.size(); ++c) {
    if (term_bound(atom.columns[c], bound)) mask |= 1u << c;
  }
  return mask;
}

void bind_atom(const QueryAtom& atom, std::vector<bool>& bound) {
  for (const QueryTerm& t : atom.columns) {
    if (t.is_var) bound[t.var] = true;
  }
}

// A join order and its estimated cost (the number of partial matches it visits).
struct Order {
  std::vector<std::size_t> atoms;
  double cost = 0;
};

// Primitive checks (guards such as `(>= ?m 4)`, or a computed value compared with a bound one)
// that joining `atom` next makes evaluable. Each is assumed to keep this share of the rows,
// so the planner binds a guard's inputs early and a chain that a guard rejects stops there
// instead of being walked to its end first.
constexpr double kCheckSelectivity = 0.5;

int checks_enabled(const Query& q, const QueryAtom& atom, const std::vector<bool>& bound,
                   const std::vector<bool>& done) {
  auto bound_after = [&](const QueryTerm& t) {
    if (term_bound(t, bound)) return true;
    return std::any_of(atom.columns.begin(), atom.columns.end(),
                       [&](const QueryTerm& c) { return c.is_var && c.var == t.var; });
  };
  int checks = 0;
  for (std::size_t p = 0; p < q.primitives.size(); ++p) {
    if (done[p]) continue;
    const QueryPrimitive& prim = q.primitives[p];
    if (std::all_of(prim.args.begin(), prim.args.end(), bound_after) && bound_after(prim.result)) {
      ++checks;
    }
  }
  return checks;
}

// Starting from `first`, repeatedly takes the atom joined on a bound column with the smallest
// estimated fan-out, discounted for the checks it enables (cross products last; ties go to the
// later atom, which reproduces egglog's row order).
Order greedy_order(EGraph& egraph, const Query& q, const SharedColumns& shared,
                   const std::vector<RowFilter>& filters, Timestamp since, std::vector<bool> bound,
                   std::vector<bool> done, std::size_t first) {
  Order order;
  std::vector<bool> used(q.atoms.size(), false);
  std::vector<bool> ignored_binds(q.primitives.size());
  std::vector<std::uint32_t> ignored_out;
  double partial = 1;
  for (std::size_t n = 0; n < q.atoms.size(); ++n) {
    std::size_t best = q.atoms.size();
    bool best_connected = false;
    double best_fanout = 0;
    for (std::size_t a = 0; a < q.atoms.size(); ++a) {
      if (used[a] || (n == 0 && a != first)) continue;
      ColumnMask mask = bound_mask(q.atoms[a], bound);
      double fanout = estimate_fanout(egraph.table(q.atoms[a].function), mask, filters[a], since,
                                      mask != 0 && joins_itself(shared, a, mask, used));
      fanout *= std::pow(kCheckSelectivity, checks_enabled(q, q.atoms[a], bound, done));
      bool connected = mask != 0;
      if (best == q.atoms.size() || (connected && !best_connected) ||
          (connected == best_connected && fanout <= best_fanout)) {
        best = a;
        best_connected = connected;
        best_fanout = fanout;
      }
    }
    used[best] = true;
    order.atoms.push_back(best);
    partial *= std::max(best_fanout, 1e-3);
    order.cost += partial;
    bind_atom(q.atoms[best], bound);
    schedule_primitives(q, bound, done, ignored_binds, ignored_out);
  }
  return order;
}

// Builds the join plan for one semi-naive variant: the cheapest of the greedy orders that
// start from each atom.
Plan make_plan(EGraph& egraph, const Query& q, const std::vector<RowFilter>& filters,
               Timestamp since) {
  Plan plan;
  std::vector<bool> bound(q.num_vars(), false);
  std::vector<bool> done(q.primitives.size(), false);
  plan.primitive_binds_result.assign(q.primitives.size(), false);
  schedule_primitives(q, bound, done, plan.primitive_binds_result, plan.initial_primitives);

  // Greedy orders from a few starts: a semi-naive variant's delta atom (usually a few rows)
  // and the atoms with the fewest rows. Trying every start costs O(atoms^3) estimates per
  // plan, which dominated planning on 30-atom rules.
  constexpr std::size_t kSmallestStarts = 3;
  std::vector<std::pair<double, std::size_t>> by_rows;
  for (std::size_t a = 0; a < q.atoms.size(); ++a) {
    by_rows.emplace_back(double(rows_in_filter(egraph.table(q.atoms[a].function), filters[a], since)), a);
  }
  std::stable_sort(by_rows.begin(), by_rows.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::size_t> starts;
  auto delta = std::find(filters.begin(), filters.end(), RowFilter::New);
  if (delta != filters.end()) starts.push_back(static_cast<std::size_t>(delta - filters.begin()));
  for (std::size_t k = 0; k < by_rows.size() && k < kSmallestStarts; ++k) starts.push_back(by_rows[k].second);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  // Estimates are coarse: the delta start wins unless another is clearly cheaper. It walks only
  // new rows, and the rows its matches create stay grouped the way the delta was (which keeps
  // repeated matches close together, see repeated_matches.hpp).
  constexpr double kClearlyCheaper = 0.9;
  Order best_order;
  std::optional<Order> delta_order;
  SharedColumns shared = shared_columns(q);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    Order order = greedy_order(egraph, q, shared, filters, since, bound, done, starts[k]);
    if (delta != filters.end() && starts[k] == std::size_t(delta - filters.begin())) delta_order = order;
    if (k == 0 || order.cost <= best_order.cost) best_order = std::move(order);
  }
  if (delta_order && kClearlyCheaper * delta_order->cost <= best_order.cost) best_order = std::move(*delta_order);

  plan.cost = best_order.cost;
  for (std::size_t best : best_order.atoms) {
    const QueryAtom& atom = q.atoms[best];
    Step step;
    step.atom = static_cast<std::uint32_t>(best);
    step.filter = filters[best];
    std::vector<bool> bound_here = bound;
    for (std::uint32_t c = 0; c < atom.columns.size(); ++c) {
      const QueryTerm& t = atom.columns[c];
      if (term_bound(t, bound)) {
        step.mask |= 1u << c;
        step.key.push_back(c);
      } else if (!bound_here[t.var]) {
        bound_here[t.var] = true;
        step.binds.emplace_back(c, t.var);
      } else {
        step.checks.emplace_back(c, t.var);
      }
    }
    bound = bound_here;
    schedule_primitives(q, bound, done, plan.primitive_binds_result, step.primitives);
    plan.steps.push_back(std::move(step));
  }
  KILN_ASSERT(std::all_of(done.begin(), done.end(), [](bool d) { return d; }),
              "query has a primitive whose inputs are never bound");
  return plan;
}

class Executor {
 public:
  Executor(EGraph& egraph, const Query& query, const Plan& plan, SearchWindow window,
           const std::vector<RowId>& splits, const MatchSink& sink)
      : egraph_(egraph), query_(query), plan_(plan), window_(window), sink_(sink),
        vars_(query.num_vars(), 0) {
    for (const Step& step : plan.steps) {
      Table& t = egraph.table(query.atoms[step.atom].function);
      tables_.push_back(&t);
      // All keys bound: the primary index finds the one row; no secondary index needed.
      bool unique = t.num_keys() > 0 && (step.mask & t.key_mask()) == t.key_mask();
      unique_.push_back(unique);
      indexes_.push_back(step.mask && !unique ? &t.index(step.mask) : nullptr);
      splits_.push_back(splits[step.atom]);
    }
  }

  bool run() {
    if (!eval_primitives(plan_.initial_primitives)) return true;
    return run_step(0);
  }

 private:
  Value value_of(const QueryTerm& t) const { return t.is_var ? vars_[t.var] : t.constant; }

  bool eval_primitives(const std::vector<std::uint32_t>& ids) {
    return eval_query_primitives(query_, ids, plan_.primitive_binds_result, vars_);
  }

  bool accept_row(std::size_t i, RowId r) {
    const Step& step = plan_.steps[i];
    const Table& t = *tables_[i];
    if (!t.alive(r) || (t.subsumed(r) && !window_.include_subsumed)) return false;
    if (step.filter == RowFilter::New && r < splits_[i]) return false;
    if (step.filter == RowFilter::Old && r >= splits_[i]) return false;
    const Value* row = t.row(r);
    for (auto [column, var] : step.binds) vars_[var] = row[column];
    for (auto [column, var] : step.checks) {
      if (row[column] != vars_[var]) return false;
    }
    return true;
  }

  bool finish_step(std::size_t i) {
    if (!eval_primitives(plan_.steps[i].primitives)) return true;
    return run_step(i + 1);
  }

  bool run_step(std::size_t i) {
    if (i == plan_.steps.size()) return sink_(vars_.data());
    const Step& step = plan_.steps[i];
    const Table& t = *tables_[i];
    if (step.mask == 0) {
      RowId begin = step.filter == RowFilter::New ? splits_[i] : 0;
      RowId end = step.filter == RowFilter::Old ? splits_[i] : t.visible_end();
      for (RowId r = begin; r < end; ++r) {
        if (accept_row(i, r) && !finish_step(i)) return false;
      }
      return true;
    }
    Value key[kMaxColumns];
    const QueryAtom& atom = query_.atoms[step.atom];
    for (std::size_t k = 0; k < step.key.size(); ++k) key[k] = value_of(atom.columns[step.key[k]]);
    if (unique_[i]) {
      // key[] holds the key columns in order, then the output if it is bound too.
      RowId r = t.find_visible(key);
      if (r == kNoRow) return true;
      if (step.key.size() > t.num_keys() && t.output(r) != key[t.num_keys()]) return true;
      return !accept_row(i, r) || finish_step(i);
    }
    RowId from = step.filter == RowFilter::New ? splits_[i] : 0;
    RowId to = step.filter == RowFilter::Old ? splits_[i] : kNoRow;
    return t.for_each_row(*indexes_[i], key,
                          [&](RowId r) { return !accept_row(i, r) || finish_step(i); }, from, to);
  }

  EGraph& egraph_;
  const Query& query_;
  const Plan& plan_;
  SearchWindow window_;
  const MatchSink& sink_;
  std::vector<Value> vars_;
  std::vector<Table*> tables_;
  std::vector<const ColumnIndex*> indexes_;
  std::vector<bool> unique_;
  std::vector<RowId> splits_;
};

Value canonical_constant(EGraph& egraph, const QueryTerm& t) {
  return t.container_sort ? egraph.canonical(*t.container_sort, t.constant) : egraph.find(t.constant);
}

// Constant e-class ids (globals) may have been merged since the rule was compiled.
Query with_canonical_constants(EGraph& egraph, const Query& query) {
  Query q = query;
  auto fix = [&](QueryTerm& t) {
    if (!t.is_var && t.eq_sort) t.constant = canonical_constant(egraph, t);
  };
  for (QueryAtom& atom : q.atoms) std::for_each(atom.columns.begin(), atom.columns.end(), fix);
  for (QueryPrimitive& prim : q.primitives) {
    std::for_each(prim.args.begin(), prim.args.end(), fix);
    fix(prim.result);
  }
  return q;
}

bool has_eq_constants(const Query& query) {
  auto eq = [](const QueryTerm& t) { return !t.is_var && t.eq_sort; };
  for (const QueryAtom& atom : query.atoms) {
    if (std::any_of(atom.columns.begin(), atom.columns.end(), eq)) return true;
  }
  for (const QueryPrimitive& prim : query.primitives) {
    if (std::any_of(prim.args.begin(), prim.args.end(), eq) || eq(prim.result)) return true;
  }
  return false;
}

// Rows of each atom's table in one semi-naive variant's filter, from the split points.
std::vector<double> filter_rows(EGraph& egraph, const Query& q, const std::vector<RowFilter>& filters,
                                const std::vector<RowId>& splits) {
  std::vector<double> rows(q.atoms.size());
  for (std::size_t a = 0; a < q.atoms.size(); ++a) {
    const Table& t = egraph.table(q.atoms[a].function);
    switch (filters[a]) {
      case RowFilter::New: rows[a] = double(t.visible_end() - splits[a]); break;
      case RowFilter::Old: rows[a] = double(splits[a]); break;
      case RowFilter::Any: rows[a] = double(t.visible_size()); break;
    }
  }
  return rows;
}

}  // namespace

// What a query's searches reuse: its shape (cyclic or not, any e-class constants), computed
// once, and per semi-naive variant (slot n: the full search) a join plan with the row counts
// it was planned for. A plan is reused until one of its atoms' row counts moves by more than 2x.
class PlanCache {
 public:
  void learn(const Query& q) {
    if (known_) return;
    known_ = true;
    cyclic_ = has_cyclic_atoms(q);
    eq_constants_ = has_eq_constants(q);
  }
  bool cyclic() const { return cyclic_; }
  bool eq_constants() const { return eq_constants_; }

  const Plan& nested_loop(EGraph& egraph, const Query& q, const std::vector<RowFilter>& filters,
                          Timestamp since, const std::vector<RowId>& splits, std::size_t variant) {
    Entry& e = entry(variant);
    std::vector<double> rows = filter_rows(egraph, q, filters, splits);
    if (!e.plan || !similar(rows, e.rows)) {
      e.plan = make_plan(egraph, q, filters, since);
      e.rows = std::move(rows);
    }
    return *e.plan;
  }

  // For a cyclic query: the generic-join plan, or none when the nested-loop plan is expected
  // to visit few more partial matches than the atoms hold rows. The generic join only pays
  // where a join of two atoms has many pairs that a third rejects (large fan-outs); on
  // e-graph cycles such as `(Add (Mul a b) (Mul a c))` fan-outs are ~1 and its per-value
  // bookkeeping costs more than the nested loop's rejected rows.
  GenericJoinPlan* generic(EGraph& egraph, const Query& q, const std::vector<RowFilter>& filters,
                           Timestamp since, const std::vector<RowId>& splits, std::size_t variant) {
    Entry& e = entry(variant);
    std::vector<double> rows = filter_rows(egraph, q, filters, splits);
    if (!e.plan || !similar(rows, e.rows)) {
      e.plan = make_plan(egraph, q, filters, since);
      double input = 0;
      for (double r : rows) input += r;
      e.generic = e.plan->cost > kGenericJoinAbove * (input + 1)
                      ? plan_generic_join(egraph, q, filters, since)
                      : nullptr;
      e.rows = std::move(rows);
    }
    return e.generic.get();
  }
  const Plan& current(std::size_t variant) { return *entry(variant).plan; }

 private:
  struct Entry {
    std::optional<Plan> plan;
    std::shared_ptr<GenericJoinPlan> generic;
    std::vector<double> rows;
  };
  Entry& entry(std::size_t variant) {
    if (entries_.size() <= variant) entries_.resize(variant + 1);
    return entries_[variant];
  }
  // Counts this small all get the same plans, so a delta that moves between 1 and 20 rows
  // from one iteration to the next does not replan.
  static constexpr double kSmallRows = 32;
  static constexpr double kGenericJoinAbove = 32;
  static bool similar(const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      double ratio = (a[i] + kSmallRows) / (b[i] + kSmallRows);
      if (ratio > 2 || ratio < 0.5) return false;
    }
    return true;
  }
  bool known_ = false;
  bool cyclic_ = false;
  bool eq_constants_ = false;
  std::vector<Entry> entries_;
};

std::shared_ptr<PlanCache> make_plan_cache() { return std::make_shared<PlanCache>(); }

namespace {

bool run_variant(EGraph& egraph, const Query& query, PlanCache& plans,
                 const std::vector<RowFilter>& filters, SearchWindow window,
                 const std::vector<RowId>& splits, std::size_t variant, const MatchSink& sink) {
  // Cyclic queries (triangles) run as a generic join, which is worst-case optimal on them.
  if (plans.cyclic()) {
    GenericJoinPlan* plan = plans.generic(egraph, query, filters, window.since, splits, variant);
    if (plan) return run_generic_join(egraph, query, *plan, filters, window, splits, sink);
    return Executor(egraph, query, plans.current(variant), window, splits, sink).run();
  }
  const Plan& plan = plans.nested_loop(egraph, query, filters, window.since, splits, variant);
  return Executor(egraph, query, plan, window, splits, sink).run();
}

}  // namespace

bool search(EGraph& egraph, const Query& query_in, SearchWindow window, const MatchSink& sink,
            PlanCache* cache, const std::function<void()>& variant_done) {
  PrimitiveContextScope context(egraph, /*may_insert=*/false);
  PlanCache local;
  PlanCache& plans = cache ? *cache : local;
  plans.learn(query_in);
  std::optional<Query> canonical;
  if (plans.eq_constants()) canonical = with_canonical_constants(egraph, query_in);
  const Query& query = canonical ? *canonical : query_in;
  std::size_t n = query.atoms.size();
  if (window.since == 0 || n == 0) {
    if (n == 0 && window.since != 0) return true;  // atom-free rules fire once
    std::vector<RowFilter> filters(n, RowFilter::Any);
    std::vector<RowId> splits(n, 0);
    if (!run_variant(egraph, query, plans, filters, window, splits, n, sink)) return false;
    if (variant_done) variant_done();
    return true;
  }
  std::vector<RowId> splits(n);
  bool any_new = false;
  for (std::size_t i = 0; i < n; ++i) {
    const Table& t = egraph.table(query.atoms[i].function);
    splits[i] = t.first_row_at_or_after(window.since);
    any_new = any_new || splits[i] != t.visible_end();
  }
  if (!any_new) return true;
  std::vector<RowFilter> filters(n, RowFilter::Any);
  for (std::size_t i = 0; i < n; ++i) {
    const Table& t = egraph.table(query.atoms[i].function);
    if (splits[i] == t.visible_end()) continue;  // nothing new here
    for (std::size_t j = 0; j < n; ++j) filters[j] = j < i ? RowFilter::Old : RowFilter::Any;
    filters[i] = RowFilter::New;
    if (!run_variant(egraph, query, plans, filters, window, splits, i, sink)) return false;
    if (variant_done) variant_done();
  }
  return true;
}

bool canonical_constants_moved(EGraph& egraph, const Query& query, std::vector<Value>& seen) {
  std::vector<Value> now;
  auto visit = [&](const QueryTerm& t) {
    if (!t.is_var && t.eq_sort) now.push_back(canonical_constant(egraph, t));
  };
  for (const QueryAtom& atom : query.atoms) std::for_each(atom.columns.begin(), atom.columns.end(), visit);
  for (const QueryPrimitive& prim : query.primitives) {
    std::for_each(prim.args.begin(), prim.args.end(), visit);
    visit(prim.result);
  }
  bool moved = !seen.empty() && now != seen;
  seen = std::move(now);
  return moved;
}

bool has_match(EGraph& egraph, const Query& query) {
  bool found = false;
  search(egraph, query, SearchWindow{0, true}, [&](const Value*) {
    found = true;
    return false;
  });
  return found;
}

}  // namespace kiln::engine
