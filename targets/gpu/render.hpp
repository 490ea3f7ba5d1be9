// Renders a Body (graph/body.hpp) under a GPU schedule (schedule.hpp) as kernel source in a
// GPU dialect (dialect.hpp). One renderer for every GPU target: the indexing of collapsed
// loops, the group-strided rows, the thread-strided elements, the block reduction through local
// memory and its barriers are written once.
//
// Kernel ABI: the buffers (inputs in slot order, then the output), each as the dialect passes
// one, then the values of body_dims(body) as kiln_i64, in that order. Launch group_count
// groups (capped, at least 1: kernels stride) of `block` threads.
//
// Numerics follow the CPU target: computation in the node's dtype (f16/bf16 in float, rounded
// at each node), float-to-integer casts saturate, integer modulus by 0 gives 0, a dynamic row
// out of range reads NaN (0 for integers) and a store to one is skipped: a kernel never traps.
// A group reduction merges partial states in a tree, so sums round differently from the
// interpreter's sequential order; results agree within tolerance.
#pragma once

#include <string>
#include <vector>

#include "graph/body.hpp"
#include "targets/gpu/dialect.hpp"
#include "targets/gpu/schedule.hpp"

namespace kiln::targets::gpu {

struct KernelSource {
  std::string name;                // kiln_<body key>_<schedule tag>
  std::string code;                // the kernel, without the prelude
  std::vector<std::string> dims;   // body_dims(body): the order of the dim arguments
  Schedule schedule;
  graph::Expr groups;              // group_count(body, schedule)
};

// The helpers every kernel uses: the dialect's header, then shared integer, min/max,
// saturation and bfloat16 helpers. Emitted once per program, before the kernels.
std::string gpu_prelude(const Dialect& dialect);

// The source of `body` under `schedule` (which must be valid: schedule_problem is empty).
KernelSource render_gpu_kernel(const graph::Body& body, const Schedule& schedule,
                               const Dialect& dialect);

}  // namespace kiln::targets::gpu
