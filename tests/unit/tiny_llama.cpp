// The tiny random LLaMA of the model tests (see tiny_llama.hpp).
#include "tests/unit/tiny_llama.hpp"

#include <filesystem>
#include <random>

#include "model/bpe_tokenizer.hpp"
#include "model/dequantize.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama_gguf.hpp"
#include "model/quantize.hpp"
#include "model/rope_permutation.hpp"

namespace kiln::testing {

using model::GgmlType;
using model::GgufType;
using model::GgufValue;

namespace {

const char* const kMerges[] = {"Ġ t", "h e", "Ġt he", "i n", "e r", "Ġ a", "o n", "Ġ s"};
const char* const kSpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

GgufValue strings(const std::vector<std::string>& items) {
  std::vector<GgufValue> v;
  for (const std::string& s : items) v.push_back(GgufValue::of_string(s));
  return GgufValue::of_array(GgufType::String, std::move(v));
}

}  // namespace

std::vector<std::string> tiny_tokens() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(model::byte_to_unicode(static_cast<std::uint8_t>(b)));
  for (const char* m : kMerges) {
    std::string s = m;
    tokens.push_back(s.substr(0, s.find(' ')) + s.substr(s.find(' ') + 1));
  }
  for (const char* s : kSpecials) tokens.push_back(s);
  return tokens;
}

std::vector<std::string> tiny_merges() { return {std::begin(kMerges), std::end(kMerges)}; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("kiln-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TinyLlama write_tiny_llama(const std::string& path, GgmlType matrix_type, unsigned seed,
                           bool untied) {
  TinyLlama m;
  auto& c = m.config;
  c.name = "tiny-llama";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.intermediate = 96;
  const std::vector<std::string> tokens = tiny_tokens();
  c.vocab = static_cast<std::int64_t>(tokens.size());
  c.rope_base = 10000.0;
  c.rms_eps = 1e-5;
  c.tied_embeddings = !untied;
  c.max_context = 64;

  model::GgufWriter w;
  auto set = [&](const std::string& key, GgufValue v) {
    m.metadata.emplace_back(key, v);
    w.set(key, std::move(v));
  };
  set("general.architecture", GgufValue::of_string("llama"));
  set("general.name", GgufValue::of_string("tiny-llama"));
  set("llama.block_count", GgufValue::of_u32(2));
  set("llama.context_length", GgufValue::of_u32(64));
  set("llama.embedding_length", GgufValue::of_u32(64));
  set("llama.feed_forward_length", GgufValue::of_u32(96));
  set("llama.attention.head_count", GgufValue::of_u32(4));
  set("llama.attention.head_count_kv", GgufValue::of_u32(2));
  set("llama.rope.freq_base", GgufValue::of_f32(10000.0f));
  set("llama.attention.layer_norm_rms_epsilon", GgufValue::of_f32(1e-5f));
  set("llama.rope.dimension_count", GgufValue::of_u32(16));
  set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  set("tokenizer.ggml.pre", GgufValue::of_string("smollm"));
  set("tokenizer.ggml.tokens", strings(tokens));
  std::vector<GgufValue> types;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    types.push_back(GgufValue::of_i32(i + std::size(kSpecials) >= tokens.size() ? 3 : 1));
  }
  set("tokenizer.ggml.token_type", GgufValue::of_array(GgufType::I32, std::move(types)));
  set("tokenizer.ggml.merges", strings(tiny_merges()));
  const auto n = static_cast<std::uint32_t>(tokens.size());
  set("tokenizer.ggml.bos_token_id", GgufValue::of_u32(n - 2));  // <|im_start|>
  set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(n - 1));  // <|im_end|>
  set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(false));
  set("tokenizer.chat_template",
      GgufValue::of_string("{% for message in messages %}{% if loop.first and messages[0]['role'] "
                           "!= 'system' %}{{ '<|im_start|>system\\nYou are tiny.<|im_end|>\\n' }}"
                           "{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
                           "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"));

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  // A weight in graph order: written in GGUF's, remembered as the loader should read it.
  auto add = [&](const std::string& gguf_name, std::vector<std::int64_t> shape, float scale,
                 std::int64_t rope_heads) {
    const bool matrix = shape.size() == 2;
    std::vector<float> v(static_cast<std::size_t>(shape[0] * (matrix ? shape[1] : 1)));
    for (float& x : v) x = matrix ? dist(rng) * scale : 1.0f + 0.1f * dist(rng);
    const GgmlType type = matrix ? matrix_type : GgmlType::F32;
    std::vector<float> stored = rope_heads ? model::rope_rows_to_gguf(v, rope_heads, shape[1]) : v;
    std::vector<std::uint8_t> bytes = model::quantize(type, stored);
    // Blocks lie within rows, so quantizing commutes with reordering rows.
    m.weights[model::llama_graph_name(gguf_name)] =
        model::dequantize(type, model::quantize(type, v), static_cast<std::int64_t>(v.size()));
    w.add_tensor(gguf_name, type, std::move(shape), std::move(bytes));
  };
  const float s = 1.0f / 8.0f;  // ~ 1 / sqrt(hidden)
  add("token_embd.weight", {c.vocab, c.hidden}, 1.0f, 0);
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {c.hidden}, 1.0f, 0);
    add(p + "attn_q.weight", {c.heads * c.head_dim, c.hidden}, s, c.heads);
    add(p + "attn_k.weight", {c.kv_heads * c.head_dim, c.hidden}, s, c.kv_heads);
    add(p + "attn_v.weight", {c.kv_heads * c.head_dim, c.hidden}, s, 0);
    add(p + "attn_output.weight", {c.hidden, c.heads * c.head_dim}, s, 0);
    add(p + "ffn_norm.weight", {c.hidden}, 1.0f, 0);
    add(p + "ffn_gate.weight", {c.intermediate, c.hidden}, s, 0);
    add(p + "ffn_up.weight", {c.intermediate, c.hidden}, s, 0);
    add(p + "ffn_down.weight", {c.hidden, c.intermediate}, 1.0f / 10.0f, 0);
  }
  add("output_norm.weight", {c.hidden}, 1.0f, 0);
  if (untied) add("output.weight", {c.vocab, c.hidden}, s, 0);
  w.write(path);
  return m;
}

}  // namespace kiln::testing
