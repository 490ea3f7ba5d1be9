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
  void check_limits() const;

  EGraph& egraph_;
  std::vector<Rule>& rules_;
  RunLimits limits_;
  std::map<std::string, std::set<std::string>> combined_;
  RunReport report_;
  std::uint64_t iteration_ = 0;
  const std::vector<std::uint32_t>& stored_vars(std::size_t rule);

  std::vector<std::vector<Value>> match_buffers_;  // per rule, reused by every iteration
  std::vector<std::optional<std::vector<std::uint32_t>>> stored_vars_;  // per rule
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::engine
