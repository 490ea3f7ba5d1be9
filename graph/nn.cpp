// nn building blocks and decoders (see nn.hpp).
#include "graph/nn.hpp"

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "graph/quantized.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph::nn {

namespace {

using support::UserError;

// The size of the last dim of `x`, which must be a constant (a feature count).
std::int64_t features(const GraphTensor& x, const char* op) {
  if (x.rank() == 0) throw UserError(std::string(op) + ": needs a tensor of rank >= 1");
  std::optional<std::int64_t> n = x.shape().back().as_constant();
  if (!n) {
    throw UserError(std::string(op) + ": the last dim of " + shape_text(x.shape()) +
                    " must be a constant");
  }
  return *n;
}

// The quantized weights of the decoder being built (DecoderConfig::quantized_weights), for
// weight(): set while llama_decoder or gemma3_decoder runs, so that the building blocks below
// them keep their signatures.
thread_local const std::map<std::string, QuantFormat>* quantized_scope = nullptr;

class QuantizedScope {
 public:
  explicit QuantizedScope(const std::map<std::string, QuantFormat>& weights)
      : outer_(quantized_scope) {
    quantized_scope = &weights;
  }
  ~QuantizedScope() { quantized_scope = outer_; }
  QuantizedScope(const QuantizedScope&) = delete;
  QuantizedScope& operator=(const QuantizedScope&) = delete;

 private:
  const std::map<std::string, QuantFormat>* outer_;
};

// A persistent (state) input: it outlives one run.
GraphTensor state(GraphBuilder& b, const std::string& name, std::vector<Expr> shape,
                  DType dtype) {
  GraphTensor t = b.input(name, std::move(shape), dtype);
  b.graph().node(t.node()).persistent = true;
  return t;
}

AttentionConfig attention_config(const DecoderConfig& c) {
  AttentionConfig a;
  a.heads = c.heads;
  a.kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.rope_base = c.rope_base;
  a.norm_eps = c.rms_eps;
  a.max_context = c.max_context;
  return a;
}

// The token ids input, its embedding rows, the positions and the dims of one run.
struct Prologue {
  GraphTensor table;
  GraphTensor x;
  GraphTensor positions;
  Expr seq;
  Expr keys;    // keys attention reads: pos + seq with a cache, seq without
  Expr offset;  // absolute position of the first query within the keys
};

Prologue prologue(GraphBuilder& b, const DecoderConfig& c) {
  if (c.layers < 1) throw UserError("decoder \"" + c.name + "\": needs at least one layer");
  Expr seq = Expr::dim(kSeqDim);
  Expr pos = Expr::dim(kPosDim);
  GraphTensor tokens = b.input("tokens", {seq}, DType::I32);
  GraphTensor table = b.input("embed.weight", {c.vocab, c.hidden}, c.dtype);
  GraphTensor x = embedding(tokens, table);
  Expr offset = c.max_context > 0 ? pos : Expr(0);
  return {table, x, positions(b, seq, pos), seq, offset + seq, offset};
}

GraphTensor epilogue(const GraphTensor& x, const GraphTensor& table, const DecoderConfig& c,
                     bool unit_offset) {
  GraphTensor h = rms_norm(x, "norm", c.rms_eps, unit_offset);
  // A quantized table is read twice: rows gathered from its f32 form (one row a token), the
  // logits' product from its blocks (every row, every step).
  const bool quantized_table = c.quantized_weights.count("embed.weight") > 0;
  GraphTensor logits =
      !c.tied_embeddings ? linear(h, "lm_head", c.vocab)
      : quantized_table  ? linear(h, weight(x.builder(), "embed.weight", {c.vocab, c.hidden}, c.dtype))
                         : linear(h, table);
  logits.output("logits");
  return logits;
}

}  // namespace

