// rope_permutation: llama.cpp's converter reorders the rows of each head of the q and k weights
// so that its RoPE can rotate adjacent pairs (x[2i], x[2i+1]); kiln's graph (graph/nn rotary)
// rotates halves (x[i], x[i + d/2]) as Hugging Face models do. Within a head of d rows, GGUF row
// 2i + t holds Hugging Face row t * d/2 + i (t = 0, 1).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace kiln::model {

// Row-major [heads * d, cols] weights from GGUF's order to the rotate-half order, and back.
std::vector<float> rope_rows_from_gguf(std::span<const float> w, std::int64_t heads,
                                       std::int64_t cols);
std::vector<float> rope_rows_to_gguf(std::span<const float> w, std::int64_t heads,
                                     std::int64_t cols);

}  // namespace kiln::model
