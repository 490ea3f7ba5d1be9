// Splitting a reduction (DESIGN §5; flash-decoding when the reduction runs over a long KV
// cache): a reduction over r < N becomes two kernels,
//
//   partial: for the Body's loops, c < P (parallel), k < S:
//              state component k of the monoid folded over r in chunk c,
//              r = c*C + r', r' < min(C, N - c*C), C = ceil(N / P)
//   combine: the Body with that reduction replaced by the fold over c < P of the P partial
//            states (the monoid's combine, then its finalize)
//
// so the P chunks of one output element run in parallel, where the unsplit Body has only its
// output loops to share. Any Monoid splits: its state (S components: one for a sum or a max,
// three for the online softmax's running max, sum and weighted sum) is what the partial kernel
// writes. An empty chunk (P > N) writes the identity, -inf states included, which combine
// leaves alone. Not exact: the monoid is reassociated (chunks folded separately, then merged),
// which rounds differently for sums; every candidate is still checked against the interpreter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "graph/body.hpp"

namespace kiln::graph {

struct SplitReduce {
  // Reads the Body's inputs; writes (loop iteration, c, k) at
  // ((iteration's row-major index) * P + c) * S + k.
  Body partial;
  // Reads the Body's inputs, then the partial states as its last input.
  Body combine;
};

// The reduction split_reduce splits: the Body's one Reduce outside every other (reached from its
// value without entering another's elements); nullopt when there are none or several.
std::optional<ScalarId> outermost_reduce(const Body& body);

// The Body's one reduction outside every other (its value's, not nested in another's elements)
// split into `parts` chunks. A UserError says why when it cannot be done: fewer than 2 parts,
// none or several such reductions, a constant extent shorter than two elements per part, a
// Body that writes rows through an index (Scatter) or has a serial loop.
SplitReduce split_reduce(const Body& body, std::int64_t parts);

}  // namespace kiln::graph
