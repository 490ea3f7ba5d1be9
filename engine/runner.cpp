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

// Applying matches is bound by memory: each table access of an action misses the cache, and
// when the second access's keys include the first one's result (assoc: (Add (Add a b) c)),
// its miss cannot even start before the first lookup is done. So matches are looked at ahead:
//   kSlotDistance ahead: load the index slot of the first access (keys from the match);
//   kRowDistance ahead: load its row;
//   kNextSlotDistance ahead: do the first access as a read-only lookup (its row is loaded by
//     now), which gives the second access's keys: load their slot;
//   kNextRowDistance ahead: load the second access's row.
// A hint may be stale (a union in between moves a class): it only costs the miss it missed.
// The read-only lookup's result is kept: when the match is applied and no class was merged
// and no row of that table killed since, the first access would find the same row, so its
// result is taken as it is (first_result) and the actions start at the second instruction.
class Prefetcher {
 public:
  Prefetcher(EGraph& egraph, const Rule& rule, const std::vector<std::uint32_t>& stored,
             const MatchBuffer& matches)
      : egraph_(egraph), matches_(matches), width_(static_cast<std::uint32_t>(stored.size())) {
    const std::vector<ActionInstr>& instrs = rule.actions.instrs;
    if (instrs.empty() || width_ == 0) return;
    std::uint32_t num_vars = rule.query.num_vars();
    if (!first_.bind(instrs[0], stored, num_vars, kNoResult)) return;
    first_instr_ = &instrs[0];
    bool first_has_result = instrs[0].op != ActionOp::Set;
    if (first_has_result && !holds_containers(egraph, instrs[0].function) && instrs.size() > 1 &&
        second_.bind(instrs[1], stored, num_vars, instrs[0].dst)) {
      second_instr_ = &instrs[1];
    }
  }

  void ahead(std::uint64_t m, std::uint64_t count) {
    if (!first_instr_) return;
    const Table& first_table = egraph_.table(first_instr_->function);
    if (m + kSlotDistance < count) {
      std::uint64_t& hash = first_hash_[(m + kSlotDistance) % kFirstRing];
      hash = first_table.key_hash(first_.keys(matches_, m + kSlotDistance, 0));
      first_table.prefetch_slot_of(hash);
    }
    if (m + kRowDistance < count) first_table.prefetch_row_of(first_hash_[(m + kRowDistance) % kFirstRing]);
    if (!second_instr_) return;
    if (m + kNextSlotDistance < count) {
      std::uint64_t at = m + kNextSlotDistance;
      Ahead& found = found_[(m + kNextSlotDistance) % kRing];
      std::optional<Value> result =
          egraph_.lookup(first_instr_->function, first_.keys(matches_, at, 0), found.keys);
      found.match = m + kNextSlotDistance;
      found.hit = result.has_value();
      found.result = result.value_or(0);
      found.unions = egraph_.unions();
      found.kills = first_table.kills();
      std::uint64_t& hash = next_hash_[(m + kNextSlotDistance) % kRing];
      hash = kNoHash;
      if (result) {
        const Table& t = egraph_.table(second_instr_->function);
        hash = t.key_hash(second_.keys(matches_, at, *result));
        t.prefetch_slot_of(hash);
      }
    }
    if (m + kNextRowDistance < count) {
      std::uint64_t hash = next_hash_[(m + kNextRowDistance) % kRing];
      if (hash != kNoHash) egraph_.table(second_instr_->function).prefetch_row_of(hash);
    }
  }

  // The first access's result for match m, when its look-ahead found a row that is still the
  // answer: no row of the table was killed since, and the canonical keys it looked up and the
  // output it found are still canonical (no merge at all since, or none that moved them). The
  // access would then find the same row and return the same value.
  bool first_result(std::uint64_t m, Value* result) const {
    if (!second_instr_) return false;
    const Ahead& found = found_[m % kRing];
    if (found.match != m || !found.hit ||
        found.kills != egraph_.table(first_instr_->function).kills()) {
      return false;
    }
    if (found.unions != egraph_.unions()) {
      const FunctionDecl& decl = egraph_.function(first_instr_->function);
      for (std::size_t k = 0; k < decl.inputs.size(); ++k) {
        if (!egraph_.still_canonical(decl.inputs[k], found.keys[k])) return false;
      }
      if (!egraph_.still_canonical(decl.output, found.result)) return false;
    }
    *result = found.result;
    return true;
  }
  // The register first_result's value goes to.
  std::uint32_t first_destination() const { return first_instr_->dst; }

