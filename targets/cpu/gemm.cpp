// Gemm on OpenBLAS; see gemm.hpp.
#include "targets/cpu/gemm.hpp"

#include <cblas.h>

#include "support/diagnostic.hpp"
#include "targets/gemm_reference.hpp"

namespace kiln::targets::cpu {

bool gemm_supported(const runtime::LibraryCall& call) {
  return call.op == "gemm" && (call.dtype == graph::DType::F32 || call.dtype == graph::DType::F64);
}

void gemm_openblas(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                   const graph::DimValues& dims) {
  KILN_ASSERT(gemm_supported(call) && buffers.size() == 3, "gemm_openblas: unsupported call");
  const GemmShape s = gemm_shape(call, dims);
  const CBLAS_TRANSPOSE ta = s.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = s.trans_b ? CblasTrans : CblasNoTrans;
  auto bi = [](long long v) { return static_cast<blasint>(v); };
  // Small products on one thread: waking OpenBLAS's pool costs more than it saves, and its
  // spinning threads compete with the OpenMP kernels around the call.
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
                       static_cast<double>(s.k);
  openblas_set_num_threads(flops < 8e6 ? 1 : openblas_get_num_procs());
  for (long long p = 0; p < s.batch; ++p) {
    if (call.dtype == graph::DType::F32) {
      const float* a = static_cast<const float*>(buffers[0]) + s.offset_a + p * s.stride_a;
      const float* b = static_cast<const float*>(buffers[1]) + s.offset_b + p * s.stride_b;
      float* c = static_cast<float*>(buffers[2]) + p * s.stride_c;
      cblas_sgemm(CblasRowMajor, ta, tb, bi(s.m), bi(s.n), bi(s.k), 1.0f, a, bi(s.lda), b,
                  bi(s.ldb), 0.0f, c, bi(s.ldc));
    } else {
      const double* a = static_cast<const double*>(buffers[0]) + s.offset_a + p * s.stride_a;
      const double* b = static_cast<const double*>(buffers[1]) + s.offset_b + p * s.stride_b;
      double* c = static_cast<double*>(buffers[2]) + p * s.stride_c;
      cblas_dgemm(CblasRowMajor, ta, tb, bi(s.m), bi(s.n), bi(s.k), 1.0, a, bi(s.lda), b,
                  bi(s.ldb), 0.0, c, bi(s.ldc));
    }
  }
}

}  // namespace kiln::targets::cpu
