// LLaMA from GGUF (see llama_gguf.hpp).
#include "model/llama_gguf.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "graph/native.hpp"
#include "graph/quantized.hpp"
#include "graph/tensor.hpp"
#include "model/dequantize.hpp"
#include "model/rope_permutation.hpp"
#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

using support::UserError;

// "blk.N.<what>" -> (N, what); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> block_name(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return std::nullopt;
  const std::size_t dot = name.find('.', 4);
  if (dot == std::string::npos || dot == 4) return std::nullopt;
  const std::string index = name.substr(4, dot - 4);
  if (!std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::make_pair(index, name.substr(dot + 1));
}

// Every weight Input of `config`'s decoder graph with its shape, by name (as f32 matrices,
// quantized or not).
std::map<std::string, std::vector<std::int64_t>> decoder_weights(graph::nn::DecoderConfig config) {
  config.quantized_weights.clear();
  graph::GraphBuilder b;
  graph::nn::llama_decoder(b, config);
  const graph::Graph& g = b.graph();
  std::map<std::string, std::vector<std::int64_t>> out;
  for (std::size_t id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(static_cast<graph::NodeId>(id));
    if (n.op != graph::Op::Input || n.persistent || n.name == "tokens") continue;
    std::vector<std::int64_t> shape;
    for (const graph::Expr& e : n.shape) {
      std::optional<std::int64_t> v = e.as_constant();
      KILN_ASSERT(v, "llama weight " + n.name + " has a symbolic shape");
      shape.push_back(*v);
    }
    out[n.name] = shape;
  }
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::optional<graph::QuantFormat> quant_format(GgmlType type) {
  switch (type) {
    case GgmlType::Q8_0: return graph::QuantFormat::Q8_0;
    case GgmlType::Q4_0: return graph::QuantFormat::Q4_0;
    case GgmlType::Q4_1: return graph::QuantFormat::Q4_1;
    default: return std::nullopt;
  }
}

// GGUF's blocks ([rows, cols] of `type`, rows in file order) as the graph's two block tensors,
// row r read from file row source_row(r): bytes copied as they are, the f16 scales included.
std::pair<graph::NativeTensor, graph::NativeTensor> split_blocks(
    graph::QuantFormat f, std::span<const std::uint8_t> data, std::int64_t rows,
    std::int64_t cols, const std::function<std::int64_t(std::int64_t)>& source_row) {
  const std::int64_t blocks = cols / graph::kQuantBlock;
  const std::int64_t qb = graph::quant_bytes(f), sb = graph::scales_per_block(f);
  const std::int64_t block_bytes = 2 * sb + qb;  // the f16 scales, then the quants
  KILN_ASSERT(static_cast<std::int64_t>(data.size()) == rows * blocks * block_bytes,
              "split_blocks: data size");
  std::vector<std::byte> quants(static_cast<std::size_t>(rows * blocks * qb));
  std::vector<std::byte> scales(static_cast<std::size_t>(rows * blocks * sb * 2));
  std::byte* q = quants.data();
  std::byte* d = scales.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint8_t* p = data.data() + source_row(r) * blocks * block_bytes;
    for (std::int64_t b = 0; b < blocks; ++b, p += block_bytes) {
      std::memcpy(d, p, static_cast<std::size_t>(2 * sb));
      std::memcpy(q, p + 2 * sb, static_cast<std::size_t>(qb));
      d += 2 * sb;
      q += qb;
    }
  }
  return {graph::NativeTensor(graph::DType::U8, {rows, blocks * qb}, std::move(quants)),
          graph::NativeTensor(graph::DType::F16, {rows, blocks * sb}, std::move(scales))};
}

