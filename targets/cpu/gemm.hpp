// The "gemm" LibraryCall (runtime/target.hpp) on OpenBLAS: cblas_sgemm / cblas_dgemm, one call
// per batch entry. Layout variants are the call's trans_a / trans_b flags over row-major
// storage: a column-major operand is the transposed row-major one, so all four
// (row/column-major A, row/column-major B) are these two flags.
#pragma once

#include <vector>

#include "runtime/target.hpp"

namespace kiln::targets::cpu {

bool gemm_supported(const runtime::LibraryCall& call);
void gemm_openblas(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                   const graph::DimValues& dims);

}  // namespace kiln::targets::cpu
