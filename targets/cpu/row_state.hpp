// Row-state reductions: when to fold a reduction for every column of the innermost output loop
// at once, and which of its parts are then shared by all columns (the CPU code generator's
// choice; codegen.cpp emits it).
//
// Loop-invariant code motion puts a reduction that depends on the innermost output loop c
// inside that loop, so whatever its elements compute without c is recomputed for every c:
// attention's scores q.k_j, reduced over keys j for each column c of the head dim, cost 64
// times their work. With c's extent E a small constant the reduction can instead run once for
// all c, its state held in arrays of E:
//
//   state_k[E] = identity_k
//   for r { nodes without c, once ;  for c < E { nodes with c ; state[c] = combine(state[c], lift) } }
//   for c < E { finalize ; the rest of the value ; store }
//
// A state component whose combine reads only shared components and shared lifts is itself
// the same for every c (the online softmax's running max and sum): it stays one scalar,
// updated once per r, and so do the parts of the other components' combine that read only
// shared values (the rescaling exp2 terms). This is generic over the Monoid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "targets/node_homes.hpp"

namespace kiln::targets::cpu {

// The largest constant extent of c held in state arrays (floats on the stack, per thread).
constexpr std::int64_t kMaxRowStateColumns = 256;

struct RowStatePlan {
  graph::ScalarId reduce = 0;        // the Reduce folded for every column at once
  std::string column_var;            // c: the innermost output loop's variable
  std::int64_t columns = 0;          // its constant extent E
  std::vector<bool> shared_element;  // per element of the Reduce: the same for every c
  std::vector<bool> shared_lift;     // per lift expression
  std::vector<bool> shared_state;    // per state component (a scalar, not an array)
  // Nodes of c's scope that the reduction reads: computed for every c before it, kept in arrays.
  std::vector<graph::ScalarId> row_inputs;
  // Nodes of the reduction's scope without c (once per r) and with c (per r and c), by id.
  std::vector<graph::ScalarId> shared_nodes;
  std::vector<graph::ScalarId> column_nodes;
  // Non-trivial nodes of the combine expressions that read only shared parameters: computed
  // once per r (the online softmax's new max and rescaling factors), by id.
  std::vector<graph::ScalarId> shared_combine;
};

// The row-state plan for `body`, or nothing where it does not pay or does not apply: the
// innermost output loop must be parallel with a constant extent of at most
// kMaxRowStateColumns, the store must have no dynamic row, and a Reduce homed in that loop
// (the first by id that qualifies) must have an extent without c and, in its own loop, work
// that does not depend on c.
std::optional<RowStatePlan> plan_row_state(const graph::Body& body, const NodeHomes& homes);

}  // namespace kiln::targets::cpu
