// Random values for every Input node of a graph: what `kiln run`, `kiln compile` and the
// compiler's checks feed a model when no data is given. Floats are uniform in [-1, 1] scaled by
// 1/sqrt(last dim) (like an initialized weight) and never 0 after rounding to the dtype (a zero
// hides wrong kernels); integers that index a table (Gather or Scatter indices) lie inside it,
// other integers in [0, 4) (bools 0 or 1). Deterministic for a seed.
#pragma once

#include <map>
#include <string>

#include "graph/hlir.hpp"
#include "graph/interpret.hpp"
#include "graph/native.hpp"

namespace kiln::graph {

// One tensor per Input node (persistent ones included), by name.
std::map<std::string, Tensor> random_inputs(const Graph& g, const DimValues& dims, unsigned seed);

// Input node `id`'s tensor alone, drawn by the same rules from a generator seeded by `seed` and
// the input's name (so not the values random_inputs gives it): an InputSource for
// graph::interpret that makes a model's weights one at a time.
Tensor random_input(const Graph& g, NodeId id, const DimValues& dims, unsigned seed);
// The same values in the input's own layout (graph/native.hpp), made without doubles: what a
// device is given, a quarter of the memory for f32.
NativeTensor random_native_input(const Graph& g, NodeId id, const DimValues& dims,
                                 unsigned seed);

}  // namespace kiln::graph