 private:
  static constexpr std::uint64_t kSlotDistance = 16;
  static constexpr std::uint64_t kRowDistance = 8;
  static constexpr std::uint64_t kNextSlotDistance = 4;
  static constexpr std::uint64_t kNextRowDistance = 2;
  // Hashes computed for a slot, kept for loading the row later: more entries than matches
  // between the two distances.
  static constexpr std::uint64_t kFirstRing = 16;  // > kSlotDistance - kRowDistance
  static constexpr std::uint64_t kRing = 8;        // > kNextSlotDistance - kNextRowDistance
  static constexpr std::uint64_t kNoHash = ~std::uint64_t{0};
  static constexpr std::uint32_t kNoResult = 0xffffffffu;

  // Where each key of one table access comes from: a constant (filled in once), a stored match
  // value, or the first access's result.
  class Keys {
   public:
    // False when some key is computed by another instruction: nothing to look ahead at.
    bool bind(const ActionInstr& instr, const std::vector<std::uint32_t>& stored,
              std::uint32_t num_vars, std::uint32_t result_reg) {
      if (instr.op != ActionOp::Construct && instr.op != ActionOp::Lookup &&
          instr.op != ActionOp::Set) {
        return false;
      }
      std::size_t count = instr.op == ActionOp::Set ? instr.args.size() - 1 : instr.args.size();
      for (std::size_t i = 0; i < count; ++i) {
        const Operand& o = instr.args[i];
        auto key = static_cast<std::uint32_t>(i);
        if (o.is_constant) {
          keys_[i] = o.constant;
        } else if (o.reg == result_reg) {
          from_result_[num_from_result_++] = key;
        } else if (o.reg < num_vars) {
          auto at = static_cast<std::uint32_t>(std::find(stored.begin(), stored.end(), o.reg) - stored.begin());
          from_match_[num_from_match_++] = {key, at};
        } else {
          return false;
        }
      }
      return true;
    }
    // The keys for match m of `matches`, with `result` as the first access's result; only the
    // stored values the access reads are loaded.
    const Value* keys(const MatchBuffer& matches, std::uint64_t m, Value result) {
      matches.visit(m, [&](const auto* match) {
        for (std::uint32_t k = 0; k < num_from_match_; ++k) {
          keys_[from_match_[k].key] = match[from_match_[k].at];
        }
      });
      for (std::uint32_t k = 0; k < num_from_result_; ++k) keys_[from_result_[k]] = result;
      return keys_;
    }

   private:
    struct FromMatch {
      std::uint32_t key;  // the key's position
      std::uint32_t at;   // the stored value's position in a match
    };
    FromMatch from_match_[kMaxColumns] = {};
    std::uint32_t num_from_match_ = 0;
    std::uint32_t from_result_[kMaxColumns] = {};
    std::uint32_t num_from_result_ = 0;
    Value keys_[kMaxColumns] = {};  // constants stay from bind()
  };

  // A look-ahead lookup canonicalizes its keys; for a container that interns a new value,
  // which must happen in the order the actions run, not ahead of it.
  static bool holds_containers(const EGraph& egraph, FunctionId id) {
    const FunctionDecl& decl = egraph.function(id);
    auto holds = [&](SortId s) { return egraph.sort(s).holds_eclasses; };
    return holds(decl.output) || std::any_of(decl.inputs.begin(), decl.inputs.end(), holds);
  }

  EGraph& egraph_;
  const MatchBuffer& matches_;
  std::uint32_t width_;
  const ActionInstr* first_instr_ = nullptr;
  const ActionInstr* second_instr_ = nullptr;
  Keys first_, second_;
  std::uint64_t first_hash_[kFirstRing] = {};
  std::uint64_t next_hash_[kRing] = {};
  // What the read-only lookup of the first access found, per match in the ring.
  struct Ahead {
    std::uint64_t match = ~std::uint64_t{0};
    Value result = 0;
    bool hit = false;
    std::uint64_t unions = 0;  // EGraph::unions() then
    std::uint64_t kills = 0;   // Table::kills() of the first access's table then
    Value keys[kMaxColumns] = {};  // the canonical keys looked up
  };
  Ahead found_[kRing];
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
    stored_match_[rule] = std::move(shape);
  }
  return *stored_match_[rule];
}

