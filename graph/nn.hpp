// nn: neural-network building blocks and whole decoders over the GraphTensor API (LLaMA,
// Gemma 3), so models are built in a few lines and without a weight file.
//
// Conventions.
// - Activations are [seq, features] (batch 1). `seq` is the symbolic dim `seq`.
// - Weights are named graph Inputs, "<prefix>.weight" / "<prefix>.bias", e.g.
//   "layers.3.attn.q.weight"; Linear weights are [out, in] as in PyTorch (y = x W^T + b).
// - The KV cache: each attention layer with AttentionConfig::max_context > 0 owns two persistent
//   Inputs "<prefix>.k_cache" and "<prefix>.v_cache" of shape [max_context, kv_heads,
//   head_dim]. The new keys and values are written into them by Scatter at the current
//   positions, and attention reads the updated caches' rows [0, keys). The updated caches are
//   Outputs with the same names as the Inputs: the state to carry to the next run. (The
//   interpreter does not carry it; its caller feeds each such Output back as the Input.)
// - Positions: the symbolic dim `pos` is the number of tokens already in the cache (0 on the
//   first run). A symbolic dim rather than an integer input, because shapes depend on it (the
//   keys read are pos + seq) and the runtime binds dims per run anyway. The current tokens sit
//   at absolute positions pos, ..., pos + seq - 1.
// - Decoders put a graph_break() before each layer and one after the last, so the layers are
//   chunks of their own (compiler/partition groups the identical ones). The token ids input is
//   "tokens" [seq] (i32), the output "logits" [seq, vocab].
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/quantized.hpp"
#include "graph/tensor.hpp"

