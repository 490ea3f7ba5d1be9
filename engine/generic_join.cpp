#include "engine/generic_join.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "engine/query_primitives.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {
namespace {


ColumnMask all_columns(const QueryAtom& atom) {
  return atom.columns.size() >= 32 ? ~ColumnMask{0} : (ColumnMask{1} << atom.columns.size()) - 1;
}

ColumnMask bound_mask(const QueryAtom& atom, const std::vector<bool>& bound) {
  ColumnMask mask = 0;
  for (std::uint32_t c = 0; c < atom.columns.size(); ++c) {
    if (term_bound(atom.columns[c], bound)) mask |= ColumnMask{1} << c;
  }
  return mask;
}

ColumnMask var_mask(const QueryAtom& atom, std::uint32_t var) {
  ColumnMask mask = 0;
  for (std::uint32_t c = 0; c < atom.columns.size(); ++c) {
    if (atom.columns[c].is_var && atom.columns[c].var == var) mask |= ColumnMask{1} << c;
  }
  return mask;
}

// All keys bound: the primary index finds the one row, no secondary index is needed.
bool unique_lookup(const Table& t, ColumnMask mask) {
  return t.num_keys() > 0 && (mask & t.key_mask()) == t.key_mask();
}

// The index a lookup on `mask` walks: none for a scan (empty mask) or a primary-index lookup.
const ColumnIndex* index_for(Table& t, ColumnMask mask) {
  return mask != 0 && !unique_lookup(t, mask) ? &t.index(mask) : nullptr;
}


// Expected rows per binding of the bound columns (the planner's guess for choosing the next
// variable; the join itself counts the actual rows).
double estimate_rows(Table& t, ColumnMask mask, RowFilter filter, Timestamp since) {
  RowId split = t.first_row_at_or_after(since);
  double rows = filter == RowFilter::New   ? double(t.visible_end() - split)
                : filter == RowFilter::Old ? double(split)
                                           : double(t.visible_size());
  if (mask == 0) return rows;
  if (unique_lookup(t, mask)) return std::min(rows, 1.0);
  return std::min(rows, t.index(mask).rows_per_key());
}

// One atom that contains a level's variable.
struct Participant {
  std::uint32_t atom = 0;
  ColumnMask before = 0;  // columns known before the level (constants, earlier variables)
  ColumnMask with = 0;    // those plus the columns holding the level's variable
  std::uint32_t column = 0;  // the first column holding the variable
  bool completes = false;    // `with` is every column: distinct rows give distinct values
  const ColumnIndex* before_index = nullptr;
  const ColumnIndex* with_index = nullptr;
};

// An atom all of whose columns became known without a level intersecting it (a ground atom,
// or one whose last variables a primitive binds): it only needs a row to exist.
struct Check {
  std::uint32_t atom = 0;
  ColumnMask mask = 0;
  const ColumnIndex* index = nullptr;
};

struct Level {
  std::uint32_t var = 0;
  std::vector<Participant> atoms;
  std::vector<std::uint32_t> primitives;  // evaluable once the variable is bound
  std::vector<Check> checks;              // atoms completed by those primitives
};

}  // namespace

struct GenericJoinPlan {
  std::vector<std::uint32_t> initial_primitives;
  std::vector<Check> initial_checks;
  std::vector<bool> primitive_binds_result;
  std::vector<Level> levels;
};

