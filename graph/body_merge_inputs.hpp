// Merging two inputs of a Body that are the same buffer: after fusion a kernel often reads one
// buffer through two slots (x * relu(x) inlines x's producer twice); merged, the loads of both
// share a slot, equal loads become one node, and the input list stays duplicate-free.
#pragma once

#include <cstddef>

#include "graph/body.hpp"

namespace kiln::graph {

// `body` with the loads of input `drop` reading input `keep` instead and `drop` removed (inputs
// after it move down one slot). A UserError when the slots are out of range, equal, or of
// different dtypes.
Body merge_inputs(const Body& body, std::size_t keep, std::size_t drop);

}  // namespace kiln::graph
