// The generation loop (see generate.hpp).
#include "model/generate.hpp"

#include <algorithm>
#include <chrono>

#include "support/diagnostic.hpp"

namespace kiln::model {

Generation generate(std::span<const std::int32_t> prompt, const DecoderStep& step,
                    Sampler& sampler, std::int64_t max_new,
                    std::span<const std::int32_t> stop_tokens,
                    const std::function<void(std::int32_t)>& on_token) {
  if (prompt.empty()) throw support::UserError("generate: the prompt has no tokens");
  using Clock = std::chrono::steady_clock;
  Generation g;
  std::int64_t pos = 0;
  std::vector<std::int32_t> next(prompt.begin(), prompt.end());
  while (static_cast<std::int64_t>(g.tokens.size()) < max_new) {
    const auto start = Clock::now();
    const std::vector<float> logits = step(next, pos);
    const std::int32_t token = sampler.sample(logits);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (pos == 0) {
      g.prefill_seconds = seconds;
    } else {
      g.decode_seconds += seconds;
      ++g.decode_steps;
    }
    pos += static_cast<std::int64_t>(next.size());
    if (std::find(stop_tokens.begin(), stop_tokens.end(), token) != stop_tokens.end()) {
      g.stopped = true;
      break;
    }
    g.tokens.push_back(token);
    if (on_token) on_token(token);
    next = {token};
  }
  return g;
}

}  // namespace kiln::model
