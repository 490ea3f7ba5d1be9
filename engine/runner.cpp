#include "engine/runner.hpp"

#include <algorithm>

#include "engine/primitive.hpp"
#include "engine/query_plan.hpp"
#include "engine/repeated_matches.hpp"
#include "support/diagnostic.hpp"
#include "support/seconds_since.hpp"

namespace kiln::engine {
namespace {

using Clock = support::Clock;
using support::seconds_since;

// The query variables a rule's actions read: only these are stored per match, which keeps
// the match buffers small when joins bind variables the actions never use.
std::vector<std::uint32_t> variables_read(const Rule& rule) {
  std::uint32_t width = rule.query.num_vars();
  std::vector<bool> read(width, false);
  for (const ActionInstr& instr : rule.actions.instrs) {
    for (const Operand& o : instr.args) {
      if (!o.is_constant && o.reg < width) read[o.reg] = true;
    }
  }
  std::vector<std::uint32_t> out;
  for (std::uint32_t v = 0; v < width; ++v) {
    if (read[v]) out.push_back(v);
  }
  return out;
}

// A rule's matches are applied as egglog applies them: in batches of kActionBatch matches, one
// instruction at a time over the whole batch. That sets the order of the rows and e-classes an
// iteration creates (all of one instruction's before the next one's), which shows in
// print-function, in extraction's ties and in the element order of containers.
constexpr std::uint64_t kActionBatch = 128;

// Applying matches is bound by memory: each table access misses the cache. Within a batch, an
// instruction's accesses are independent of each other (the instructions before it have run for
// the whole batch, so every key is known), so each access's index slot, then its row, is loaded
// a few matches ahead, and the misses of several matches overlap. The keys are hashed as the
// registers hold them; a key that a union made stale in between only costs the miss it missed.
class BatchPrefetcher {
 public:
  BatchPrefetcher(const EGraph& egraph, const ActionInstr& instr, const Value* registers,
                  std::uint32_t width)
      : instr_(instr), registers_(registers), width_(width) {
    switch (instr.op) {
      case ActionOp::Construct:
      case ActionOp::Lookup:
      case ActionOp::ConstructUnion:
      case ActionOp::Set:
      case ActionOp::Delete:
      case ActionOp::Subsume:
        table_ = &egraph.table(instr.function);
        num_keys_ = table_->num_keys();
        break;
      default:
        break;
    }
  }

  // Before the access of match i of a batch of n.
  void ahead(std::uint64_t i, std::uint64_t n) {
    if (!table_) return;
    if (i == 0) {
      for (std::uint64_t j = 0; j < std::min(n, kSlotDistance); ++j) load_slot(j);
    }
    if (i + kSlotDistance < n) load_slot(i + kSlotDistance);
    if (i + kRowDistance < n) table_->prefetch_row_of(hash_[(i + kRowDistance) % kRing]);
  }

 private:
  static constexpr std::uint64_t kSlotDistance = 16;
  static constexpr std::uint64_t kRowDistance = 8;
  static constexpr std::uint64_t kRing = 32;  // > kSlotDistance

  void load_slot(std::uint64_t j) {
    const Value* regs = registers_ + j * width_;
    Value keys[kMaxColumns];
    for (std::uint32_t k = 0; k < num_keys_; ++k) {
      const Operand& o = instr_.args[k];
      keys[k] = o.is_constant ? o.constant : regs[o.reg];
    }
    std::uint64_t hash = table_->key_hash(keys);
    hash_[j % kRing] = hash;
    table_->prefetch_slot_of(hash);
  }

  const ActionInstr& instr_;
  const Value* registers_;
  std::uint32_t width_;
  const Table* table_ = nullptr;
  std::uint32_t num_keys_ = 0;
  std::uint64_t hash_[kRing] = {};
};

// Names a rule as the e-graph's current origin while its actions run, so the rows they create
// record it; clears it afterwards, also when an action throws.
class OriginScope {
 public:
  OriginScope(EGraph& egraph, OriginId origin) : egraph_(egraph) { egraph_.set_current_origin(origin); }
  ~OriginScope() { egraph_.set_current_origin(kNoOrigin); }
  OriginScope(const OriginScope&) = delete;
  OriginScope& operator=(const OriginScope&) = delete;

