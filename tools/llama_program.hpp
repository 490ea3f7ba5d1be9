// LlamaProgram: a LLaMA GGUF model ready to run on a target: graph/nn's decoder configured from
// the file's metadata, lowered one kernel per op (runtime/lower_one_op) or compiled by the search
// (compiler/compile, tuned for one-token decode steps; measurements persist in the cache, so
// only the first run measures), its weights bound on the device once (quantized matrices as
// their blocks, or everything dequantized to f32), and
// its KV cache held by the executor between steps. step() is a model::DecoderStep.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graph/nn.hpp"
#include "graph/tensor.hpp"
#include "model/gguf.hpp"
#include "runtime/executor.hpp"
#include "runtime/llir.hpp"
#include "runtime/target.hpp"

namespace kiln::tools {

struct LlamaProgramOptions {
  bool search = false;   // compile with the search; else one kernel per op
  bool verbose = false;  // the search's progress on stderr
  int threads = 1;       // the target's thread count (part of the measurement keys)
  // Quantized matrices stay blocks (graph/quantized.hpp) that the search's products read;
  // else every weight is dequantized to f32 at load time. Needs `search` (a dequantize op has
  // no one-op kernel).
  bool quantized = false;
};

class LlamaProgram {
 public:
  // Keeps a reference to `target`. A UserError for a file that is not a LLaMA kiln can load.
  LlamaProgram(const model::GgufFile& file, std::int64_t max_context, runtime::Target& target,
               const LlamaProgramOptions& options = {});

  // The logits of the last of `tokens`, run at positions pos, pos + 1, ...
  // With `profile`, each step of the program is timed.
  std::vector<float> step(std::span<const std::int32_t> tokens, std::int64_t pos,
                          runtime::RunProfile* profile = nullptr);

  const graph::nn::DecoderConfig& config() const { return config_; }
  const graph::Graph& graph() const { return builder_.graph(); }
  std::size_t steps() const { return llir_.num_steps(); }
  double compile_seconds() const { return compile_seconds_; }
  // Steps that overwrite their input instead of copying it (the KV cache writes, when the search
  // chose ScatterNoCopy): 2 per layer means no per-token copy of the cache.
  std::size_t in_place_steps() const { return in_place_steps_; }
  // Weights bound as quantized blocks.
  std::size_t quantized_weights() const { return config_.quantized_weights.size(); }

 private:
  graph::nn::DecoderConfig config_;
  graph::GraphBuilder builder_;
  runtime::Llir llir_;
  double compile_seconds_ = 0.0;
  std::size_t in_place_steps_ = 0;
  std::unique_ptr<runtime::Executor> executor_;
};

// The last row of a [seq, vocab] logits tensor, as f32.
std::vector<float> last_row(const graph::Tensor& logits);

}  // namespace kiln::tools
