// The "gemm-<format>" LibraryCalls (targets/gemm_reference.hpp) on the CPU: matrix products
// whose weight is held as quantized blocks (graph/quantized.hpp), read without an f32 copy.
// One or two rows of A (a decode step) are matrix-vector products over the blocks: each block's
// nibbles or int8 values become f32 in vector registers and meet x there, so the weight costs
// its packed bytes of memory traffic (Q4_1: 0.625 bytes an element, f32: 4). More rows (a
// prefill) dequantize a slice of the weight's rows at a time into a per-thread buffer that
// OpenBLAS multiplies while it is in cache. Output rows are split across the thread pool, and
// blocks are prefetched a little ahead of the row being read.
#pragma once

#include <vector>

#include "runtime/target.hpp"

namespace kiln::targets::cpu {

bool quantized_gemm_supported(const runtime::LibraryCall& call);
void quantized_gemm_cpu(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                        const graph::DimValues& dims);

}  // namespace kiln::targets::cpu
