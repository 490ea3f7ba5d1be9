// What a run did and why it stopped: per iteration and per rule counts and times.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::engine {

enum class StopReason { Saturated, ScheduleDone, IterationLimit, NodeLimit, TimeLimit };

const char* to_string(StopReason reason);

// Opt-in limits; the defaults leave egglog's semantics untouched.
struct RunLimits {
  std::optional<std::uint64_t> max_iterations;
  std::optional<std::size_t> max_rows;
  std::optional<double> max_seconds;
  // Back-off: a rule with more matches than this in one iteration is banned for a while.
  std::optional<std::uint64_t> match_limit;
  std::uint32_t ban_length = 5;
  // Match memory: once one rule's stored matches hold this many values (4 or 8 bytes each),
  // they are applied while its search goes on, where that gives the same result (see
  // Runner::iterate); nullopt: matches are applied only after every search.
  std::optional<std::uint64_t> early_apply_values = std::uint64_t{1} << 22;
};

struct RuleStats {
  std::uint64_t matches = 0;
  // Matches not applied: they repeated an earlier match of the same search on the variables
  // the actions read, and the actions are idempotent (repeated_matches.hpp).
  std::uint64_t repeats_skipped = 0;
  // Matches applied while the rule's search was still going on (RunLimits::early_apply_values).
  std::uint64_t applied_while_searching = 0;
  std::uint64_t times_banned = 0;
  double search_seconds = 0;
  double apply_seconds = 0;
};

struct IterationReport {
  std::string ruleset;
  std::uint64_t matches = 0;
  std::size_t rows_after = 0;
  bool changed = false;
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;
};

struct RunReport {
  StopReason stop = StopReason::ScheduleDone;
  // The first limit that stopped a run, kept when reports are folded together (absorb): why
  // a whole program stopped growing, even when later runs finished on their own.
  std::optional<StopReason> limit_hit;
  bool changed = false;
  std::vector<IterationReport> iterations;
  std::map<std::string, RuleStats> rules;  // by rule name
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;

  // Folds another run's report into this one (for print-stats over a whole program).
  void absorb(const RunReport& other);
  // A human-readable summary: stop reason, totals, slowest rules.
  std::string summary(std::size_t max_rules = 20) const;
};

}  // namespace kiln::engine
