// The meaning of the "gemm" LibraryCall (runtime/target.hpp) as plain loops over doubles; the
// reference target runs it, and tests compare library implementations with it.
#pragma once

#include <vector>

#include "graph/expr.hpp"
#include "runtime/target.hpp"

namespace kiln::targets {

// Reads A and B (as doubles) and writes C (as doubles), sized by the call's params at `dims`.
void gemm_reference(const runtime::LibraryCall& call, const graph::DimValues& dims,
                    const std::vector<double>& a, const std::vector<double>& b,
                    std::vector<double>& c);

// The params of a gemm call evaluated at `dims`.
struct GemmShape {
  long long batch, m, n, k, lda, ldb, ldc, stride_a, stride_b, stride_c, offset_a, offset_b;
  bool trans_a, trans_b;
  // Elements each operand spans (the buffer size a call needs).
  long long a_elements() const;
  long long b_elements() const;
  long long c_elements() const;
};
GemmShape gemm_shape(const runtime::LibraryCall& call, const graph::DimValues& dims);

}  // namespace kiln::targets
