// The q/k row order of GGUF LLaMA files (see rope_permutation.hpp); llama.cpp's converter:
//   w.reshape(heads, 2, d / 2, cols).swapaxes(1, 2).reshape(w.shape)
#include "model/rope_permutation.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

// Copies rows between the orders: `to_gguf` picks the direction.
std::vector<float> permute(std::span<const float> w, std::int64_t heads, std::int64_t cols,
                           bool to_gguf) {
  const auto size = static_cast<std::int64_t>(w.size());
  if (heads < 1 || cols < 1 || size % (heads * cols) != 0 || (size / (heads * cols)) % 2 != 0) {
    throw support::UserError("rope permutation: " + std::to_string(size) +
                             " values are not [heads=" + std::to_string(heads) +
                             " x an even head size, cols=" + std::to_string(cols) + "]");
  }
  const std::int64_t d = size / (heads * cols), half = d / 2;
  std::vector<float> out(w.size());
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t i = 0; i < half; ++i) {
      for (std::int64_t t = 0; t < 2; ++t) {
        const std::int64_t gguf_row = h * d + 2 * i + t, hf_row = h * d + t * half + i;
        const std::int64_t from = to_gguf ? hf_row : gguf_row, to = to_gguf ? gguf_row : hf_row;
        std::copy_n(w.begin() + from * cols, cols, out.begin() + to * cols);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<float> rope_rows_from_gguf(std::span<const float> w, std::int64_t heads,
                                       std::int64_t cols) {
  return permute(w, heads, cols, false);
}

std::vector<float> rope_rows_to_gguf(std::span<const float> w, std::int64_t heads,
                                     std::int64_t cols) {
  return permute(w, heads, cols, true);
}

}  // namespace kiln::model