GraphTensor weight(GraphBuilder& b, const std::string& name, std::vector<Expr> shape,
                   DType dtype) {
  if (!quantized_scope) return b.input(name, std::move(shape), dtype);
  auto quantized = quantized_scope->find(name);
  if (quantized == quantized_scope->end()) return b.input(name, std::move(shape), dtype);
  const std::optional<std::int64_t> rows = shape.size() == 2 ? shape[0].as_constant() : std::nullopt;
  const std::optional<std::int64_t> cols = shape.size() == 2 ? shape[1].as_constant() : std::nullopt;
  if (!rows || !cols || dtype != DType::F32) {
    throw UserError("weight \"" + name + "\": only a constant-shaped f32 matrix can be quantized, got " +
                    std::string(dtype_name(dtype)) + " " + shape_text(shape));
  }
  const QuantFormat f = quantized->second;
  const std::int64_t blocks = *cols / kQuantBlock;
  GraphTensor quants = b.input(name + ".quants", {*rows, blocks * quant_bytes(f)}, DType::U8);
  GraphTensor scales =
      b.input(name + ".scales", {*rows, blocks * scales_per_block(f)}, DType::F16);
  return dequantize(f, quants, scales, *rows, *cols);
}

GraphTensor linear(const GraphTensor& x, const std::string& prefix, std::int64_t out,
                   bool bias) {
  std::int64_t in = features(x, "linear");
  GraphTensor w = weight(x.builder(), prefix + ".weight", {out, in}, x.dtype());
  GraphTensor y = linear(x, w);
  if (bias) y = y + weight(x.builder(), prefix + ".bias", {out}, x.dtype());
  return y;
}

GraphTensor linear(const GraphTensor& x, const GraphTensor& weight) {
  if (weight.rank() != 2) {
    throw UserError("linear: the weight must be [out, in], got " + shape_text(weight.shape()));
  }
  return matmul(x, transpose(weight, 0, 1));
}

GraphTensor embedding(const GraphTensor& ids, const GraphTensor& table) {
  return gather(table, ids);
}

GraphTensor rms_norm(const GraphTensor& x, const std::string& prefix, double eps,
                     bool unit_offset) {
  GraphTensor w = weight(x.builder(), prefix + ".weight", {features(x, "rms_norm")}, x.dtype());
  return graph::rms_norm(x, eps) * (unit_offset ? w + 1.0 : w);
}

GraphTensor layer_norm(const GraphTensor& x, const std::string& prefix, double eps) {
  std::int64_t n = features(x, "layer_norm");
  GraphTensor w = weight(x.builder(), prefix + ".weight", {n}, x.dtype());
  GraphTensor bias = weight(x.builder(), prefix + ".bias", {n}, x.dtype());
  return graph::layer_norm(x, eps) * w + bias;
}

GraphTensor swiglu_mlp(const GraphTensor& x, const std::string& prefix,
                       std::int64_t intermediate) {
  std::int64_t n = features(x, "swiglu_mlp");
  GraphTensor gate = linear(x, prefix + ".gate", intermediate);
  GraphTensor up = linear(x, prefix + ".up", intermediate);
  return linear(silu(gate) * up, prefix + ".down", n);
}

GraphTensor gated_gelu_mlp(const GraphTensor& x, const std::string& prefix,
                           std::int64_t intermediate) {
  std::int64_t n = features(x, "gated_gelu_mlp");
  GraphTensor gate = linear(x, prefix + ".gate", intermediate);
  GraphTensor up = linear(x, prefix + ".up", intermediate);
  return linear(gelu(gate) * up, prefix + ".down", n);
}

GraphTensor gelu_mlp(const GraphTensor& x, const std::string& prefix, std::int64_t intermediate) {
  std::int64_t n = features(x, "gelu_mlp");
  return linear(gelu(linear(x, prefix + ".fc1", intermediate, true)), prefix + ".fc2", n, true);
}

GraphTensor positions(GraphBuilder& b, const Expr& seq, const Expr& offset) {
  // A view of one Iota: no arithmetic nodes, and the offset stays symbolic.
  return slice(b.iota(offset + seq, DType::I64), 0, offset, offset + seq);
}

