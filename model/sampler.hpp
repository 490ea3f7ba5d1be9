// Sampler: picks the next token from a row of logits. Temperature 0 is greedy (the first of the
// largest logits); otherwise softmax(logits / temperature) over the top_k largest (all when
// top_k is 0), drawn with a seeded generator of its own, so a seed gives the same text on every
// machine.
#pragma once

#include <cstdint>
#include <span>

namespace kiln::model {

class Sampler {
 public:
  // A UserError for a negative or non-finite temperature or a negative top_k.
  Sampler(double temperature, std::int64_t top_k, std::uint64_t seed);

  std::int32_t sample(std::span<const float> logits);

 private:
  double uniform();  // in [0, 1), 53 random bits

  double temperature_;
  std::int64_t top_k_;
  std::uint64_t state_;
};

}  // namespace kiln::model
