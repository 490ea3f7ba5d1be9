// Tiling an output loop (DESIGN §5): loop i of extent N becomes an outer loop o over the
// ceil(N / T) tiles and an inner loop t < T in its place, i = o*T + t. Where T does not divide
// N, the last tile is ragged: the Body's guard `o*T + t < N` keeps its tail from computing or
// storing, and the loads that name o or t carry the guard in their validity (so a backend may
// evaluate them before the store's test). Exact: the same iterations compute the same values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "graph/body.hpp"

namespace kiln::graph {

// `body` with output loop `loop` split into tiles of `tile` iterations (outer loop `loop`, inner
// loop `loop + 1`, the later loops one place further in). A UserError says why when it cannot be
// done: the loop does not exist, the tile is below 2, the Body writes rows through an index
// (Scatter), or a reduction's extent names the loop (its ragged tail would read past its
// rows).
Body tile_loop(const Body& body, std::size_t loop, std::int64_t tile);

}  // namespace kiln::graph