GraphTensor attention(const GraphTensor& x, const GraphTensor& positions, const GraphTensor& mask,
                      const std::string& prefix, const AttentionConfig& c) {
  if (x.rank() != 2) throw UserError("attention: x must be [seq, hidden], got " +
                                     shape_text(x.shape()));
  if (c.heads < 1 || c.kv_heads < 1 || c.heads % c.kv_heads != 0) {
    throw UserError("attention: heads (" + std::to_string(c.heads) +
                    ") must be a positive multiple of kv_heads (" + std::to_string(c.kv_heads) +
                    ")");
  }
  if (mask.rank() != 2) throw UserError("attention: mask must be [seq, keys], got " +
                                        shape_text(mask.shape()));
  GraphBuilder& b = x.builder();
  const std::int64_t hidden = features(x, "attention");
  const std::int64_t heads = c.heads, kv = c.kv_heads, group = c.heads / c.kv_heads;
  const std::int64_t d = c.head_dim;
  const Expr seq = x.shape()[0];

  GraphTensor q = reshape(linear(x, prefix + ".q", heads * d), {seq, heads, d});
  GraphTensor k = reshape(linear(x, prefix + ".k", kv * d), {seq, kv, d});
  GraphTensor v = reshape(linear(x, prefix + ".v", kv * d), {seq, kv, d});
  if (c.qk_norm) {
    q = rms_norm(q, prefix + ".q_norm", c.norm_eps, /*unit_offset=*/true);
    k = rms_norm(k, prefix + ".k_norm", c.norm_eps, /*unit_offset=*/true);
  }
  if (c.rope) {
    GraphTensor p = positions;
    if (c.rope_scale != 1.0) p = cast(positions, x.dtype()) * (1.0 / c.rope_scale);
    // rotary wants [..., seq, head_dim]: heads first, then back.
    q = permute(rotary(permute(q, {1, 0, 2}), p, c.rope_base), {1, 0, 2});
    k = permute(rotary(permute(k, {1, 0, 2}), p, c.rope_base), {1, 0, 2});
  }
  if (c.max_context > 0) {
    // Write the new rows at their positions, then read every row up to the last query.
    const Expr keys = mask.shape()[1];
    GraphTensor k_cache = state(b, prefix + ".k_cache", {c.max_context, kv, d}, x.dtype());
    GraphTensor v_cache = state(b, prefix + ".v_cache", {c.max_context, kv, d}, x.dtype());
    GraphTensor k_all = scatter(k_cache, positions, k);
    GraphTensor v_all = scatter(v_cache, positions, v);
    k_all.output(prefix + ".k_cache");
    v_all.output(prefix + ".v_cache");
    k = slice(k_all, 0, 0, keys);
    v = slice(v_all, 0, 0, keys);
  }
  // Query head h = j * group + g reads kv head j: split q's heads into [kv, group] and
  // broadcast k and v over the group dim with stride-0 views.
  GraphTensor q4 = reshape(permute(q, {1, 0, 2}), {kv, group, seq, d});
  auto repeat_kv = [&](const GraphTensor& t) {  // [keys, kv, d] -> [kv, group, keys, d]
    return expand(unsqueeze(permute(t, {1, 0, 2}), 1), 1, group);
  };
  const double scale = c.scale != 0.0 ? c.scale : 1.0 / std::sqrt(static_cast<double>(d));
  GraphTensor scores = matmul(q4, transpose(repeat_kv(k), 2, 3)) * scale + mask;
  GraphTensor out = matmul(softmax(scores, 3), repeat_kv(v));  // [kv, group, seq, d]
  out = reshape(permute(reshape(out, {heads, seq, d}), {1, 0, 2}), {seq, heads * d});
  return linear(out, prefix + ".o", hidden);
}

DecoderConfig smollm2_135m() {
  DecoderConfig c;
  c.name = "smollm2-135m";
  c.layers = 30;
  c.hidden = 576;
  c.heads = 9;
  c.kv_heads = 3;
  c.head_dim = 64;
  c.intermediate = 1536;
  c.vocab = 49152;
  c.rope_base = 100000.0;
  c.rms_eps = 1e-5;
  c.tied_embeddings = true;
  c.max_context = 8192;
  return c;
}

