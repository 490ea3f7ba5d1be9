// Whether a Body folds products of two inputs (a matrix product computed by its loops, maybe
// fused): the slow kind of kernel to measure, and the kind whose loops tiling reorders for reuse.
#pragma once

#include "graph/body.hpp"

namespace kiln::graph {

// True when some Reduce's elements load from more than one input slot.
bool folds_products(const Body& body);

}  // namespace kiln::graph
