// Greedy, temperature and top-k sampling (see sampler.hpp).
#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "support/diagnostic.hpp"

namespace kiln::model {

Sampler::Sampler(double temperature, std::int64_t top_k, std::uint64_t seed)
    : temperature_(temperature), top_k_(top_k), state_(seed) {
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) {
    throw support::UserError("--temperature must be finite and at least 0, got " + std::to_string(temperature));
  }
  if (top_k < 0) throw support::UserError("--top-k must be at least 0, got " + std::to_string(top_k));
}

double Sampler::uniform() {
  // splitmix64: a fixed, portable generator (the standard distributions are not).
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

std::int32_t Sampler::sample(std::span<const float> logits) {
  KILN_ASSERT(!logits.empty(), "Sampler: no logits");
  const auto n = static_cast<std::int64_t>(logits.size());
  if (temperature_ == 0.0) {
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  const std::int64_t k = top_k_ == 0 ? n : std::min(top_k_, n);
  // Largest first, ties by id: the same order everywhere.
  auto larger = [&](std::int32_t a, std::int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), larger);
  ids.resize(static_cast<std::size_t>(k));
  const double top = logits[ids[0]];
  std::vector<double> weights;
  double total = 0.0;
  for (std::int32_t id : ids) {
    weights.push_back(std::exp((logits[id] - top) / temperature_));
    total += weights.back();
  }
  double r = uniform() * total;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    r -= weights[i];
    if (r < 0.0) return ids[i];
  }
  return ids.back();
}

}  // namespace kiln::model