// The f32 values of GGUF tensor `t` of the graph's weight: the mapped bytes themselves where
// they are f32 already in the graph's row order, else dequantized (and rows reordered).
graph::NativeTensor f32_weight(const GgufFile& file, const GgufTensorInfo& t, bool rope_rows,
                               std::int64_t heads) {
  const std::span<const std::uint8_t> data = file.data(t);
  if (t.type == GgmlType::F32 && !rope_rows) {
    return graph::NativeTensor::borrowed(graph::DType::F32, t.shape, std::as_bytes(data));
  }
  std::vector<float> values = dequantize(t.type, data, t.elements);
  if (rope_rows) values = rope_rows_from_gguf(values, heads, t.shape[1]);
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return {graph::DType::F32, t.shape, std::move(bytes)};
}

}  // namespace

std::map<std::string, graph::QuantFormat> llama_quantized_weights(
    const Gguf& g, const graph::nn::DecoderConfig& config) {
  std::map<std::string, graph::QuantFormat> out;
  for (const GgufTensorInfo& t : g.tensors) {
    const std::string name = llama_graph_name(t.name);
    const std::optional<graph::QuantFormat> f = quant_format(t.type);
    if (name.empty() || !f || t.shape.size() != 2) continue;
    if (name == "embed.weight" && !config.tied_embeddings) continue;
    out[name] = *f;
  }
  return out;
}

graph::nn::DecoderConfig llama_config(const Gguf& g, std::int64_t max_context) {
  const std::string arch = g.string("general.architecture");
  if (arch != "llama") {
    throw UserError(g.file + ": architecture '" + arch +
                    "' (general.architecture) is not supported; kiln loads 'llama'");
  }
  auto positive = [&](const std::string& key) {
    const std::int64_t v = g.integer(key);
    if (v < 1) throw UserError(g.file + ": metadata '" + key + "' must be positive, got " + std::to_string(v));
    return v;
  };
  graph::nn::DecoderConfig c;
  c.name = g.find("general.name") ? g.string("general.name") : "llama";
  c.layers = positive("llama.block_count");
  c.hidden = positive("llama.embedding_length");
  c.intermediate = positive("llama.feed_forward_length");
  c.heads = positive("llama.attention.head_count");
  c.kv_heads = g.find("llama.attention.head_count_kv") ? positive("llama.attention.head_count_kv")
                                                       : c.heads;
  if (c.heads % c.kv_heads != 0) {
    throw UserError(g.file + ": head_count " + std::to_string(c.heads) +
                    " is not a multiple of head_count_kv " + std::to_string(c.kv_heads));
  }
  c.head_dim = g.find("llama.attention.key_length") ? positive("llama.attention.key_length")
                                                    : c.hidden / c.heads;
  if (std::optional<std::int64_t> rope = g.optional_integer("llama.rope.dimension_count");
      rope && *rope != c.head_dim) {
    throw UserError(g.file + ": rope over " + std::to_string(*rope) + " of " +
                    std::to_string(c.head_dim) + " head dims (llama.rope.dimension_count) is not supported");
  }
  if (g.find("llama.rope.scaling.type") && g.string("llama.rope.scaling.type") != "none") {
    throw UserError(g.file + ": rope scaling '" + g.string("llama.rope.scaling.type") +
                    "' (llama.rope.scaling.type) is not supported");
  }
  c.rope_base = g.optional_real("llama.rope.freq_base").value_or(10000.0);
  c.rms_eps = g.real("llama.attention.layer_norm_rms_epsilon");
  const GgufTensorInfo* embd = g.find_tensor("token_embd.weight");
  if (!embd || embd->shape.size() != 2) {
    throw UserError(g.file + ": tensor 'token_embd.weight' [vocab, hidden] is missing");
  }
  c.vocab = embd->shape[0];
  c.tied_embeddings = g.find_tensor("output.weight") == nullptr;
  const std::int64_t context = g.optional_integer("llama.context_length").value_or(max_context);
  if (max_context < 1 || max_context > context) {
    throw UserError(g.file + ": a cache of " + std::to_string(max_context) +
                    " positions does not fit the model's context of " + std::to_string(context));
  }
  c.max_context = max_context;
  c.dtype = graph::DType::F32;
  return c;
}

