// The row-major to column-major mapping of a gemm call; see blas_layout.hpp.
#include "targets/cuda/blas_layout.hpp"

namespace kiln::targets::cuda {

ColumnMajorGemm column_major_gemm(const GemmShape& s) {
  ColumnMajorGemm g;
  g.m = s.n;
  g.n = s.m;
  g.k = s.k;
  g.batch = s.batch;
  // First operand: Bᵀ (n x k). B row-major [k, n] read column-major is [n, k] = Bᵀ as stored;
  // B stored transposed (row-major [n, k]) reads as [k, n] and is used transposed.
  g.a.input = 1;
  g.a.transposed = s.trans_b;
  g.a.rows = s.trans_b ? s.k : s.n;
  g.a.cols = s.trans_b ? s.n : s.k;
  g.a.ld = s.ldb;
  g.a.offset = s.offset_b;
  g.a.stride = s.stride_b;
  // Second operand: Aᵀ (k x m), the same way.
  g.b.input = 0;
  g.b.transposed = s.trans_a;
  g.b.rows = s.trans_a ? s.m : s.k;
  g.b.cols = s.trans_a ? s.k : s.m;
  g.b.ld = s.lda;
  g.b.offset = s.offset_a;
  g.b.stride = s.stride_a;
  g.ldc = s.ldc;
  g.stride_c = s.stride_c;
  return g;
}

}  // namespace kiln::targets::cuda
