// Gemm on the CPU; see gemm.hpp.
#include "targets/cpu/gemm.hpp"

#include <cblas.h>

#include <algorithm>

#include "support/diagnostic.hpp"
#include "targets/cpu/gemv.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/gemm_reference.hpp"

namespace kiln::targets::cpu {

namespace {

blasint bi(long long v) {
  return static_cast<blasint>(v);
}

// One block of batch entry `p`: rows [i0, i1) and columns [j0, j1) of C, on this thread.
template <class T>
void gemm_block(const GemmShape& s, const T* a, const T* b, T* c, long long i0, long long i1,
                long long j0, long long j1) {
  if (i0 >= i1 || j0 >= j1) return;
  const T* ab = a + (s.trans_a ? i0 : i0 * s.lda);
  const T* bb = b + (s.trans_b ? j0 * s.ldb : j0);
  T* cb = c + i0 * s.ldc + j0;
  const CBLAS_TRANSPOSE ta = s.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = s.trans_b ? CblasTrans : CblasNoTrans;
  if constexpr (sizeof(T) == 4) {
    cblas_sgemm(CblasRowMajor, ta, tb, bi(i1 - i0), bi(j1 - j0), bi(s.k), 1.0f, ab, bi(s.lda), bb,
                bi(s.ldb), 0.0f, cb, bi(s.ldc));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, bi(i1 - i0), bi(j1 - j0), bi(s.k), 1.0, ab, bi(s.lda), bb,
                bi(s.ldb), 0.0, cb, bi(s.ldc));
  }
}

// The matrix-vector form of a product with one row (or one column) of C.
GemvOperands gemv_operands(const GemmShape& s, const float* a, const float* b, float* c) {
  GemvOperands op;
  if (s.m == 1) {  // c[1, n] = a[1, k] B: the weights are B
    op.x = a;
    op.incx = s.trans_a ? s.lda : 1;
    op.w = b;
    op.ldw = s.ldb;
    op.rows_are_outputs = s.trans_b;
    op.y = c;
    op.incy = 1;
  } else {  // c[m, 1] = A b[k, 1]: the weights are A
    op.x = b;
    op.incx = s.trans_b ? 1 : s.ldb;
    op.w = a;
    op.ldw = s.lda;
    op.rows_are_outputs = !s.trans_a;
    op.y = c;
    op.incy = s.ldc;
  }
  op.inputs = s.k;
  return op;
}

// The blocks of one product: every batch entry split into `parts` slices of C's longer side
// (of the output vector for a matrix-vector product).
template <class T>
struct Blocks {
  const GemmShape& s;
  const T* a;
  const T* b;
  T* c;
  bool as_gemv;
  long long parts;
  bool along_n;
  long long side;
  long long chunk;

  void run(long long block) const {
    const long long p = block / parts, q = block % parts;
    const long long first = std::min(side, q * chunk), last = std::min(side, first + chunk);
    const T* ap = a + s.offset_a + p * s.stride_a;
    const T* bp = b + s.offset_b + p * s.stride_b;
    T* cp = c + p * s.stride_c;
    if constexpr (sizeof(T) == 4) {
      if (as_gemv) {
        gemv_range(gemv_operands(s, ap, bp, cp), first, last);
        return;
      }
    }
    if (along_n) {
      gemm_block(s, ap, bp, cp, 0, s.m, first, last);
    } else {
      gemm_block(s, ap, bp, cp, first, last, 0, s.n);
    }
  }
};

// Runs the batch * parts blocks on the pool's threads (on this thread alone when `parallel`
// is false).
template <class T>
void run_blocks(const GemmShape& s, const T* a, const T* b, T* c, bool as_gemv, bool parallel) {
  const int threads = parallel ? threads_in_use() : 1;
  // Enough blocks to keep every thread busy; whole batch entries when there are enough of them.
  const long long parts = s.batch >= threads ? 1 : (threads + s.batch - 1) / s.batch;
  const bool along_n = as_gemv ? s.m == 1 : s.n >= s.m;
  const long long side = along_n ? s.n : s.m;
  // Slices in multiples of 16 (a cache line of f32 in C, four rows of a gemv).
  const long long chunk = std::max<long long>(16, (side + parts - 1) / parts + 15) / 16 * 16;
  const Blocks<T> blocks{s, a, b, c, as_gemv, parts, along_n, side, chunk};
  const long long count = s.batch * parts;
  if (threads <= 1) {
    for (long long block = 0; block < count; ++block) blocks.run(block);
    return;
  }
  parallel_for(
      count,
      [](void* context, long long block) { static_cast<const Blocks<T>*>(context)->run(block); },
      const_cast<Blocks<T>*>(&blocks));
}

template <class T>
void gemm_typed(const GemmShape& s, const std::vector<void*>& buffers) {
  const T* a = static_cast<const T*>(buffers[0]);
  const T* b = static_cast<const T*>(buffers[1]);
  T* c = static_cast<T*>(buffers[2]);
  const bool as_gemv = sizeof(T) == 4 && (s.m == 1 || s.n == 1) && s.k > 0;
  const double work = static_cast<double>(s.batch) * static_cast<double>(s.m) *
                      static_cast<double>(s.n) * static_cast<double>(s.k);
  const bool parallel = work >= (as_gemv ? kGemvParallelElements : kGemmParallelWork);
  run_blocks(s, a, b, c, as_gemv, parallel);
}

}  // namespace

bool gemm_supported(const runtime::LibraryCall& call) {
  // No epilogue params: OpenBLAS's gemm computes the plain product only.
  const bool plain = !call.params.count("bias") && !call.params.count("accumulate") &&
                     !call.params.count("activation");
  return call.op == "gemm" && plain &&
         (call.dtype == graph::DType::F32 || call.dtype == graph::DType::F64);
}

void gemm_cpu(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
              const graph::DimValues& dims) {
  KILN_ASSERT(gemm_supported(call) && buffers.size() == 3, "gemm_cpu: unsupported call");
  const GemmShape s = gemm_shape(call, dims);
  if (s.batch <= 0 || s.m <= 0 || s.n <= 0) return;
  if (call.dtype == graph::DType::F32) {
    gemm_typed<float>(s, buffers);
  } else {
    gemm_typed<double>(s, buffers);
  }
}

}  // namespace kiln::targets::cpu
