#include "engine/runner.hpp"

#include <algorithm>

#include "engine/query_plan.hpp"
#include "engine/repeated_matches.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

// Applying matches is bound by memory: each action's first table access misses the cache.
// When the first instruction touches a table with keys taken straight from the match, load
// its index slot kSlotDistance matches ahead and its row kRowDistance matches ahead.
class Prefetcher {
 public:
  Prefetcher(const Rule& rule, const std::vector<std::uint32_t>& stored, const Value* matches)
      : matches_(matches), width_(static_cast<std::uint32_t>(stored.size())) {
    if (rule.actions.instrs.empty() || width_ == 0) return;
    std::uint32_t num_vars = rule.query.num_vars();
    const ActionInstr& first = rule.actions.instrs[0];
    bool touches_table = first.op == ActionOp::Construct || first.op == ActionOp::Lookup ||
                         first.op == ActionOp::Set;
    if (!touches_table) return;
    std::size_t keys = first.op == ActionOp::Set ? first.args.size() - 1 : first.args.size();
    for (std::size_t i = 0; i < keys; ++i) {
      const Operand& o = first.args[i];
      if (o.is_constant) {
        slots_[i] = kConstant;
        continue;
      }
      if (o.reg >= num_vars) return;  // a computed key: nothing to look ahead at
      slots_[i] = static_cast<std::uint32_t>(std::find(stored.begin(), stored.end(), o.reg) - stored.begin());
    }
    instr_ = &first;
    num_keys_ = keys;
  }

  void ahead(const EGraph& egraph, std::uint64_t m, std::uint64_t count) const {
    if (!instr_) return;
    if (m + kSlotDistance < count) egraph.prefetch_slot(instr_->function, keys_of(m + kSlotDistance));
    if (m + kRowDistance < count) egraph.prefetch_row(instr_->function, keys_of(m + kRowDistance));
  }

 private:
  static constexpr std::uint64_t kSlotDistance = 16;
  static constexpr std::uint64_t kRowDistance = 8;
  static constexpr std::uint32_t kConstant = 0xffffffffu;

  const Value* keys_of(std::uint64_t m) const {
    const Value* match = matches_ + m * width_;
    for (std::size_t i = 0; i < num_keys_; ++i) {
      keys_[i] = slots_[i] == kConstant ? instr_->args[i].constant : match[slots_[i]];
    }
    return keys_;
  }

  const Value* matches_;
  std::uint32_t width_;
  const ActionInstr* instr_ = nullptr;
  std::size_t num_keys_ = 0;
  std::uint32_t slots_[kMaxColumns] = {};  // per key: its position in a stored match
  mutable Value keys_[kMaxColumns];
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

bool Runner::iterate(const std::string& ruleset) {
  check_limits();
  ++iteration_;
  IterationReport it;
  it.ruleset = ruleset;
  std::uint64_t version_before = egraph_.version();

  // Search: every rule sees the same database.
  struct Found {
    std::size_t rule;
    std::vector<Value>* matches;  // the rule's reused buffer: pages stay mapped between iterations
    std::uint64_t count = 0;   // matches found
    std::uint64_t stored = 0;  // matches stored: those that did not repeat an earlier one
  };
  match_buffers_.resize(rules_.size());
  std::vector<Found> found;
  bool any_banned = false;
  Timestamp searched_until = egraph_.now() + 1;
  auto combined = combined_.find(ruleset);
  const std::set<std::string>* members = combined == combined_.end() ? nullptr : &combined->second;
  for (std::size_t r = 0; r < rules_.size(); ++r) {
    Rule& rule = rules_[r];
    if (rule.ruleset != ruleset && (!members || !members->count(rule.ruleset))) continue;
    RuleStats& stats = report_.rules[rule.name];
    if (rule.banned_until_iteration > iteration_) {
      any_banned = true;
      continue;
    }
    auto t0 = Clock::now();
    Found f{r, &match_buffers_[r], 0};
    f.matches->clear();
    const StoredMatch& shape = stored_match(r);
    const std::vector<std::uint32_t>& stored = shape.vars;
    if (shape.skip_repeats) recent_matches_.start(stored.size());
    std::uint64_t limit = limits_.match_limit ? (*limits_.match_limit << rule.times_banned)
                                              : UINT64_MAX;
    // A constant e-class (a global) that merged since the last search makes every match
    // through it new, as it would be through egglog's global tables.
    Timestamp since = rule.naive ? 0 : rule.searched_until;
    if (canonical_constants_moved(egraph_, rule.query, rule.constants_seen)) since = 0;
    bool complete = search(egraph_, rule.query, SearchWindow{since},
                           [&](const Value* vars) {
                             std::size_t at = f.matches->size();
                             for (std::uint32_t v : stored) f.matches->push_back(vars[v]);
                             if (shape.skip_repeats && recent_matches_.repeat(f.matches->data() + at)) {
                               f.matches->resize(at);
                             } else {
                               ++f.stored;
                             }
                             return ++f.count <= limit;
                           },
                           rule.plans.get());
    double dt = seconds_since(t0);
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
    stats.repeats_skipped += f.count - f.stored;
    it.matches += f.count;
    found.push_back(std::move(f));
  }
  egraph_.advance_time();

  // Apply: staged after the search, in rule order; rows each rule creates record it as origin.
  auto t_apply = Clock::now();
  std::vector<Value> registers;
  std::vector<const std::string*> changed_by;  // rules whose actions changed the e-graph
  for (Found& f : found) {
    Rule& rule = rules_[f.rule];
    auto t0 = Clock::now();
    const auto version_before_rule = egraph_.version();
    const std::vector<std::uint32_t>& stored = stored_match(f.rule).vars;
    std::size_t width = stored.size();
    registers.assign(std::max<std::uint32_t>(rule.actions.num_registers, rule.query.num_vars()), 0);
    Prefetcher prefetch(rule, stored, f.matches->data());
    OriginScope origin(egraph_, egraph_.intern_origin(rule.name));
    try {
      for (std::uint64_t m = 0; m < f.stored; ++m) {
        prefetch.ahead(egraph_, m, f.stored);
        const Value* match = f.matches->data() + m * width;
        for (std::size_t i = 0; i < width; ++i) registers[stored[i]] = match[i];
        run_actions(egraph_, rule.actions, registers.data());
      }
    } catch (const support::UserError& e) {
      // The location points into the rule's actions; the name says which rule, for a rule
      // file loaded among many (the compiler's).
      support::rethrow_with_note(e, "in rule '" + rule.name + "'");
    }
    if (egraph_.version() != version_before_rule) changed_by.push_back(&rule.name);
    report_.rules[rule.name].apply_seconds += seconds_since(t0);
  }
  it.apply_seconds = seconds_since(t_apply);

  auto t_rebuild = Clock::now();
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
