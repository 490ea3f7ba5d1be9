// The CUDA target's "gemm" library op (runtime/target.hpp) through cuBLAS (cublasGemmEx,
// cublasGemmStridedBatchedEx) and cuBLASLt (cublasLtMatmul: layouts, batches, beta = 1
// accumulation, bias / ReLU / GELU epilogues). Both libraries are opened with dlopen on first
// use, not linked: a process that links cuBLAS takes about half a second to start, and every
// kiln executable links this target. Which of the two runs a plain product is measured once
// per shape on the device (the faster wins); an epilogue runs on cuBLASLt.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/target.hpp"

namespace kiln::targets::cuda {

// A call's "library" param: 1 runs it on cuBLAS, 2 on cuBLASLt; absent, the device measures.
enum class BlasLibrary { Cublas = 1, CublasLt = 2 };
const char* blas_library_name(BlasLibrary library);

// Opens libcublas and libcublasLt and resolves every function the gemm op calls (once per
// process); empty when that worked, else why not. Needs no device or driver.
std::string load_blas();

// Whether the gemm op can run `call`: its dtype (f32, f64, f16, bf16), epilogues only where
// cuBLASLt has them (not for f64 with GELU), a "library" param of 1 or 2 where present.
bool blas_supports(const runtime::LibraryCall& call);

// cuBLAS and cuBLASLt handles on one stream, with cuBLASLt's workspace and its plans (matrix
// layouts and chosen algorithm) kept per shape.
class Blas {
 public:
  explicit Blas(cudaStream_t stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  // Queues `call` on the stream: buffers are its inputs (A, B, bias, C0 as present), then C.
  void gemm(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
            const graph::DimValues& dims);
  // The library that runs `call` at `dims` (measured on first sight of a plain product's shape).
  BlasLibrary library_for(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                          const graph::DimValues& dims);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::targets::cuda
