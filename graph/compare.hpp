// Agreement with the reference interpreter: the one rule every check of a target's results uses
// (the compiler's candidate and program checks, the measurement harness, `kiln run --check`).
//
// Per element: |got - want| <= absolute + relative * |want|, so a tensor's large elements do not
// loosen the check of its small ones (a softmax row's tail). NaN agrees only with NaN, and an
// infinity only with the same infinity. Both bounds come from the dtype's machine epsilon and the
// length of the reductions behind the values:
//   relative = absolute = k * eps(dtype) * sqrt(reduction length), k = 32 (f32, f64) or 8
//   (f16, bf16)
// Why these: two correct kernels differ by their summation order, fused roundings and libm
// versions. Summation-order error is a random walk of one rounding per term, so it grows as
// sqrt(n) (not the worst case n, which would accept real bugs in long reductions); k covers the
// few-ulp differences of transcendental functions and of a chain of fused ops (in f16 and bf16
// an ulp is already coarse, and kernels compute in f32 and round a few times, so fewer ulps:
// 8 ulps of bf16 are 6%); the absolute part covers cancellation (a sum of terms of magnitude ~1
// that ends near 0), since random inputs lie in [-1, 1]. Integers and bool are exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/hlir.hpp"

namespace kiln::graph {

// How far a result may be from the interpreter's: |got - want| <= absolute + relative * |want|.
struct Tolerance {
  double absolute = 0.0;
  double relative = 0.0;
};

// The machine epsilon of a float dtype (2^-52, 2^-23, 2^-10, 2^-7), 0 for integers and bool.
double dtype_epsilon(DType dtype);

// The tolerance for values of `dtype` computed through reductions of `reduction_length`
// elements in all (1 or less: no reduction); see the header comment.
Tolerance tolerance(DType dtype, std::int64_t reduction_length = 1);

// The number of elements folded into each output element of `body` at `dims`: along every chain
// of nested Reduce nodes the product of their extents, the largest over chains (at least 1).
std::int64_t reduction_length(const Body& body, const DimValues& dims);
// The same for HLIR node `id`: summed along each path from the graph's inputs (errors of
// successive reductions add up), the largest over paths; SumReduce, MaxReduce and Softmax
// contribute their axis extent (at least 1).
std::int64_t reduction_length(const Graph& g, NodeId id, const DimValues& dims);

// "" when `got` agrees with `want` element by element within `tol`; else a message naming the
// first element that differs (or the sizes, when they differ: never a partial comparison).
// `slack`: per element, more absolute room (empty: none) -- how far the reference's own
// roundings move that element (see rounding_spread).
std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     Tolerance tol, const std::vector<double>& slack = {});

// Per element, kSpreadFactor times the distance between a value rounded at every node (the
// reference) and the same value computed in double: where a value is ill-conditioned (the sine
// of an argument of 166, whose one f32 ulp is 1.5e-5), a correct kernel that rounds at other
// places (an FMA) lands that far from the reference, beyond the dtype's few ulps. One element's
// distance is one draw of that rounding noise and may be near 0 by luck where a kernel's is not,
// so no element gets less than kSpreadFactor times the tensor's root-mean-square distance.
// Non-finite pairs give 0 (they are compared exactly) and count for nothing.
std::vector<double> rounding_spread(const std::vector<double>& rounded,
                                    const std::vector<double>& in_double);
constexpr double kSpreadFactor = 2.0;
// mismatch() with tolerance(dtype, reduction_length).
std::string mismatch(const std::vector<double>& got, const std::vector<double>& want,
                     DType dtype, std::int64_t reduction_length = 1);

}  // namespace kiln::graph
