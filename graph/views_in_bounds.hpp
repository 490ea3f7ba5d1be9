// Every view of a graph inside its producer's buffer at given dims.
//
// A model's views may depend on its dims: attention over a KV cache reads the cache's first
// pos + seq rows. At dims past what the buffers hold (pos + seq beyond the cache's rows) such a
// view reads past its buffer. The interpreter notices as it reads; a compiled kernel would read
// outside its buffer, so `kiln run` and `kiln compile` refuse those dims before anything runs.
// The check is exact: a view is affine in its coordinates, so the least and greatest positions
// it reads over its valid (masked) box are attained at the box's corners.
#pragma once

#include <string>

#include "graph/expr.hpp"
#include "graph/hlir.hpp"

namespace kiln::graph {

// "" when every edge's view reads inside its producer's elements at `dims`; else the first that
// does not (in node order), with the positions it reads and the buffer's size.
std::string view_outside_buffer(const Graph& g, const DimValues& dims);

// A UserError with view_outside_buffer's reason and the dims, if there is one.
void check_views_in_bounds(const Graph& g, const DimValues& dims);

}  // namespace kiln::graph
