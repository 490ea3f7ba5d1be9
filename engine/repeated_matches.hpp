// Matches that repeat once projected on the variables a rule's actions read. In
// `path(x,z) :- path(x,y), edge(y,z)` the actions read x and z only, so every y between them
// gives the same stored match again (12M matches for 1M rows on a transitive closure). When
// running the actions again with the same values can change nothing, the runner drops such a
// repeat before storing it: a small cache of the matches stored last catches most repeats,
// which come close together in search order, for the price of one cached probe per match.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/action.hpp"
#include "engine/query.hpp"

namespace kiln::engine {

// False when the `stored` variables determine every variable of the query (through the keys
// of its atoms, whose output they fix, and the arguments of its primitives): distinct matches
// then have distinct stored values, and looking for repeats would be wasted.
bool projection_may_repeat(const Query& query, const std::vector<std::uint32_t>& stored);

// True if running the program again with the same registers, after it and other runs of it
// have run, changes nothing: it only constructs, looks up, copies, calls primitives that touch
// no table and sets rows of functions whose conflicts are errors. A union could make a later
// construct meet keys that are no longer canonical (a new row), a custom merge such as
// `(+ old new)` counts every write, and delete or subsume could be undone by a construct.
bool actions_idempotent(const EGraph& egraph, const ActionProgram& actions);

// The matches stored most recently in one batch, by hash (a direct-mapped cache: a new match
// displaces the one in its slot). A false "not seen" only costs a repeated, harmless action.
class RecentMatches {
 public:
  // Starts a batch of matches `width` values wide and forgets every match of earlier batches.
  void start(std::size_t width);
  // True if `match` was remembered in this batch; otherwise remembers it and returns false.
  bool repeat(const Value* match);

 private:
  // About 256 KiB of values: stays in the L2 cache next to the tables being searched.
  static constexpr std::size_t kValues = std::size_t{1} << 15;
  std::size_t width_ = 0;
  std::size_t slot_mask_ = 0;
  std::uint32_t batch_ = 0;
  std::vector<std::uint32_t> batch_of_slot_;  // the batch that filled each slot (0: none)
  std::vector<Value> values_;                 // width_ values per slot
};

}  // namespace kiln::engine
