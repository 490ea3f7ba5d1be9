// Reordering the output loops of a Body (DESIGN §5): the same iterations in another nest order,
// so a backend walks the buffers in another order (a tile loop moved out for locality, the
// loop with the unit stride moved in for vectors). Exact: each iteration of a Body with only
// parallel loops computes its own element, so their order changes no value. Reductions are
// not output loops and keep their order: reordering them would reassociate their monoid,
// which only splitting a reduction does (graph/body_split_reduce.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "graph/body.hpp"

namespace kiln::graph {

// `body` with output loop `order[k]` of the source as its loop k (loops renamed o0, o1, ... in
// the new order). A UserError says why when it cannot be done: `order` is not a permutation of
// the loops, or it moves a serial loop or a loop across one (a serial loop's iterations must
// run in order: a Scatter's last write wins).
Body reorder_loops(const Body& body, const std::vector<std::size_t>& order);

// The permutation that moves loop `from` to position `to`, the others keeping their order: the
// argument reorder_loops takes for the `body-move-loop` primitive.
std::vector<std::size_t> move_loop_order(std::size_t loops, std::size_t from, std::size_t to);

}  // namespace kiln::graph