std::string llama_graph_name(const std::string& name) {
  static const std::map<std::string, std::string> top = {
      {"token_embd.weight", "embed.weight"},
      {"output_norm.weight", "norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  static const std::map<std::string, std::string> block = {
      {"attn_norm.weight", "attn_norm.weight"}, {"attn_q.weight", "attn.q.weight"},
      {"attn_k.weight", "attn.k.weight"},       {"attn_v.weight", "attn.v.weight"},
      {"attn_output.weight", "attn.o.weight"},  {"ffn_norm.weight", "mlp_norm.weight"},
      {"ffn_gate.weight", "mlp.gate.weight"},   {"ffn_up.weight", "mlp.up.weight"},
      {"ffn_down.weight", "mlp.down.weight"},
  };
  if (auto it = top.find(name); it != top.end()) return it->second;
  if (auto b = block_name(name)) {
    if (auto it = block.find(b->second); it != block.end()) return "layers." + b->first + "." + it->second;
  }
  return "";
}

void load_llama_weights(const GgufFile& file, const graph::nn::DecoderConfig& config,
                        const std::function<void(const std::string&, graph::NativeTensor)>& use,
                        const std::map<std::string, graph::QuantFormat>& quantized) {
  const Gguf& g = file.gguf();
  const std::map<std::string, std::vector<std::int64_t>> expected = decoder_weights(config);
  std::set<std::string> loaded;
  for (const GgufTensorInfo& t : g.tensors) {
    const std::string name = llama_graph_name(t.name);
    auto it = name.empty() ? expected.end() : expected.find(name);
    if (it == expected.end()) {
      throw UserError(g.file + ": tensor '" + t.name + "' is not a weight of the LLaMA decoder (" +
                      std::to_string(config.layers) + " layers)");
    }
    if (t.shape != it->second) {
      throw UserError(g.file + ": tensor '" + t.name + "' is " + shape_text(t.shape) +
                      ", the decoder's " + name + " is " + shape_text(it->second));
    }
    if (!is_supported(t.type)) {
      throw UserError(g.file + ": tensor '" + t.name + "' is " +
                      std::string(ggml_type_info(t.type).name) +
                      ", which kiln does not dequantize (f32, f16, bf16, q8_0, q4_0, q4_1)");
    }
    const auto block = block_name(t.name);
    const bool rope_rows =
        block && (block->second == "attn_q.weight" || block->second == "attn_k.weight");
    const std::int64_t heads =
        block && block->second == "attn_q.weight" ? config.heads : config.kv_heads;
    loaded.insert(name);
    if (auto q = quantized.find(name); q != quantized.end()) {
      if (quant_format(t.type) != q->second) {
        throw UserError(g.file + ": tensor '" + t.name + "' is " +
                        std::string(ggml_type_info(t.type).name) + ", not " +
                        std::string(graph::quant_format_name(q->second)));
      }
      const std::int64_t rows = t.shape[0], half = rows / heads / 2;
      auto source_row = [&](std::int64_t r) -> std::int64_t {
        if (!rope_rows) return r;
        // Within a head of 2 * half rows, rotate-half row t * half + i is GGUF row 2i + t.
        const std::int64_t head = r / (2 * half), within = r % (2 * half);
        return head * 2 * half + 2 * (within % half) + within / half;
      };
      auto [quants, scales] = split_blocks(q->second, file.data(t), rows, t.shape[1], source_row);
      use(name + ".quants", std::move(quants));
      use(name + ".scales", std::move(scales));
      if (name != "embed.weight") continue;  // the embedding's rows are gathered from f32 too
    }
    use(name, f32_weight(file, t, rope_rows, heads));
  }
  for (const auto& [name, shape] : expected) {
    if (!loaded.count(name)) {
      throw UserError(g.file + ": the decoder's weight " + name + " " + shape_text(shape) +
                      " has no tensor in the file");
    }
  }
}

}  // namespace kiln::model