namespace {

using Plan = GenericJoinPlan;

// Points the plan's index pointers at the current tables' indexes, brought up to date.
void refresh_indexes(EGraph& egraph, const Query& q, Plan& plan) {
  auto fix_check = [&](Check& c) { c.index = index_for(egraph.table(q.atoms[c.atom].function), c.mask); };
  std::for_each(plan.initial_checks.begin(), plan.initial_checks.end(), fix_check);
  for (Level& level : plan.levels) {
    for (Participant& p : level.atoms) {
      Table& t = egraph.table(q.atoms[p.atom].function);
      p.before_index = index_for(t, p.before);
      p.with_index = index_for(t, p.with);
    }
    std::for_each(level.checks.begin(), level.checks.end(), fix_check);
  }
}

// Orders the variables: next is one sharing an atom with a bound column (if any), with the
// fewest estimated candidates; primitives and existence checks go right after the variable
// that completes their inputs.
Plan make_plan(EGraph& egraph, const Query& q, const std::vector<RowFilter>& filters,
               Timestamp since) {
  Plan plan;
  std::vector<bool> bound(q.num_vars(), false);
  std::vector<bool> done(q.primitives.size(), false);
  std::vector<bool> complete(q.atoms.size(), false);
  plan.primitive_binds_result.assign(q.primitives.size(), false);
  auto newly_complete = [&](std::vector<Check>& out) {
    for (std::uint32_t a = 0; a < q.atoms.size(); ++a) {
      const QueryAtom& atom = q.atoms[a];
      if (complete[a] || bound_mask(atom, bound) != all_columns(atom)) continue;
      complete[a] = true;
      ColumnMask mask = all_columns(atom);
      out.push_back({a, mask, index_for(egraph.table(atom.function), mask)});
    }
  };
  schedule_primitives(q, bound, done, plan.primitive_binds_result, plan.initial_primitives);
  newly_complete(plan.initial_checks);

  for (;;) {
    std::uint32_t best = q.num_vars();
    bool best_connected = false;
    double best_rows = 0;
    for (std::uint32_t v = 0; v < q.num_vars(); ++v) {
      if (bound[v]) continue;
      bool in_atom = false, connected = false;
      double rows = std::numeric_limits<double>::infinity();
      for (std::uint32_t a = 0; a < q.atoms.size(); ++a) {
        const QueryAtom& atom = q.atoms[a];
        if (var_mask(atom, v) == 0) continue;
        in_atom = true;
        ColumnMask mask = bound_mask(atom, bound);
        connected = connected || mask != 0;
        rows = std::min(rows, estimate_rows(egraph.table(atom.function), mask, filters[a], since));
      }
      if (!in_atom) continue;
      if (best == q.num_vars() || (connected && !best_connected) ||
          (connected == best_connected && rows < best_rows)) {
        best = v;
        best_connected = connected;
        best_rows = rows;
      }
    }
    if (best == q.num_vars()) break;

    Level level;
    level.var = best;
    for (std::uint32_t a = 0; a < q.atoms.size(); ++a) {
      const QueryAtom& atom = q.atoms[a];
      ColumnMask columns = var_mask(atom, best);
      if (columns == 0) continue;
      Table& t = egraph.table(atom.function);
      Participant p;
      p.atom = a;
      p.before = bound_mask(atom, bound);
      p.with = p.before | columns;
      p.column = static_cast<std::uint32_t>(std::countr_zero(columns));
      p.completes = p.with == all_columns(atom);
      p.before_index = index_for(t, p.before);
      p.with_index = index_for(t, p.with);
      level.atoms.push_back(p);
    }
    bound[best] = true;
    for (const Participant& p : level.atoms) {
      if (p.with == all_columns(q.atoms[p.atom])) complete[p.atom] = true;
    }
    schedule_primitives(q, bound, done, plan.primitive_binds_result, level.primitives);
    newly_complete(level.checks);
    plan.levels.push_back(std::move(level));
  }
  KILN_ASSERT(std::all_of(done.begin(), done.end(), [](bool d) { return d; }),
              "query has a primitive whose inputs are never bound");
  KILN_ASSERT(std::all_of(complete.begin(), complete.end(), [](bool c) { return c; }),
              "generic join left an atom unchecked");
  return plan;
}

class Joiner {
 public:
  Joiner(EGraph& egraph, const Query& query, const Plan& plan,
         const std::vector<RowFilter>& filters, SearchWindow window, const MatchSink& sink,
         const std::vector<RowId>* splits = nullptr)
      : query_(query), plan_(plan), filters_(filters), window_(window), sink_(sink),
        vars_(query.num_vars(), 0), candidates_(plan.levels.size()) {
    for (std::size_t a = 0; a < query.atoms.size(); ++a) {
      Table& t = egraph.table(query.atoms[a].function);
      tables_.push_back(&t);
      splits_.push_back(splits ? (*splits)[a] : t.first_row_at_or_after(window.since));
    }
  }

  bool run() {
    if (!eval_primitives(plan_.initial_primitives) || !checks_pass(plan_.initial_checks)) {
      return true;
    }
    return run_level(0);
  }

 private:
  Value value_of(const QueryTerm& t) const { return t.is_var ? vars_[t.var] : t.constant; }

  bool eval_primitives(const std::vector<std::uint32_t>& ids) {
    return eval_query_primitives(query_, ids, plan_.primitive_binds_result, vars_);
  }

