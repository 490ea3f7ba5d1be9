// Runs schedules over an e-graph with egglog's iteration semantics: every rule of a ruleset
// searches the same frozen database, then all actions apply, then rebuild, then time advances.
#pragma once

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <optional>
#include <vector>

#include "engine/egraph.hpp"
#include "engine/match_buffer.hpp"
#include "engine/distinct_matches.hpp"
#include "engine/repeated_matches.hpp"
#include "engine/rule.hpp"
#include "engine/run_report.hpp"
#include "engine/schedule.hpp"

namespace kiln::engine {

class Runner {
 public:
  // `combined` maps a combined ruleset's name to the rulesets whose rules it runs together.
  Runner(EGraph& egraph, std::vector<Rule>& rules, RunLimits limits = {},
         std::map<std::string, std::set<std::string>> combined = {});

  // Runs the schedule; limits stop it early, and the report says why.
  RunReport run(const Schedule& schedule);

 private:
  struct LimitReached {
    StopReason reason;
  };

  bool run_node(const Schedule& node);
  bool iterate(const std::string& ruleset);
  // Runs the rule's actions on matches [begin, end), in batches (see kActionBatch).
  void apply_matches(const Rule& rule, const MatchBuffer& matches, std::uint64_t begin, std::uint64_t end);
  void check_limits() const;

  EGraph& egraph_;
  std::vector<Rule>& rules_;
  RunLimits limits_;
  std::map<std::string, std::set<std::string>> combined_;
  RunReport report_;
  std::uint64_t iteration_ = 0;
  // What a rule stores per match: the variables its actions read, and whether a match that
  // repeats an earlier one on them is dropped (see repeated_matches.hpp).
  struct StoredMatch {
    std::vector<std::uint32_t> vars;
    bool skip_repeats = false;
    std::vector<std::uint32_t> distinct;  // see distinct_matches.hpp; empty: every match counts
  };
  const StoredMatch& stored_match(std::size_t rule);

  std::vector<MatchBuffer> match_buffers_;  // per rule, reused by every iteration
  std::vector<MatchBuffer> tail_buffers_;   // per rule: its variants' last, partial batches
  std::vector<Value> registers_;  // of the rule being applied
  std::vector<Value> projected_;  // one match, on the variables its rule's actions read
  std::vector<std::optional<StoredMatch>> stored_match_;  // per rule
  RecentMatches recent_matches_;  // of the rule being searched
  DistinctMatches distinct_matches_;  // of the variant being searched
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::engine
