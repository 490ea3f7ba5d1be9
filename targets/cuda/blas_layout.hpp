// How kiln's row-major "gemm" LibraryCall becomes the column-major product cuBLAS and cuBLASLt
// compute. A row-major [r, c] matrix with leading dimension ld is, read column-major, the
// [c, r] matrix with the same ld: its transpose. So C = A B (row-major) is computed as
// Cᵀ = Bᵀ Aᵀ (column-major): kiln's B is the library's first operand, kiln's A its second, and
// m and n trade places. A bias of n elements per row of C is then one value per row of Cᵀ,
// which is what cuBLASLt's bias epilogue adds. Kept free of CUDA headers: the unit tests check
// the mapping against the reference gemm on the CPU.
#pragma once

#include "targets/gemm_reference.hpp"

namespace kiln::targets::cuda {

// One operand as the library sees it: a column-major matrix of `rows` x `cols` stored with
// leading dimension `ld`, used transposed when `transposed` (cuBLAS's CUBLAS_OP_T).
struct ColumnMajorOperand {
  int input = 0;  // which input buffer of the call (0: kiln's A, 1: kiln's B)
  bool transposed = false;
  long long rows = 0, cols = 0, ld = 0;
  long long offset = 0;  // elements into the buffer
  long long stride = 0;  // elements between batch entries
};

// D[m, n] = op(a) op(b) (+ C0) (+ bias per row), column-major, `batch` times.
struct ColumnMajorGemm {
  long long m = 0, n = 0, k = 0, batch = 1;
  ColumnMajorOperand a, b;
  long long ldc = 0, stride_c = 0;  // D's (and C0's) leading dimension and batch stride
};

ColumnMajorGemm column_major_gemm(const GemmShape& s);

}  // namespace kiln::targets::cuda