namespace kiln::graph::nn {

// The dim names used by the decoders.
inline constexpr const char* kSeqDim = "seq";
inline constexpr const char* kPosDim = "pos";

// A named weight input "<prefix>.<what>" of `shape`; while a decoder whose config names it in
// quantized_weights is built, the dequantization of its blocks (inputs "<name>.quants" and
// "<name>.scales", graph/quantized.hpp).
GraphTensor weight(GraphBuilder& b, const std::string& name, std::vector<Expr> shape,
                   DType dtype = DType::F32);

// y = x W^T (+ b): x [..., in], weight "<prefix>.weight" [out, in], bias "<prefix>.bias" [out].
GraphTensor linear(const GraphTensor& x, const std::string& prefix, std::int64_t out,
                   bool bias = false);
// y = x E^T with an existing weight E [out, in] (a tied language-model head).
GraphTensor linear(const GraphTensor& x, const GraphTensor& weight);

// Rows `ids` ([seq], integer) of the table: [seq, hidden].
GraphTensor embedding(const GraphTensor& ids, const GraphTensor& table);

// x / sqrt(mean(x^2) + eps) * w over the last axis, w = "<prefix>.weight" [features]. With
// `unit_offset` the scale is (1 + w), as Gemma stores its norm weights.
GraphTensor rms_norm(const GraphTensor& x, const std::string& prefix, double eps,
                     bool unit_offset = false);
// (x - mean) / sqrt(variance + eps) * w + b over the last axis.
GraphTensor layer_norm(const GraphTensor& x, const std::string& prefix, double eps);

// down(silu(gate(x)) * up(x)) (LLaMA); linears "<prefix>.gate", ".up", ".down", no bias.
GraphTensor swiglu_mlp(const GraphTensor& x, const std::string& prefix,
                       std::int64_t intermediate);
// down(gelu(gate(x)) * up(x)) (Gemma), gelu the tanh approximation.
GraphTensor gated_gelu_mlp(const GraphTensor& x, const std::string& prefix,
                           std::int64_t intermediate);
// fc2(gelu(fc1(x))) (GPT-2 style), with biases.
GraphTensor gelu_mlp(const GraphTensor& x, const std::string& prefix, std::int64_t intermediate);

struct AttentionConfig {
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;  // heads must be a multiple; each kv head serves heads / kv_heads
  std::int64_t head_dim = 64;
  bool rope = true;
  double rope_base = 10000.0;
  double rope_scale = 1.0;     // linear position scaling: positions are divided by it
  double scale = 0.0;          // score scale; 0 means 1 / sqrt(head_dim)
  bool qk_norm = false;        // Gemma 3: RMSNorm (unit offset) of q and k over head_dim
  double norm_eps = 1e-6;      // for qk_norm
  std::int64_t max_context = 0;  // > 0: a KV cache of this many positions (see the header)
};

// The absolute positions of the current tokens, [seq] (i64): offset, ..., offset + seq - 1.
GraphTensor positions(GraphBuilder& b, const Expr& seq, const Expr& offset);

// Multi-head attention with grouped-query heads: q, k, v, o linears "<prefix>.q" ... (no bias),
// RoPE on q and k at `positions` ([seq]), softmax(q k^T * scale + mask) v, where `mask` is an
// additive [seq, keys] mask (GraphBuilder::causal_mask). Without a cache keys = seq; with one,
// keys = the rows of the updated cache that are read (pos + seq). The kv heads are repeated to
// the q heads by expand views, not copies. x: [seq, hidden] -> [seq, hidden].
GraphTensor attention(const GraphTensor& x, const GraphTensor& positions, const GraphTensor& mask,
                      const std::string& prefix, const AttentionConfig& config);

struct DecoderConfig {
  std::string name;
  std::int64_t layers = 1;
  std::int64_t hidden = 64;
  std::int64_t heads = 1;
  std::int64_t kv_heads = 1;
  std::int64_t head_dim = 64;
  std::int64_t intermediate = 256;
  std::int64_t vocab = 256;
  double rope_base = 10000.0;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;
  std::int64_t max_context = 2048;  // KV cache positions per layer; 0: no cache
  DType dtype = DType::F32;
  // Gemma 3 only.
  std::optional<std::int64_t> sliding_window;  // local layers see the last this many keys
  std::int64_t global_every = 0;     // layer i is global if (i + 1) % global_every == 0
  double global_rope_base = 1e6;
  double global_rope_scale = 1.0;
  bool scale_embeddings = false;     // multiply embeddings by sqrt(hidden)
  // Weights stored as quantized blocks, by name (nn::weight): their products can read the
  // blocks. A quantized tied embedding is also an f32 input, for the gather of its rows.
  std::map<std::string, QuantFormat> quantized_weights;
};

// SmolLM2-135M: 30 layers, hidden 576, 9 heads, 3 kv heads, head_dim 64, MLP 1536, vocab 49152,
// rope base 1e5, eps 1e-5, tied embeddings, 8192 positions.
DecoderConfig smollm2_135m();
// Gemma-3-4B (text): 34 layers, hidden 2560, 8 heads, 4 kv heads, head_dim 256, MLP 10240,
// vocab 262144, sliding window 1024 with local rope base 1e4, every 6th layer global with rope
// base 1e6 (linear scaling 8), embeddings scaled by sqrt(hidden), eps 1e-6, tied embeddings.
// max_context is 4096 here (the model allows 131072; the graph does not depend on it).
DecoderConfig gemma3_4b();

// Pre-norm LLaMA layer: x + attn(rms(x)), then h + mlp(rms(h)) (SwiGLU). Weights under
// `prefix`: attn_norm, attn.{q,k,v,o}, mlp_norm, mlp.{gate,up,down}.
GraphTensor llama_layer(const GraphTensor& x, const GraphTensor& positions,
                        const GraphTensor& mask, const std::string& prefix,
                        const DecoderConfig& config);
// Gemma 3 layer: h = x + post_attn_norm(attn(input_norm(x))) with q/k norms, then
// h + post_ffw_norm(mlp(pre_ffw_norm(h))) (gated GELU). `global` selects the global rope
// base and the full causal mask (the caller passes the matching mask).
GraphTensor gemma3_layer(const GraphTensor& x, const GraphTensor& positions,
                         const GraphTensor& mask, const std::string& prefix,
                         const DecoderConfig& config, bool global);
// True if layer `i` of a Gemma 3 config is a global (not sliding-window) layer.
bool is_global_layer(const DecoderConfig& config, std::int64_t i);

// Whole decoders: "tokens" [seq] (i32) -> embedding -> layers (a break before each, one after)
// -> final norm -> "logits" [seq, vocab], marked as an Output. Weights: "embed.weight",
// "layers.<i>.…", "norm.weight", and "lm_head.weight" unless tied. Returns the logits.
GraphTensor llama_decoder(GraphBuilder& b, const DecoderConfig& config);
GraphTensor gemma3_decoder(GraphBuilder& b, const DecoderConfig& config);

}  // namespace kiln::graph::nn
