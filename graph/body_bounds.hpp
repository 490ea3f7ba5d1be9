// Static bounds proofs: every load and store of a Body stays inside its buffer for all values of
// the symbolic dims, before the kernel ever runs (DESIGN §7: candidates are first proven in bounds).
//
// The proof is symbolic interval arithmetic over Expr: each loop variable ranges over
// [0, extent - 1] (narrowed by a load's validity mask where the mask bounds it, so a padded read
// is in bounds when its valid region is; a dynamic row over [0, row count - 1], as kernels check
// rows at run time), each index gets a lower and an upper bound as Exprs in the symbolic dims,
// and `lower >= 0` and `elements - 1 - upper >= 0` are then shown with graph::bounds for every
// dim >= 1 (callers may narrow that with `ranges`). Sound but not complete: an access it cannot
// bound is rejected with the reason "cannot prove", never accepted.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/body.hpp"
#include "graph/expr.hpp"

namespace kiln::graph {

// "" when every load of input k (read at any index a live node computes) lies in
// [0, input_elements[k]) and every store in [0, output_elements), for all dims in `ranges`;
// else the reason for the first access that could not be proven, naming it (`load of in1`,
// `store`), its index Expr, the bound found and the extent. A dim not listed ranges over
// [1, +inf): list a dim that may be 0 (a cache position) and the limits a model needs (pos and
// seq within a KV cache's rows).
// `input_elements` needs one Expr per input of the Body (an internal error otherwise).
std::string prove_in_bounds(const Body& body, const std::vector<Expr>& input_elements,
                            const Expr& output_elements, const DimRanges& ranges = {});
// The same with the Body's own output_size() as the output's extent.
std::string prove_in_bounds(const Body& body, const std::vector<Expr>& input_elements,
                            const DimRanges& ranges = {});

// A strided access: positions offset + sum of index_i * stride_i for every index_i in
// [0, extent_i), as a library call reads or writes an operand (a gemm's A: batch, rows, columns).
struct StridedAccess {
  std::string what;                            // for messages: "gemm A"
  Expr offset;
  std::vector<std::pair<Expr, Expr>> extents;  // (extent, stride) per index
};
// "" when every position of `access` lies in [0, elements) for all dims in `ranges` (as above),
// else the reason.
std::string prove_in_bounds(const StridedAccess& access, const Expr& elements,
                            const DimRanges& ranges = {});

}  // namespace kiln::graph