 private:
  EGraph& egraph_;
};

// Whether a rule deletes or subsumes rows: the actions whose result depends on when a union
// reaches their keys (see EGraphModeScope).
bool deletes_or_subsumes(const Rule& rule) {
  return std::any_of(rule.actions.instrs.begin(), rule.actions.instrs.end(), [](const ActionInstr& instr) {
    return instr.op == ActionOp::Delete || instr.op == ActionOp::Subsume;
  });
}

// Whether a rule's actions only add rows and merge classes: no custom merge, delete or subsume,
// which kill rows that later searches of the same iteration would read, and no primitive of a
// sort (`unstable-app` calls functions, with their merges). (A panic waits too, so that every
// search has run when it stops the program, as before.)
bool only_adds_and_merges(const EGraph& egraph, const Rule& rule) {
  for (const ActionInstr& instr : rule.actions.instrs) {
    switch (instr.op) {
      case ActionOp::Primitive:
        if (instr.primitive->owner != nullptr) return false;
        break;
      case ActionOp::Construct:
      case ActionOp::Lookup:
      case ActionOp::Copy:
      case ActionOp::Union:
      case ActionOp::ConstructUnion:
        break;
      case ActionOp::Set:
        if (egraph.function(instr.function).merge == MergeKind::Custom) return false;
        break;
      case ActionOp::Delete:
      case ActionOp::Subsume:
      case ActionOp::Panic:
        return false;
    }
  }
  return true;
}

// Whether a rule's search reads nothing that a merge or a new row changes before the next
// rebuild: no e-class constant (canonicalized before each search), no primitive over e-classes
// or containers of them (which canonicalize their arguments) and no primitive of a sort
// (`unstable-app` looks up functions, past any horizon). Rows keep their cells until rebuild,
// so the atoms themselves see the same values.
bool search_ignores_merges(const EGraph& egraph, const Rule& rule) {
  const Query& q = rule.query;
  auto merge_sensitive = [&](const QueryTerm& t) {
    if (!t.is_var) return t.eq_sort;
    const Sort& sort = egraph.sort(q.var_sorts[t.var]);
    return sort.is_eq || sort.holds_eclasses;
  };
  for (const QueryAtom& atom : q.atoms) {
    for (const QueryTerm& t : atom.columns) {
      if (!t.is_var && t.eq_sort) return false;
    }
  }
  for (const QueryPrimitive& prim : q.primitives) {
    if (prim.primitive->owner != nullptr) return false;
    if (std::any_of(prim.args.begin(), prim.args.end(), merge_sensitive) || merge_sensitive(prim.result)) {
      return false;
    }
  }
  return true;
}

// Puts the e-graph in a mode for a scope (enter) and takes it out again (leave), also when an
// action throws. Two modes span a rule iteration's searches and actions:
// - every table's horizon (EGraph::set_horizons, see Table::set_horizon), for early apply;
// - the classes as the iteration found them (EGraph::freeze_classes), until the rebuild that
//   follows, as in egglog. That is observable only where an action deletes or subsumes: a
//   constructor call that finds the merged row at once, instead of writing a row that rebuild
//   merges into it, leaves the same rows after the rebuild. Writing those rows costs
//   (arith_grow: peak 90 -> 139 MB, rebuild 2x), so iterations without a delete or subsume
//   keep immediate canonicalization.
class EGraphModeScope {
 public:
  using Mode = void (EGraph::*)();
  EGraphModeScope(EGraph& egraph, Mode enter, Mode leave) : egraph_(egraph), leave_(leave) { (egraph_.*enter)(); }
  ~EGraphModeScope() { (egraph_.*leave_)(); }
  EGraphModeScope(const EGraphModeScope&) = delete;
  EGraphModeScope& operator=(const EGraphModeScope&) = delete;