  // The values of the atom's `mask` columns, in column order (an index key).
  void make_key(std::uint32_t a, ColumnMask mask, Value* key) const {
    const QueryAtom& atom = query_.atoms[a];
    std::size_t n = 0;
    for (std::uint32_t c = 0; c < atom.columns.size(); ++c) {
      if ((mask >> c) & 1) key[n++] = value_of(atom.columns[c]);
    }
  }

  // Live, visible to this search, and in the atom's semi-naive row range.
  bool usable(std::uint32_t a, RowId r) const {
    const Table& t = *tables_[a];
    if (!t.alive(r) || (t.subsumed(r) && !window_.include_subsumed)) return false;
    if (filters_[a] == RowFilter::New && r < splits_[a]) return false;
    if (filters_[a] == RowFilter::Old && r >= splits_[a]) return false;
    return true;
  }

  // Calls f(row) for each usable row of atom `a` whose `mask` columns hold key[] (a scan when
  // the mask is empty); returns false as soon as f does.
  template <class F>
  bool for_each_row(std::uint32_t a, ColumnMask mask, const ColumnIndex* index, const Value* key,
                    F&& f) const {
    const Table& t = *tables_[a];
    if (mask == 0) {
      RowId begin = filters_[a] == RowFilter::New ? splits_[a] : 0;
      RowId end = filters_[a] == RowFilter::Old ? splits_[a] : t.visible_end();
      for (RowId r = begin; r < end; ++r) {
        if (usable(a, r) && !f(r)) return false;
      }
      return true;
    }
    if (index == nullptr) {
      // key[] holds the key columns in order, then the output if it is bound too.
      RowId r = t.find_visible(key);
      if (r == kNoRow) return true;
      if (((mask >> t.num_keys()) & 1) && t.output(r) != key[t.num_keys()]) return true;
      return !usable(a, r) || f(r);
    }
    RowId from = filters_[a] == RowFilter::New ? splits_[a] : 0;
    RowId to = filters_[a] == RowFilter::Old ? splits_[a] : kNoRow;
    return t.for_each_row(*index, key, [&](RowId r) { return !usable(a, r) || f(r); }, from, to);
  }

  bool exists(std::uint32_t a, ColumnMask mask, const ColumnIndex* index) const {
    Value key[kMaxColumns];
    make_key(a, mask, key);
    bool found = false;
    for_each_row(a, mask, index, key, [&](RowId) {
      found = true;
      return false;
    });
    return found;
  }

  bool checks_pass(const std::vector<Check>& checks) const {
    return std::all_of(checks.begin(), checks.end(),
                       [&](const Check& c) { return exists(c.atom, c.mask, c.index); });
  }

  // Usable rows matching the bound prefix, counted up to `cap` (the smallest count so far:
  // counting a bigger atom further would not change the choice).
  std::size_t count_rows(const Participant& p, std::size_t cap) const {
    if (p.before == 0) {
      RowFilter filter = filters_[p.atom];
      RowId begin = filter == RowFilter::New ? splits_[p.atom] : 0;
      RowId end = filter == RowFilter::Old ? splits_[p.atom] : tables_[p.atom]->visible_end();
      return end - begin;
    }
    Value key[kMaxColumns];
    make_key(p.atom, p.before, key);
    std::size_t n = 0;
    for_each_row(p.atom, p.before, p.before_index, key, [&](RowId) { return ++n < cap; });
    return n;
  }

