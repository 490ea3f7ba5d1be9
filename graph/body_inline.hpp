// Fusion by substitution (DESIGN §5): a producer Body inlined into the consumer Body that reads
// its output buffer, so the two run as one loop nest and the intermediate buffer disappears.
//
// The consumer reads input `slot` at flat positions; the producer writes its buffer densely
// (each output loop variable is one digit of a mixed-radix position). Inlining solves each load
// position for the producer's loop variables and substitutes them into a copy of the
// producer's value, so an elementwise producer becomes part of the consumer's expression, a
// reduction producer a nested Reduce (which backends hoist out of loops it does not depend on),
// and a producer read inside the consumer's reduction joins that reduction's inner loop.
//
// The solution is exact when the position is linear in the consumer's variables with
// coefficients that are multiples of the producer's strides and every digit is proven in range
// (`o0*n + o1` against strides `n, 1`, with o1 < n); otherwise the digits are the general
// `position / stride % extent`, which is correct for every in-bounds position and only slower.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "graph/body.hpp"

namespace kiln::graph {

// The consumer with every load of input `slot` replaced by the producer's value there. The
// result's inputs are the consumer's with `slot` replaced by the producer's inputs, in order:
//   consumer in0 .. in(slot-1), producer in0 .. in(m-1), consumer in(slot+1) ..
// A UserError says why when it cannot be done: the slot is read through a dynamic row or is
// the output's alias, the producer writes rows (Scatter), has serial loops or a store that is
// not a dense row-major cover of its output, or the dtypes differ.
Body inline_input(const Body& consumer, std::size_t slot, const Body& producer);

// How many times the inlined consumer would compute each element of the producer's output:
// the loads of `slot` sit (after hoisting) in loop nests whose iteration counts add up to
// this factor times the producer's size. 1 when they add up to at most its size (elementwise
// chains, a reduction reading its producer in its inner loop, a reduction broadcast along
// loops it is hoisted out of); more for a broadcast read or a softmax reading its input in
// three passes; nullopt when the factor is not a constant (it grows with a dim).
//
// With `fold_rows`, the factor on a backend that folds the first reduction homed in the
// innermost output loop (parallel, of constant extent) for all of that loop's values at once,
// its state in arrays (the CPU target's row state): what the reduction's elements compute
// without that loop's variable runs once per reduction step, not once per column (attention's
// scores, reduced over keys for every column of the head dim, are computed once per key).
std::optional<std::int64_t> inline_read_factor(const Body& consumer, std::size_t slot,
                                               const Body& producer, bool fold_rows = false);

// The number of value nodes (not loads, constants or monoid parameters) of a Body: the work per
// element a recompute repeats.
std::size_t body_compute_nodes(const Body& body);

}  // namespace kiln::graph