DecoderConfig gemma3_4b() {
  DecoderConfig c;
  c.name = "gemma3-4b";
  c.layers = 34;
  c.hidden = 2560;
  c.heads = 8;
  c.kv_heads = 4;
  c.head_dim = 256;
  c.intermediate = 10240;
  c.vocab = 262144;
  c.rope_base = 10000.0;
  c.rms_eps = 1e-6;
  c.tied_embeddings = true;
  c.max_context = 4096;
  c.sliding_window = 1024;
  c.global_every = 6;
  c.global_rope_base = 1e6;
  c.global_rope_scale = 8.0;
  c.scale_embeddings = true;
  return c;
}

GraphTensor llama_layer(const GraphTensor& x, const GraphTensor& positions,
                        const GraphTensor& mask, const std::string& prefix,
                        const DecoderConfig& c) {
  GraphTensor h = x + attention(rms_norm(x, prefix + ".attn_norm", c.rms_eps), positions, mask,
                                prefix + ".attn", attention_config(c));
  return h + swiglu_mlp(rms_norm(h, prefix + ".mlp_norm", c.rms_eps), prefix + ".mlp",
                        c.intermediate);
}

bool is_global_layer(const DecoderConfig& c, std::int64_t i) {
  if (!c.sliding_window) return true;
  return c.global_every > 0 && (i + 1) % c.global_every == 0;
}

GraphTensor gemma3_layer(const GraphTensor& x, const GraphTensor& positions,
                         const GraphTensor& mask, const std::string& prefix,
                         const DecoderConfig& c, bool global) {
  AttentionConfig a = attention_config(c);
  a.qk_norm = true;
  if (global) {
    a.rope_base = c.global_rope_base;
    a.rope_scale = c.global_rope_scale;
  }
  const double eps = c.rms_eps;
  GraphTensor h = attention(rms_norm(x, prefix + ".input_norm", eps, true), positions, mask,
                            prefix + ".attn", a);
  h = x + rms_norm(h, prefix + ".post_attn_norm", eps, true);
  GraphTensor m = gated_gelu_mlp(rms_norm(h, prefix + ".pre_ffw_norm", eps, true),
                                 prefix + ".mlp", c.intermediate);
  return h + rms_norm(m, prefix + ".post_ffw_norm", eps, true);
}

GraphTensor llama_decoder(GraphBuilder& b, const DecoderConfig& c) {
  const QuantizedScope quantized(c.quantized_weights);
  Prologue p = prologue(b, c);
  GraphTensor mask = b.causal_mask(p.seq, p.keys, p.offset, std::nullopt, c.dtype);
  GraphTensor x = p.x;
  for (std::int64_t i = 0; i < c.layers; ++i) {
    b.graph_break();
    x = llama_layer(x, p.positions, mask, "layers." + std::to_string(i), c);
  }
  b.graph_break();
  return epilogue(x, p.table, c, /*unit_offset=*/false);
}

GraphTensor gemma3_decoder(GraphBuilder& b, const DecoderConfig& c) {
  const QuantizedScope quantized(c.quantized_weights);
  Prologue p = prologue(b, c);
  GraphTensor x = p.x;
  if (c.scale_embeddings) x = x * std::sqrt(static_cast<double>(c.hidden));
  // The masks are built once, before the first break, and read by every layer of their kind.
  std::optional<GraphTensor> global_mask, local_mask;
  for (std::int64_t i = 0; i < c.layers; ++i) {
    if (is_global_layer(c, i) && !global_mask) {
      global_mask = b.causal_mask(p.seq, p.keys, p.offset, std::nullopt, c.dtype);
    } else if (!is_global_layer(c, i) && !local_mask) {
      local_mask = b.causal_mask(p.seq, p.keys, p.offset, c.sliding_window, c.dtype);
    }
  }
  for (std::int64_t i = 0; i < c.layers; ++i) {
    b.graph_break();
    bool global = is_global_layer(c, i);
    x = gemma3_layer(x, p.positions, global ? *global_mask : *local_mask,
                     "layers." + std::to_string(i), c, global);
  }
  b.graph_break();
  return epilogue(x, p.table, c, /*unit_offset=*/true);
}

}  // namespace kiln::graph::nn
