// generate: the autoregressive loop of a decoder, independent of how a step runs (a compiled
// program, the reference interpreter): prefill the prompt in one step, then one token a step,
// until max_new tokens or a stop token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/sampler.hpp"

namespace kiln::model {

// Runs the decoder on `tokens` at positions pos, pos + 1, ... (the cache holds the first pos)
// and returns the logits of the last token.
using DecoderStep =
    std::function<std::vector<float>(std::span<const std::int32_t> tokens, std::int64_t pos)>;

struct Generation {
  std::vector<std::int32_t> tokens;  // generated, the stop token excluded
  bool stopped = false;              // a stop token ended it
  double prefill_seconds = 0.0;      // the prompt's step (and the first sample)
  double decode_seconds = 0.0;       // every later step
  std::int64_t decode_steps = 0;
};

// Calls `on_token` with each generated token as soon as it is sampled (not the stop token).
Generation generate(std::span<const std::int32_t> prompt, const DecoderStep& step,
                    Sampler& sampler, std::int64_t max_new,
                    std::span<const std::int32_t> stop_tokens,
                    const std::function<void(std::int32_t)>& on_token = {});

}  // namespace kiln::model
