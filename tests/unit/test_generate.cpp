// Generation: the sampler, the loop, and a tiny random LLaMA GGUF run by `kiln generate`'s
// program on the CPU target against the reference interpreter, token for token.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/nn.hpp"
#include "graph/tensor.hpp"
#include "model/bpe_tokenizer.hpp"
#include "model/generate.hpp"
#include "model/gguf.hpp"
#include "model/llama_gguf.hpp"
#include "model/sampler.hpp"
#include "support/diagnostic.hpp"
#include "targets/cpu/target.hpp"
#include "tests/unit/tiny_llama.hpp"
#include "tools/llama_program.hpp"

using namespace kiln;
using model::GgmlType;

namespace {

// The reference interpreter as a DecoderStep: the caches are fed back by hand.
class InterpreterStep {
 public:
  InterpreterStep(const model::GgufFile& file, std::int64_t max_context)
      : config_(model::llama_config(file.gguf(), max_context)) {
    graph::nn::llama_decoder(builder_, config_);
    model::load_llama_weights(file, config_, [&](const std::string& name, const graph::NativeTensor& t) {
      inputs_[name] = graph::to_tensor(t);
    });
    const graph::Graph& g = builder_.graph();
    for (std::size_t id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(static_cast<graph::NodeId>(id));
      if (n.op != graph::Op::Input || !n.persistent) continue;
      graph::Tensor zeros{n.dtype, {config_.max_context, config_.kv_heads, config_.head_dim}, {}};
      zeros.data.assign(static_cast<std::size_t>(graph::numel(zeros.shape)), 0.0);
      inputs_[n.name] = zeros;
    }
  }

  std::vector<float> operator()(std::span<const std::int32_t> tokens, std::int64_t pos) {
    const auto n = static_cast<std::int64_t>(tokens.size());
    inputs_["tokens"] = graph::Tensor{graph::DType::I32, {n}, {tokens.begin(), tokens.end()}};
    std::map<std::string, graph::Tensor> out = graph::interpret(
        builder_.graph(), {{graph::nn::kSeqDim, n}, {graph::nn::kPosDim, pos}}, inputs_);
    for (auto& [name, t] : out) {
      if (name != "logits") inputs_[name] = std::move(t);  // the updated caches
    }
    return tools::last_row(out.at("logits"));
  }

 private:
  graph::nn::DecoderConfig config_;
  graph::GraphBuilder builder_;
  std::map<std::string, graph::Tensor> inputs_;
};

runtime::Target& cpu_target() {
  static std::unique_ptr<runtime::Target> target =
      targets::make_cpu_target(std::filesystem::path(KILN_TEST_KERNEL_CACHE));
  return *target;
}

}  // namespace

TEST_CASE("sampler: greedy, top-k and seeds [model]") {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
  model::Sampler greedy(0.0, 40, 1);
  CHECK(greedy.sample(logits) == 1);  // the first of the largest
  model::Sampler top1(1.0, 1, 7);
  for (int i = 0; i < 20; ++i) CHECK(top1.sample(logits) == 1);  // ties broken by id
  model::Sampler a(1.0, 3, 42), b(1.0, 3, 42);
  std::map<std::int32_t, int> seen;
  for (int i = 0; i < 300; ++i) {
    const std::int32_t t = a.sample(logits);
    CHECK(t == b.sample(logits));  // same seed, same draws
    ++seen[t];
  }
  CHECK(seen.size() == 3);  // the top three only: 1, 3 and 4
  CHECK(seen.count(0) == 0);
  CHECK(seen.count(2) == 0);
  CHECK_THROWS_AS(model::Sampler(-1.0, 0, 1), support::UserError);
  CHECK_THROWS_AS(model::Sampler(1.0, -2, 1), support::UserError);
}

TEST_CASE("generate: prefill once, then one token a step, until a stop token [model]") {
  std::vector<std::pair<std::size_t, std::int64_t>> calls;
  const model::DecoderStep step = [&](std::span<const std::int32_t> tokens, std::int64_t pos) {
    calls.emplace_back(tokens.size(), pos);
    std::vector<float> logits(8, 0.0f);
    logits[static_cast<std::size_t>(pos % 8)] = 1.0f;  // next token = position
    return logits;
  };
  model::Sampler greedy(0.0, 0, 1);
  const std::vector<std::int32_t> prompt = {5, 6, 7};
  const std::vector<std::int32_t> stop = {6};
  std::vector<std::int32_t> streamed;
  const model::Generation g = model::generate(prompt, step, greedy, 10, stop,
                                              [&](std::int32_t t) { streamed.push_back(t); });
  // Steps at pos 0 (3 tokens) -> 0, pos 3 -> 3, 4 -> 4, 5 -> 5, 6 -> 6 (stop).
  CHECK(g.tokens == std::vector<std::int32_t>{0, 3, 4, 5});
  CHECK(streamed == g.tokens);
  CHECK(g.stopped);
  CHECK(calls == std::vector<std::pair<std::size_t, std::int64_t>>{{3, 0}, {1, 3}, {1, 4}, {1, 5}, {1, 6}});
  CHECK(g.decode_steps == 4);
}