void Runner::apply_matches(const Rule& rule, const MatchBuffer& matches) {
  const std::vector<std::uint32_t>& stored = stored_match(static_cast<std::size_t>(&rule - rules_.data())).vars;
  registers_.assign(std::max<std::uint32_t>(rule.actions.num_registers, rule.query.num_vars()), 0);
  Value* registers = registers_.data();
  Prefetcher prefetch(egraph_, rule, stored, matches);
  OriginScope origin(egraph_, egraph_.intern_origin(rule.name));
  // Restored afterwards: a batch applied from inside a search returns to it.
  PrimitiveContextScope context(egraph_, /*may_insert=*/true);
  try {
    for (std::uint64_t m = 0, count = matches.size(); m < count; ++m) {
      prefetch.ahead(m, count);
      matches.scatter(m, stored.data(), registers);
      Value first;
      if (prefetch.first_result(m, &first)) {
        registers[prefetch.first_destination()] = first;
        run_actions(egraph_, rule.actions, registers, 1);
      } else {
        run_actions(egraph_, rule.actions, registers);
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

  // Every rule searches the database as the iteration found it; then the matches are applied,
  // rule by rule, in the order found. A large iteration would keep tens of millions of matches
  // in memory until then. So, when no action kills a row and no search reads what a merge
  // changes, a rule whose buffer fills up has its matches applied (after those of the rules
  // searched before it) while its search goes on: the tables' horizons hide the new rows from
  // the searches, which therefore find what they would have found, and the writes happen in
  // the same order. Batches are large (RunLimits::early_apply_values): when search and apply
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
  match_buffers_.resize(rules_.size());
  std::vector<Found> found;  // in rule order
  std::size_t applied = 0;   // found[0, applied) are
  std::vector<const std::string*> changed_by;  // rules whose actions changed the e-graph
  double apply_seconds = 0;
  auto apply = [&](Found& f) {
    Rule& rule = rules_[f.rule];
    auto t0 = Clock::now();
    auto version = egraph_.version();
    f.stored += f.matches->size();
    apply_matches(rule, *f.matches);
    if (egraph_.version() != version && (changed_by.empty() || changed_by.back() != &rule.name)) {
      changed_by.push_back(&rule.name);
    }
    f.matches->start(f.matches->width());
    double dt = seconds_since(t0);
    report_.rules[rule.name].apply_seconds += dt;
    apply_seconds += dt;
    return dt;
  };
  auto apply_found = [&]() {
    double dt = 0;
    for (; applied < found.size(); ++applied) {
      dt += apply(found[applied]);
      found[applied].matches->release_if_large();
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
    projected_.resize(stored.size());
    if (shape.skip_repeats) recent_matches_.start(stored.size());
    std::uint64_t limit = limits_.match_limit ? (*limits_.match_limit << rule.times_banned)
                                              : UINT64_MAX;
    std::uint64_t batch = UINT64_MAX;  // matches
    if (may_apply_early) batch = std::max<std::uint64_t>(1, *limits_.early_apply_values / std::max<std::size_t>(1, stored.size()));
    // A constant e-class (a global) that merged since the last search makes every match
    // through it new, as it would be through egglog's global tables.
    Timestamp since = rule.naive ? 0 : rule.searched_until;
    if (canonical_constants_moved(egraph_, rule.query, rule.constants_seen)) since = 0;
    bool complete = search(egraph_, rule.query, SearchWindow{since},
                           [&](const Value* vars) {
                             if (!shape.skip_repeats) {
                               f.matches->push_gather(vars, stored.data());
                             } else {
                               for (std::size_t i = 0; i < stored.size(); ++i) projected_[i] = vars[stored[i]];
                               if (!recent_matches_.repeat(projected_.data())) f.matches->push(projected_.data());
                             }
                             if (f.matches->size() >= batch) {
                               stats.applied_while_searching += f.matches->size();
                               applying += apply_found() + apply(f);
                               applied_early = true;
                             }
                             return ++f.count <= limit;
                           },
                           rule.plans.get());
    double dt = seconds_since(t0) - applying;
    stats.search_seconds += dt;
    it.search_seconds += dt;
    if (!complete) {
      // Too many matches: ban the rule; its unsearched rows stay "new" for later.
      rule.banned_until_iteration = iteration_ + (std::uint64_t{limits_.ban_length} << rule.times_banned);
      ++rule.times_banned;
      ++stats.times_banned;
      any_banned = true;
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
