// The q/k row order of GGUF LLaMA files: llama.cpp rotates adjacent pairs, kiln's graph (like
// Hugging Face) rotates halves; the rows read back in rotate-half order make both agree.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "model/rope_permutation.hpp"

using namespace kiln::model;

namespace {

// Rotates (x[a(i)], x[b(i)]) by pos * base^(-2i / d) for i < d / 2.
std::vector<double> rope(const std::vector<float>& x, double pos, bool adjacent) {
  const std::size_t d = x.size(), half = d / 2;
  std::vector<double> out(d);
  for (std::size_t i = 0; i < half; ++i) {
    const double angle = pos * std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    const std::size_t a = adjacent ? 2 * i : i, b = adjacent ? 2 * i + 1 : i + half;
    out[a] = x[a] * std::cos(angle) - x[b] * std::sin(angle);
    out[b] = x[b] * std::cos(angle) + x[a] * std::sin(angle);
  }
  return out;
}

}  // namespace

TEST_CASE("rope permutation: GGUF row 2i + t of a head is rotate-half row t * d/2 + i [model]") {
  // Two heads of d = 4, one column: rows a0 a1 b0 b1 of each head become a0 b0 a1 b1.
  const std::vector<float> halves = {0, 1, 2, 3, 10, 11, 12, 13};
  const std::vector<float> gguf = {0, 2, 1, 3, 10, 12, 11, 13};
  CHECK(rope_rows_to_gguf(halves, 2, 1) == gguf);
  CHECK(rope_rows_from_gguf(gguf, 2, 1) == halves);
  CHECK_THROWS(rope_rows_from_gguf(std::vector<float>(6), 2, 1));  // odd head size
}

TEST_CASE("rope permutation: adjacent-pair RoPE on GGUF rows is rotate-half RoPE on the graph's [model]") {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  const std::int64_t d = 8, cols = 3;
  std::vector<float> w(d * cols), x(cols);
  for (float& v : w) v = dist(rng);
  for (float& v : x) v = dist(rng);
  auto project = [&](const std::vector<float>& m) {
    std::vector<float> q(d, 0.0f);
    for (std::int64_t r = 0; r < d; ++r) {
      for (std::int64_t c = 0; c < cols; ++c) q[r] += m[r * cols + c] * x[c];
    }
    return q;
  };
  const std::vector<float> gguf_w = rope_rows_to_gguf(w, 1, cols);
  for (double pos : {1.0, 5.0, 100.0}) {
    const std::vector<double> llama_cpp = rope(project(gguf_w), pos, /*adjacent=*/true);
    const std::vector<double> graph = rope(project(w), pos, /*adjacent=*/false);
    // Row t * d/2 + i of the graph's result is row 2i + t of llama.cpp's.
    for (std::int64_t i = 0; i < d / 2; ++i) {
      for (std::int64_t t = 0; t < 2; ++t) {
        CHECK(graph[t * d / 2 + i] == Approx(llama_cpp[2 * i + t]).margin(1e-6));
      }
    }
    // Without undoing the order, the rotations disagree: the permutation matters.
    const std::vector<double> wrong = rope(project(gguf_w), pos, /*adjacent=*/false);
    double differ = 0.0;
    for (std::int64_t r = 0; r < d; ++r) differ = std::max(differ, std::fabs(wrong[r] - llama_cpp[r]));
    CHECK(differ > 1e-3);
  }
}
