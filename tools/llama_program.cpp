// A LLaMA GGUF model on a target (see llama_program.hpp).
#include "tools/llama_program.hpp"

#include <algorithm>

#include "compiler/compile.hpp"
#include "model/llama_gguf.hpp"
#include "runtime/lower_one_op.hpp"
#include "support/diagnostic.hpp"

namespace kiln::tools {

LlamaProgram::LlamaProgram(const model::GgufFile& file, std::int64_t max_context,
                           runtime::Target& target, const LlamaProgramOptions& options)
    : config_(model::llama_config(file.gguf(), max_context)) {
  if (options.quantized) {
    KILN_ASSERT(options.search, "LlamaProgram: quantized weights need the search");
    config_.quantized_weights = model::llama_quantized_weights(file.gguf(), config_);
  }
  graph::nn::llama_decoder(builder_, config_);
  if (options.search) {
    // Tuned where generation spends its time: one token a step, a few dozen in the cache.
    compiler::Measurer measurer(target, {},
                                target.fingerprint() + ";threads " + std::to_string(options.threads));
    compiler::CompileOptions compile;
    compile.search.dims = {{graph::nn::kSeqDim, 1},
                           {graph::nn::kPosDim, std::min<std::int64_t>(32, max_context - 1)}};
    compile.search.verbose = options.verbose;
    compiler::CompiledProgram p = compiler::compile(builder_.graph(), target, measurer, compile);
    llir_ = std::move(p.llir);
    compile_seconds_ = p.seconds;
    for (const compiler::GroupSummary& group : p.groups) {
      for (const compiler::GroupStep& step : group.program.steps) {
        if (step.in_place) in_place_steps_ += group.members.size();
      }
    }
  } else {
    llir_ = runtime::lower_one_op(builder_.graph());
  }
  executor_ = std::make_unique<runtime::Executor>(llir_, target);
  // One weight at a time, in its layout on the device (the mapped bytes where they fit), bound
  // and then freed here.
  model::load_llama_weights(
      file, config_,
      [&](const std::string& name, const graph::NativeTensor& t) { executor_->bind(name, t); },
      config_.quantized_weights);
}

std::vector<float> LlamaProgram::step(std::span<const std::int32_t> tokens, std::int64_t pos,
                                      runtime::RunProfile* profile) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  if (pos + n > config_.max_context) {
    throw support::UserError("the context is full: " + std::to_string(pos + n) +
                             " positions, the cache holds " + std::to_string(config_.max_context));
  }
  graph::Tensor ids{graph::DType::I32, {n}, {tokens.begin(), tokens.end()}};
  const std::map<std::string, graph::Tensor> out =
      executor_->run({{graph::nn::kSeqDim, n}, {graph::nn::kPosDim, pos}}, {{"tokens", ids}},
                     profile, runtime::Executor::Fetch::WithoutState);
  return last_row(out.at("logits"));
}

std::vector<float> last_row(const graph::Tensor& logits) {
  KILN_ASSERT(logits.shape.size() == 2 && logits.shape[0] > 0, "logits must be [seq, vocab]");
  const std::int64_t vocab = logits.shape[1];
  const auto begin = logits.data.end() - vocab;
  return {begin, logits.data.end()};
}

}  // namespace kiln::tools
