// Gemm on the CPU; see gemm.hpp.
#include "targets/cpu/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <optional>

#include "support/diagnostic.hpp"
#include "targets/cpu/gemv.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/cpu/vector_clones.hpp"
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

// The streaming form of a product with few rows (or few columns) of C: the operand on the
// many side is the weights, read once, the few rows of A (columns of B) the vectors. Empty
// when there is none: more than kStreamingVectors vectors, or a batch of vectors whose
// weights are not stored with the outputs as rows.
std::optional<GemvOperands> streaming_operands(const GemmShape& s, const float* a,
                                               const float* b, float* c) {
  GemvOperands op;
  op.inputs = s.k;
  op.y = c;
  if (s.m <= s.n) {  // c[m, n] = a[m, k] B: the weights are B, the vectors a's rows
    op.vectors = s.m;
    op.x = a;
    op.incx = s.trans_a ? s.lda : 1;
    op.ldx = s.trans_a ? 1 : s.lda;
    op.w = b;
    op.ldw = s.ldb;
    op.rows_are_outputs = s.trans_b;
    op.incy = 1;
    op.ldy = s.ldc;
  } else {  // c[m, n] = A b[k, n]: the weights are A, the vectors b's columns
    op.vectors = s.n;
    op.x = b;
    op.incx = s.trans_b ? 1 : s.ldb;
    op.ldx = s.trans_b ? s.ldb : 1;
    op.w = a;
    op.ldw = s.lda;
    op.rows_are_outputs = !s.trans_a;
    op.incy = s.ldc;
    op.ldy = 1;
  }
  const bool fits = op.vectors == 1 || (op.vectors <= kStreamingVectors && op.rows_are_outputs);
  if (s.k <= 0 || !fits) return std::nullopt;
  return op;
}

// The blocks of one product: every batch entry split into `parts` slices of C's longer side
// (of the output vector for a matrix-vector product).
// The epilogue on rows [i0, i1) and columns [j0, j1) of C, just written by this thread: the
// bias row added, then ReLU as the graph writes it, y * (0 < y) (so -inf and NaN give NaN).
template <class T>
KILN_INLINE void epilogue_rows(const T* bias, T* c, long long ldc, bool relu, long long i0,
                               long long i1, long long j0, long long j1) {
  for (long long i = i0; i < i1; ++i) {
    T* row = c + i * ldc;
    if (relu) {
      for (long long j = j0; j < j1; ++j) {
        const T y = row[j] + bias[j];
        row[j] = y * static_cast<T>(T(0) < y);
      }
    } else {
      for (long long j = j0; j < j1; ++j) row[j] += bias[j];
    }
  }
}
// One clone per x86 level (the library is built for the baseline): the loops vectorize.
KILN_VECTOR_CLONES
void epilogue_block(const float* bias, float* c, long long ldc, bool relu, long long i0,
                    long long i1, long long j0, long long j1) {
  epilogue_rows(bias, c, ldc, relu, i0, i1, j0, j1);
}
KILN_VECTOR_CLONES
void epilogue_block(const double* bias, double* c, long long ldc, bool relu, long long i0,
                    long long i1, long long j0, long long j1) {
  epilogue_rows(bias, c, ldc, relu, i0, i1, j0, j1);
}

template <class T>
struct Blocks {
  const GemmShape& s;
  const T* a;
  const T* b;
  const T* bias;  // null without an epilogue
  T* c;
  bool streaming;
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
    bool done = false;
    if constexpr (sizeof(T) == 4) {
      if (streaming) {
        gemv_range(*streaming_operands(s, ap, bp, cp), first, last);
        done = true;
      }
    }
    // The block is C's columns [first, last) along n, else its rows.
    const long long i0 = along_n ? 0 : first, i1 = along_n ? s.m : last;
    const long long j0 = along_n ? first : 0, j1 = along_n ? last : s.n;
    if (!done) gemm_block(s, ap, bp, cp, i0, i1, j0, j1);
    if (bias) {
      epilogue_block(bias, cp, s.ldc, s.activation == GemmActivation::Relu, i0, i1, j0, j1);
    }
  }
};

// Runs the batch * parts blocks on the pool's threads (on this thread alone when `parallel`
// is false).
template <class T>
void run_blocks(const GemmShape& s, const T* a, const T* b, const T* bias, T* c, bool streaming,
                bool parallel) {
  const int threads = parallel ? threads_in_use() : 1;
  // Enough blocks to keep every thread busy; whole batch entries when there are enough of them.
  const long long parts = s.batch >= threads ? 1 : (threads + s.batch - 1) / s.batch;
  // A streaming product splits its outputs (the weights' rows), sgemm C's longer side.
  const bool along_n = streaming ? s.m <= s.n : s.n >= s.m;
  const long long side = along_n ? s.n : s.m;
  // Slices in multiples of 16 (a cache line of f32 in C, four rows of a gemv).
  const long long chunk = std::max<long long>(16, (side + parts - 1) / parts + 15) / 16 * 16;
  const Blocks<T> blocks{s, a, b, bias, c, streaming, parts, along_n, side, chunk};
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
  const T* bias = s.bias ? static_cast<const T*>(buffers[2]) : nullptr;
  T* c = static_cast<T*>(buffers[s.inputs()]);
  bool streaming = false;
  if constexpr (sizeof(T) == 4) streaming = streaming_operands(s, a, b, c).has_value();
  const double work = static_cast<double>(s.batch) * static_cast<double>(s.m) *
                      static_cast<double>(s.n) * static_cast<double>(s.k);
  const bool parallel = work >= (streaming ? kGemvParallelElements : kGemmParallelWork);
  run_blocks(s, a, b, bias, c, streaming, parallel);
}

}  // namespace

bool gemm_supported(const runtime::LibraryCall& call) {
  // Epilogues: a bias row and ReLU (gemm_epilogue.egg), applied per block; no beta = 1
  // accumulation and no GELU. Params that are not constants are not known here: refused.
  auto constant = [&](const char* name, std::int64_t allowed_max) {
    auto it = call.params.find(name);
    if (it == call.params.end()) return true;
    const std::optional<std::int64_t> v = it->second.as_constant();
    return v && *v >= 0 && *v <= allowed_max;
  };
  return call.op == "gemm" && constant("bias", 1) && constant("accumulate", 0) &&
         constant("activation", static_cast<std::int64_t>(GemmActivation::Relu)) &&
         (call.dtype == graph::DType::F32 || call.dtype == graph::DType::F64);
}

void gemm_cpu(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
              const graph::DimValues& dims) {
  const GemmShape s = gemm_shape(call, dims);
  KILN_ASSERT(gemm_supported(call) && buffers.size() == s.inputs() + 1,
              "gemm_cpu: unsupported call");
  if (s.batch <= 0 || s.m <= 0 || s.n <= 0) return;
  if (call.dtype == graph::DType::F32) {
    gemm_typed<float>(s, buffers);
  } else {
    gemm_typed<double>(s, buffers);
  }
}

}  // namespace kiln::targets::cpu
