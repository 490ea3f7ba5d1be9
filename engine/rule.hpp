// A rule: a query, the actions to run for each match, and its semi-naive clock.
#pragma once

#include <string>

#include "engine/action.hpp"
#include "engine/query.hpp"
#include "engine/query_plan.hpp"
#include "support/source_file.hpp"

namespace kiln::engine {

struct Rule {
  std::string name;     // unique; egglog uses the rule's source text when unnamed
  std::string ruleset;  // "" is the default ruleset
  Query query;
  ActionProgram actions;  // registers 0..num_vars-1 hold the match
  support::Span span;
  // `:naive`: every search sees all rows, not only those new since the rule's last search.
  bool naive = false;

  // Semi-naive clock: rows written at or after this time have not been searched yet.
  Timestamp searched_until = 0;
  std::vector<Value> constants_seen;  // canonical e-class constants at the last search
  std::shared_ptr<PlanCache> plans = make_plan_cache();  // join plans, reused between searches
  // Back-off scheduling state (only with a match limit).
  std::uint32_t times_banned = 0;
  std::uint64_t banned_until_iteration = 0;
};

}  // namespace kiln::engine
