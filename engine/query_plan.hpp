// Query planning and matching: each query runs as an index nested-loop join, atoms ordered by
// bound columns and current table sizes, primitives evaluated as soon as their inputs are bound.
// Semi-naive evaluation runs one variant per atom, restricted to rows newer than a timestamp.
// Queries with cyclic atoms run as a generic join instead (generic_join.hpp).
#pragma once

#include <functional>
#include <memory>

#include "engine/egraph.hpp"
#include "engine/query.hpp"

namespace kiln::engine {

// Receives each match as an array of num_vars values; returns false to stop the search.
using MatchSink = std::function<bool(const Value* vars)>;

struct SearchWindow {
  // Only matches that use at least one row written at or after `since` (0 = every match).
  Timestamp since = 0;
  // Subsumed rows are hidden from rules but visible to `check`.
  bool include_subsumed = false;
};

// Join plans of one query, kept between searches and re-derived when table sizes move.
class PlanCache;
std::shared_ptr<PlanCache> make_plan_cache();

// Enumerates matches on the current (rebuilt) database; the database must not change meanwhile.
// Returns false if the sink stopped the search. With a cache, plans are reused across calls.
// `variant_done`, when set, is called after each semi-naive variant that ran (a rule's matches
// are applied in batches per variant, as egglog does).
bool search(EGraph& egraph, const Query& query, SearchWindow window, const MatchSink& sink,
            PlanCache* cache = nullptr, const std::function<void()>& variant_done = {});

// Updates `seen` to the canonical values of the query's e-class constants; true if any of them
// differs from before (a global merged into another class).
bool canonical_constants_moved(EGraph& egraph, const Query& query, std::vector<Value>& seen);

// True if the query has at least one match (used by check and :until; sees subsumed rows).
bool has_match(EGraph& egraph, const Query& query);

}  // namespace kiln::engine