TEST_CASE("generate: a tiny LLaMA GGUF on the CPU target equals the reference interpreter token for token [model]") {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_1}) {
    INFO(model::ggml_type_info(type).name);
    const std::string path = testing::temp_path("generate.gguf");
    testing::write_tiny_llama(path, type, 11);
    const model::GgufFile file(path);
    const model::BpeTokenizer tokenizer = model::BpeTokenizer::from_gguf(file.gguf());
    const std::vector<std::int32_t> prompt = tokenizer.encode("the 12 in the");
    REQUIRE(prompt.size() == 8);  // t he, " ", 1, 2, Ġ in, Ġthe

    tools::LlamaProgram program(file, 64, cpu_target());
    InterpreterStep reference(file, 64);
    std::vector<std::vector<float>> kiln_logits, reference_logits;
    auto run = [&](auto& step, std::vector<std::vector<float>>& logits) {
      model::Sampler greedy(0.0, 0, 1);
      return model::generate(
          prompt,
          [&](std::span<const std::int32_t> t, std::int64_t pos) {
            logits.push_back(step(t, pos));
            return logits.back();
          },
          greedy, 16, {});
    };
    auto kiln_step = [&](std::span<const std::int32_t> t, std::int64_t pos) { return program.step(t, pos); };
    const model::Generation kiln = run(kiln_step, kiln_logits);
    const model::Generation ref = run(reference, reference_logits);
    CHECK(kiln.tokens.size() == 16);
    CHECK(kiln.tokens == ref.tokens);
    REQUIRE(kiln_logits.size() == reference_logits.size());
    double worst = 0.0;
    for (std::size_t s = 0; s < kiln_logits.size(); ++s) {
      for (std::size_t i = 0; i < kiln_logits[s].size(); ++i) {
        worst = std::max(worst, double(std::fabs(kiln_logits[s][i] - reference_logits[s][i])));
      }
    }
    CHECK(worst < 1e-3);
    // The text decodes (byte tokens may split characters, so only its length is checked).
    CHECK(!tokenizer.decode(kiln.tokens).empty());
    std::filesystem::remove(path);
  }
}

// The searched program with the weights kept as blocks: the products read them through the
// CPU target's quantized kernels (QGemm), and generation still equals the interpreter's, which
// runs on the weights dequantized to f32 when loaded.
TEST_CASE("generate: quantized weights read as blocks by the searched program equal the reference interpreter [model]") {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_1}) {
    INFO(model::ggml_type_info(type).name);
    const std::string path = testing::temp_path("generate-quantized.gguf");
    testing::write_tiny_llama(path, type, 13);
    const model::GgufFile file(path);
    const model::BpeTokenizer tokenizer = model::BpeTokenizer::from_gguf(file.gguf());
    const std::vector<std::int32_t> prompt = tokenizer.encode("the 12 in the");

    tools::LlamaProgramOptions options;
    options.search = true;
    options.quantized = true;
    tools::LlamaProgram program(file, 64, cpu_target(), options);
    CHECK(program.quantized_weights() > 0);
    InterpreterStep reference(file, 64);
    model::Sampler greedy_a(0.0, 0, 1), greedy_b(0.0, 0, 1);
    double worst = 0.0;
    std::vector<std::vector<float>> kiln_logits;
    const model::Generation kiln = model::generate(
        prompt,
        [&](std::span<const std::int32_t> t, std::int64_t pos) {
          kiln_logits.push_back(program.step(t, pos));
          return kiln_logits.back();
        },
        greedy_a, 12, {});
    std::size_t s = 0;
    const model::Generation ref = model::generate(
        prompt,
        [&](std::span<const std::int32_t> t, std::int64_t pos) {
          std::vector<float> logits = reference(t, pos);
          for (std::size_t i = 0; i < logits.size(); ++i) {
            worst = std::max(worst, double(std::fabs(logits[i] - kiln_logits.at(s)[i])));
          }
          ++s;
          return logits;
        },
        greedy_b, 12, {});
    CHECK(kiln.tokens.size() == 12);
    CHECK(kiln.tokens == ref.tokens);
    CHECK(worst < 1e-3);
    std::filesystem::remove(path);
  }
}

TEST_CASE("generate: a model file that is not a LLaMA kiln can load is a user error [model]") {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/tests/fuzz/corpus/gguf/valid-every-type.gguf";
  const model::GgufFile file(path);
  CHECK_THROWS_WITH(tools::LlamaProgram(file, 64, cpu_target()),
                    Catch::Contains("metadata 'llama.block_count' is missing"));
}