 private:
  EGraph& egraph_;
  Mode leave_;
};

}  // namespace

Runner::Runner(EGraph& egraph, std::vector<Rule>& rules, RunLimits limits,
               std::map<std::string, std::set<std::string>> combined)
    : egraph_(egraph), rules_(rules), limits_(limits), combined_(std::move(combined)) {}

RunReport Runner::run(const Schedule& schedule) {
  report_ = RunReport{};
  start_ = Clock::now();
  try {
    egraph_.rebuild();
    report_.changed = run_node(schedule);
    // Saturated: the last iteration found nothing to change (or there was none to run).
    bool last_changed = !report_.iterations.empty() && report_.iterations.back().changed;
    report_.stop = last_changed ? StopReason::ScheduleDone : StopReason::Saturated;
  } catch (const LimitReached& limit) {
    report_.stop = limit.reason;
    report_.changed = true;
  }
  return report_;
}

void Runner::check_limits() const {
  if (limits_.max_iterations && iteration_ >= *limits_.max_iterations) {
    throw LimitReached{StopReason::IterationLimit};
  }
  if (limits_.max_rows && egraph_.total_rows() > *limits_.max_rows) {
    throw LimitReached{StopReason::NodeLimit};
  }
  if (limits_.max_seconds && seconds_since(start_) > *limits_.max_seconds) {
    throw LimitReached{StopReason::TimeLimit};
  }
}

bool Runner::run_node(const Schedule& node) {
  switch (node.kind) {
    case Schedule::Kind::Run:
      if (node.until && has_match(egraph_, *node.until)) return false;
      return iterate(node.ruleset);
    case Schedule::Kind::Repeat: {
      bool changed = false;
      for (std::uint64_t i = 0; i < node.times; ++i) {
        if (!run_node(node.children[0])) break;
        changed = true;
      }
      return changed;
    }
    case Schedule::Kind::Saturate: {
      bool changed = false;
      while (run_node(node.children[0])) changed = true;
      return changed;
    }
    case Schedule::Kind::Seq: {
      bool changed = false;
      for (const Schedule& child : node.children) changed |= run_node(child);
      return changed;
    }
  }
  return false;
}

const Runner::StoredMatch& Runner::stored_match(std::size_t rule) {
  if (stored_match_.size() < rules_.size()) stored_match_.resize(rules_.size());
  if (!stored_match_[rule]) {
    const Rule& r = rules_[rule];
    StoredMatch shape;
    shape.vars = variables_read(r);
    shape.skip_repeats = projection_may_repeat(r.query, shape.vars) && actions_idempotent(egraph_, r.actions);
    shape.distinct = distinct_match_variables(r.query, shape.vars);
    stored_match_[rule] = std::move(shape);
  }
  return *stored_match_[rule];
}

void Runner::apply_matches(const Rule& rule, const MatchBuffer& matches, std::uint64_t first,
                           std::uint64_t last) {
  const std::vector<std::uint32_t>& stored = stored_match(static_cast<std::size_t>(&rule - rules_.data())).vars;
  if (first >= last) return;
  std::uint32_t width = std::max<std::uint32_t>(rule.actions.num_registers, rule.query.num_vars());
  // Not cleared: an action reads only registers that the match or an earlier action wrote.
  if (registers_.size() < kActionBatch * width) registers_.resize(kActionBatch * width);
  Value* registers = registers_.data();
  OriginScope origin(egraph_, egraph_.intern_origin(rule.name));
  // Restored afterwards: a batch applied from inside a search returns to it.
  PrimitiveContextScope context(egraph_, /*may_insert=*/true);
  try {
    for (std::uint64_t begin = first; begin < last; begin += kActionBatch) {
      std::uint64_t n = std::min(kActionBatch, last - begin);
      for (std::uint64_t i = 0; i < n; ++i) matches.scatter(begin + i, stored.data(), registers + i * width);
      for (const ActionInstr& instr : rule.actions.instrs) {
        BatchPrefetcher prefetch(egraph_, instr, registers, width);
        for (std::uint64_t i = 0; i < n; ++i) {
          prefetch.ahead(i, n);
          run_action(egraph_, instr, registers + i * width);
        }
      }
    }
  } catch (const support::UserError& e) {
    // The location points into the rule's actions; the name says which rule, for a rule
    // file loaded among many (the compiler's).
    support::rethrow_with_note(e, "in rule '" + rule.name + "'");
  }
}

bool Runner::iterate(const std::string& ruleset) {
  check_limits();
  ++iteration_;
  IterationReport it;
  it.ruleset = ruleset;
  std::uint64_t version_before = egraph_.version();

  auto combined = combined_.find(ruleset);
  const std::set<std::string>* members = combined == combined_.end() ? nullptr : &combined->second;
  std::vector<std::size_t> selected;
  bool any_banned = false;
  for (std::size_t r = 0; r < rules_.size(); ++r) {
    Rule& rule = rules_[r];
    if (rule.ruleset != ruleset && (!members || !members->count(rule.ruleset))) continue;
    report_.rules[rule.name];  // every rule of the ruleset has a line in the report
    if (rule.banned_until_iteration > iteration_) {
      any_banned = true;
      continue;
    }
    selected.push_back(r);
  }

  // Every rule searches the database as the iteration found it; then the matches are applied
  // in batches (kActionBatch): every rule's full batches, in rule and variant order, then the
  // variants' partial ones. A large iteration would keep tens of millions of matches in memory
  // until then. So, when no action kills a row and no search reads what a merge changes, a
  // rule whose buffer fills up has its full batches applied (after those of the rules searched
  // before it) while its search goes on: the tables' horizons hide the new rows from the
  // searches, which therefore find what they would have found, and the writes happen in the
  // same order. Batches are large (RunLimits::early_apply_values): when search and apply
  // take turns every few thousand matches, they evict each other's working sets. With a match
  // limit, matches wait until their search is known to be complete.
  bool may_apply_early = limits_.early_apply_values && !limits_.match_limit;
  for (std::size_t r : selected) {
    may_apply_early = may_apply_early && only_adds_and_merges(egraph_, rules_[r]) &&
                      search_ignores_merges(egraph_, rules_[r]);
  }
  std::optional<EGraphModeScope> frozen;
  if (std::any_of(selected.begin(), selected.end(), [&](std::size_t r) { return deletes_or_subsumes(rules_[r]); })) {
    frozen.emplace(egraph_, &EGraph::freeze_classes, &EGraph::thaw_classes);
  }
  Timestamp searched_until = egraph_.now() + 1;
  std::optional<EGraphModeScope> horizon;
  if (may_apply_early) {
    egraph_.advance_time();  // rows written from here on are new to the next searches
    horizon.emplace(egraph_, &EGraph::set_horizons, &EGraph::clear_horizons);
  }

  struct Found {
    std::size_t rule;
    MatchBuffer* matches;     // the rule's reused buffer: pages stay mapped between iterations
    std::uint64_t count = 0;  // matches found
    std::uint64_t stored = 0; // of which stored (the others repeated an earlier one)
  };
  // A variant's last batch, when it holds fewer than kActionBatch matches, waits in the rule's
  // tail buffer: egglog applies those after every rule's full batches, in the order found.
  struct Tail {
    std::size_t rule;
    std::uint64_t begin, end;  // in tail_buffers_[rule]
  };
  match_buffers_.resize(rules_.size());
  tail_buffers_.resize(rules_.size());
  std::vector<Found> found;  // in rule order; their buffers hold full batches only
  std::vector<Tail> tails;
  std::size_t applied = 0;   // found[0, applied) are
  std::vector<const std::string*> changed_by;  // rules whose actions changed the e-graph
  double apply_seconds = 0;
  auto apply = [&](std::size_t r, const MatchBuffer& matches, std::uint64_t begin, std::uint64_t end) {
    Rule& rule = rules_[r];
    auto t0 = Clock::now();
    auto version = egraph_.version();
    apply_matches(rule, matches, begin, end);
    if (egraph_.version() != version && (changed_by.empty() || changed_by.back() != &rule.name)) {
      changed_by.push_back(&rule.name);
    }
    double dt = seconds_since(t0);
    report_.rules[rule.name].apply_seconds += dt;
    apply_seconds += dt;
    return dt;
  };
  auto apply_found = [&]() {
    double dt = 0;
    for (; applied < found.size(); ++applied) {
      Found& f = found[applied];
      dt += apply(f.rule, *f.matches, 0, f.matches->size());
      f.matches->release_if_large();
    }
    return dt;
  };

  for (std::size_t r : selected) {
    Rule& rule = rules_[r];
    RuleStats& stats = report_.rules[rule.name];
    auto t0 = Clock::now();
    double applying = 0;  // of this rule's search time, spent applying
    Found f{r, &match_buffers_[r]};
    bool applied_early = false;
    const StoredMatch& shape = stored_match(r);
    const std::vector<std::uint32_t>& stored = shape.vars;
    f.matches->start(stored.size());
    tail_buffers_[r].start(stored.size());
    std::size_t tails_before = tails.size();
    std::uint64_t variant_start = 0;  // where the running variant's matches begin in f.matches
    projected_.resize(stored.size());
    if (shape.skip_repeats) recent_matches_.start(stored.size());
    distinct_matches_.start(shape.distinct);
    std::uint64_t limit = limits_.match_limit ? (*limits_.match_limit << rule.times_banned)
                                              : UINT64_MAX;
    std::uint64_t batch = UINT64_MAX;  // matches
    if (may_apply_early) batch = std::max<std::uint64_t>(1, *limits_.early_apply_values / std::max<std::size_t>(1, stored.size()));
    // A constant e-class (a global) that merged since the last search makes every match
    // through it new, as it would be through egglog's global tables.
    Timestamp since = rule.naive ? 0 : rule.searched_until;
    if (canonical_constants_moved(egraph_, rule.query, rule.constants_seen)) since = 0;
    auto store = [&](const Value* vars) {
      if (!shape.skip_repeats) {
        f.matches->push_gather(vars, stored.data());
        return true;
      }
      for (std::size_t i = 0; i < stored.size(); ++i) projected_[i] = vars[stored[i]];
      if (recent_matches_.repeat(projected_.data())) return false;
      f.matches->push(projected_.data());
      return true;
    };
    auto sink = [&](const Value* vars) {
      if (distinct_matches_.active() && !distinct_matches_.first(vars)) return true;
      if (store(vars)) ++f.stored;
      if (f.matches->size() >= batch) {
        // The full batches found so far; the running variant's partial one stays.
        std::uint64_t full = variant_start + (f.matches->size() - variant_start) / kActionBatch * kActionBatch;
        stats.applied_while_searching += full;
        applying += apply_found() + apply(r, *f.matches, 0, full);
        f.matches->drop_front(full);
        variant_start = 0;
        applied_early = true;
      }
      return ++f.count <= limit;
    };
    auto variant_done = [&]() {
      std::uint64_t partial = (f.matches->size() - variant_start) % kActionBatch;
      if (partial) {
        MatchBuffer& tail = tail_buffers_[r];
        tails.push_back(Tail{r, tail.size(), tail.size() + partial});
        f.matches->move_tail(f.matches->size() - partial, tail);
      }
      variant_start = f.matches->size();
      distinct_matches_.clear();
    };
    bool complete = search(egraph_, rule.query, SearchWindow{since}, sink, rule.plans.get(), variant_done);
    double dt = seconds_since(t0) - applying;
    stats.search_seconds += dt;
    it.search_seconds += dt;
    if (!complete) {
      // Too many matches: ban the rule; its unsearched rows stay "new" for later.
      rule.banned_until_iteration = iteration_ + (std::uint64_t{limits_.ban_length} << rule.times_banned);
      ++rule.times_banned;
      ++stats.times_banned;
      any_banned = true;
      tails.resize(tails_before);
      continue;
    }
    rule.searched_until = searched_until;
    stats.matches += f.count;
    it.matches += f.count;
    found.push_back(f);
    if (applied_early) apply_found();  // the rest of its matches, before any later rule's
  }
  horizon.reset();
  if (!may_apply_early) egraph_.advance_time();
  apply_found();
  for (const Tail& t : tails) apply(t.rule, tail_buffers_[t.rule], t.begin, t.end);
  it.apply_seconds = apply_seconds;
  for (const Found& f : found) report_.rules[rules_[f.rule].name].repeats_skipped += f.count - f.stored;

  auto t_rebuild = Clock::now();
  frozen.reset();
  try {
    egraph_.rebuild();
  } catch (const support::UserError& e) {
    // A merge that fails while congruence is restored (two dtypes for one e-class, say) was
    // caused by what this iteration's rules wrote: name them.
    std::string names;
    for (const std::string* name : changed_by) names += (names.empty() ? "'" : ", '") + *name + "'";
    if (names.empty()) throw;
    support::rethrow_with_note(e, "after rule(s) " + names);
  }
  it.rebuild_seconds = seconds_since(t_rebuild);

  it.changed = egraph_.version() != version_before;
  it.rows_after = egraph_.total_rows();
  report_.search_seconds += it.search_seconds;
  report_.apply_seconds += it.apply_seconds;
  report_.rebuild_seconds += it.rebuild_seconds;
  bool changed = it.changed;
  report_.iterations.push_back(std::move(it));
  if (!changed && any_banned) {
    // Not saturated while rules are banned: lift the bans and keep going (as egg does).
    for (Rule& rule : rules_) rule.banned_until_iteration = 0;
    return true;
  }
  return changed;
}

}  // namespace kiln::engine