  bool run_level(std::size_t i) {
    if (i == plan_.levels.size()) return sink_(vars_.data());
    const Level& level = plan_.levels[i];
    // Candidate values come from the atom with the fewest rows for the bound prefix.
    std::size_t source = 0;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (std::size_t k = 0; k < level.atoms.size() && fewest > 0 && level.atoms.size() > 1; ++k) {
      std::size_t n = count_rows(level.atoms[k], fewest);
      if (n < fewest) {
        fewest = n;
        source = k;
      }
    }
    if (fewest == 0) return true;  // (a lone atom is not counted: it is the source anyway)

    const Participant& from = level.atoms[source];
    std::vector<Value>& values = candidates_[i];
    values.clear();
    Value key[kMaxColumns];
    make_key(from.atom, from.before, key);
    const Table& t = *tables_[from.atom];
    ColumnMask repeats = (from.with & ~from.before) & ~(ColumnMask{1} << from.column);
    for_each_row(from.atom, from.before, from.before_index, key, [&](RowId r) {
      const Value* row = t.row(r);
      Value v = row[from.column];
      for (std::uint32_t c = 0; c < query_.atoms[from.atom].columns.size(); ++c) {
        if (((repeats >> c) & 1) && row[c] != v) return true;
      }
      values.push_back(v);
      return true;
    });
    // Rows that differ only in later variables give the same value: each value once, so each
    // assignment (hence each combination of rows) is produced once. Live rows are distinct, so
    // when the variable completes the source atom its values are distinct already.
    if (!from.completes) {
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
    }

    for (Value v : values) {
      vars_[level.var] = v;
      bool ok = true;
      for (std::size_t k = 0; k < level.atoms.size() && ok; ++k) {
        const Participant& p = level.atoms[k];
        if (k != source) ok = exists(p.atom, p.with, p.with_index);
      }
      if (!ok || !eval_primitives(level.primitives) || !checks_pass(level.checks)) continue;
      if (!run_level(i + 1)) return false;
    }
    return true;
  }

  const Query& query_;
  const Plan& plan_;
  const std::vector<RowFilter>& filters_;
  SearchWindow window_;
  const MatchSink& sink_;
  std::vector<Value> vars_;
  std::vector<std::vector<Value>> candidates_;  // per level, reused across prefixes
  std::vector<const Table*> tables_;
  std::vector<RowId> splits_;
};

}  // namespace

bool has_cyclic_atoms(const Query& query) {
  std::vector<std::vector<std::uint32_t>> edges;
  for (const QueryAtom& atom : query.atoms) {
    std::vector<std::uint32_t> edge;
    for (const QueryTerm& t : atom.columns) {
      if (t.is_var) edge.push_back(t.var);
    }
    std::sort(edge.begin(), edge.end());
    edge.erase(std::unique(edge.begin(), edge.end()), edge.end());
    edges.push_back(std::move(edge));
  }
  // GYO reduction: drop variables that occur in one hyperedge only, and hyperedges contained
  // in another, until nothing changes; the hypergraph is acyclic iff nothing is left.
  std::vector<bool> alive(edges.size(), true);
  std::vector<std::uint32_t> occurrences(query.num_vars());
  bool changed = true;
  while (changed) {
    changed = false;
    std::fill(occurrences.begin(), occurrences.end(), 0);
    for (std::size_t e = 0; e < edges.size(); ++e) {
      if (!alive[e]) continue;
      for (std::uint32_t v : edges[e]) ++occurrences[v];
    }
    for (std::size_t e = 0; e < edges.size(); ++e) {
      if (!alive[e]) continue;
      std::size_t before = edges[e].size();
      std::erase_if(edges[e], [&](std::uint32_t v) { return occurrences[v] == 1; });
      changed = changed || edges[e].size() != before;
    }
    for (std::size_t e = 0; e < edges.size(); ++e) {
      if (!alive[e]) continue;
      for (std::size_t f = 0; f < edges.size(); ++f) {
        if (f == e || !alive[f]) continue;
        if (std::includes(edges[f].begin(), edges[f].end(), edges[e].begin(), edges[e].end())) {
          alive[e] = false;
          changed = true;
          break;
        }
      }
      if (alive[e] && edges[e].empty()) {
        alive[e] = false;
        changed = true;
      }
    }
  }
  return std::any_of(alive.begin(), alive.end(), [](bool a) { return a; });
}

std::shared_ptr<GenericJoinPlan> plan_generic_join(EGraph& egraph, const Query& query,
                                                   const std::vector<RowFilter>& filters,
                                                   Timestamp since) {
  return std::make_shared<GenericJoinPlan>(make_plan(egraph, query, filters, since));
}

bool run_generic_join(EGraph& egraph, const Query& query, GenericJoinPlan& plan,
                      const std::vector<RowFilter>& filters, SearchWindow window,
                      const std::vector<RowId>& splits, const MatchSink& sink) {
  refresh_indexes(egraph, query, plan);
  return Joiner(egraph, query, plan, filters, window, sink, &splits).run();
}

bool generic_join(EGraph& egraph, const Query& query, const std::vector<RowFilter>& filters,
                  SearchWindow window, const MatchSink& sink) {
  Plan plan = make_plan(egraph, query, filters, window.since);
  return Joiner(egraph, query, plan, filters, window, sink).run();
}

}  // namespace kiln::engine
