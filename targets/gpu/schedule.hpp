// The GPU schedule (DESIGN §6): how a Body's loops map to a grid of work-groups of threads, as
// data, so that a search can vary it and every variant can be run against the interpreter.
//
// Two mappings:
// - ThreadPerOutput: the output loops are collapsed into one index, strided over every thread
//   of the grid; each thread computes its outputs alone (its reductions are serial loops).
//   Good when there are many outputs: neighbouring threads store neighbouring elements.
// - GroupPerRow(k): the iterations of the leading k output loops ("rows") are strided over the
//   work-groups; the remaining output loops are collapsed and strided over the group's threads.
//   With `group_reduce`, a reduction computed once per row (a softmax's max and sum, a row
//   sum, a long dot product when k covers every loop) is folded by all the group's threads
//   first, each over a strided part of its range, then merged by a tree through local (shared)
//   memory with a barrier per level, and every thread reads the result. Pays when rows are long
//   and few. With `warp_reduce` as well, the partial states are first folded inside each
//   sub-group of kSubGroup threads by lane exchanges (a butterfly: CUDA's __shfl_xor_sync; a
//   dialect without them exchanges through local memory), one partial per sub-group meets in
//   local memory after one barrier, and every sub-group folds those the same way: two
//   exchange stages and one barrier instead of a barrier per tree level.
//
// A Body with a serial output loop (Scatter: the last write to a row wins) runs as one group:
// its loops up to the last serial one run in order on every thread, a barrier after each
// iteration, and the loops inside them are strided over the threads.
//
// The grid's size is an Expr over the kernel's dims (group_count), evaluated at each launch.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/body.hpp"

namespace kiln::targets::gpu {

enum class Mapping { ThreadPerOutput, GroupPerRow };

// Threads of a sub-group (a CUDA warp) in the warp_reduce schedule.
inline constexpr int kSubGroup = 32;

struct Schedule {
  Mapping mapping = Mapping::ThreadPerOutput;
  std::size_t group_loops = 0;  // GroupPerRow: the leading output loops mapped to groups
  int block = 256;              // threads per work-group, a power of two
  bool group_reduce = false;    // GroupPerRow: per-row reductions folded by the whole group
  bool warp_reduce = false;     // group_reduce by sub-group exchanges (block >= kSubGroup)
  friend bool operator==(const Schedule&, const Schedule&) = default;
};

// A short deterministic name, part of kernel names: `t256`, `g2b128r` (rows 2, block 128,
// group reduce), `g1b256rw` (by sub-group exchanges).
std::string schedule_tag(const Schedule& schedule);

// Why `schedule` cannot be used for `body` (empty if it can): a collapsed loop whose extent
// depends on another loop variable, a serial loop outside the one-group form, a bad block.
std::string schedule_problem(const graph::Body& body, const Schedule& schedule);

// The schedule used when nothing else is chosen: a group per row for reductions computed once
// per row of an inner loop (softmax, norms) or long reductions over few outputs; a thread per
// output otherwise.
Schedule default_schedule(const graph::Body& body);

// The schedules a search may try for `body` (every one valid; the default first, then its
// sub-group variants).
std::vector<Schedule> schedule_choices(const graph::Body& body);

// How many work-groups to launch, as an Expr over the kernel's dims. The kernels stride, so a
// launcher may cap it (at least 1).
graph::Expr group_count(const graph::Body& body, const Schedule& schedule);

// The number of leading output loops that must run in order (through the last serial loop).
std::size_t serial_prefix(const graph::Body& body);

}  // namespace kiln::targets::gpu
