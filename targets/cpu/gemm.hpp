// The "gemm" LibraryCall (runtime/target.hpp) on the CPU: OpenBLAS's cblas_sgemm / cblas_dgemm
// on blocks of the product, split across the OpenMP threads (threads.hpp) by batch entry and
// by rows or columns of C; an f32 product with one row or one column of C (a decode step's
// projections, attention over a cache), or a few rows against weights stored with the
// outputs as rows (a short prefill), is a streaming matrix-vector product (gemv.hpp).
// Layout variants are the call's trans_a / trans_b flags over row-major storage: a
// column-major operand is the transposed row-major one, so all four (row/column-major A,
// row/column-major B) are these two flags.
#pragma once

#include <vector>

#include "runtime/target.hpp"

namespace kiln::targets::cpu {

bool gemm_supported(const runtime::LibraryCall& call);
void gemm_cpu(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
              const graph::DimValues& dims);

// Multiply-adds (batch * m * n * k) below which a product runs on one thread: waking the
// other threads costs more than they save. Measured on a 2-core machine (bench/cpu).
inline constexpr double kGemmParallelWork = 1 << 17;
// Matrix elements below which a matrix-vector product runs on one thread.
inline constexpr double kGemvParallelElements = 1 << 15;
// The most rows of C (or columns) a product streams its weights for, rather than calling
// sgemm: measured against OpenBLAS's sgemm on SmolLM2's shapes (bench/cpu/small_batch_gemm).
inline constexpr long long kStreamingVectors = 16;

}  // namespace kiln::targets::cpu
