// Generic join: matches a cyclic query one variable at a time (worst-case optimal), where the
// atom-at-a-time nested-loop join of query_plan can visit far more partial matches than results.
#pragma once

#include <memory>
#include <vector>

#include "engine/query_plan.hpp"

namespace kiln::engine {

// Which rows of an atom's table one semi-naive variant may use: all of them, only rows written
// at or after the window's `since`, or only rows written before it.
enum class RowFilter { Any, New, Old };

// True if the hypergraph of the query's atoms (one hyperedge per atom, over its variables) is
// cyclic, i.e. GYO reduction leaves atoms behind. Primitives are not part of the hypergraph.
bool has_cyclic_atoms(const Query& query);

// The variable order of one semi-naive variant, reusable across searches of the same query
// (indexes are looked up again on each run: tables may have been copied by push/pop).
struct GenericJoinPlan;
std::shared_ptr<GenericJoinPlan> plan_generic_join(EGraph& egraph, const Query& query,
                                                   const std::vector<RowFilter>& filters,
                                                   Timestamp since);

// Enumerates the matches of one semi-naive variant (`filters`: one per atom) with a generic
// join, giving the same matches, each once, as the nested-loop join. Constants must already be
// canonical. Returns false if the sink stopped the search.
// `splits[a]`: the first row of atom a's table at or after window.since.
bool run_generic_join(EGraph& egraph, const Query& query, GenericJoinPlan& plan,
                      const std::vector<RowFilter>& filters, SearchWindow window,
                      const std::vector<RowId>& splits, const MatchSink& sink);

// Plans and runs in one call (tests, one-off searches).
bool generic_join(EGraph& egraph, const Query& query, const std::vector<RowFilter>& filters,
                  SearchWindow window, const MatchSink& sink);

}  // namespace kiln::engine
