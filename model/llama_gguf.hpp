// llama_gguf: a LLaMA-architecture GGUF file (general.architecture "llama") as graph/nn's
// LLaMA decoder: its configuration from the metadata, and its weights under the graph's names.
//
//   GGUF                         graph (nn::llama_decoder)
//   token_embd.weight            embed.weight
//   blk.N.attn_norm.weight       layers.N.attn_norm.weight
//   blk.N.attn_q/k/v.weight      layers.N.attn.q/k/v.weight   (q, k: rows back to rotate-half
//   blk.N.attn_output.weight     layers.N.attn.o.weight        order, model/rope_permutation)
//   blk.N.ffn_norm.weight        layers.N.mlp_norm.weight
//   blk.N.ffn_gate/up/down.weight layers.N.mlp.gate/up/down.weight
//   output_norm.weight           norm.weight
//   output.weight                lm_head.weight (absent: tied to the embedding)
//
// Weights are f32 when loaded (the file's bytes where they are f32 already, else dequantized by
// model/dequantize), or, for the matrices that llama_quantized_weights names, kept as their
// blocks (graph/quantized.hpp: "<name>.quants" and "<name>.scales", the file's bytes split
// apart), which the CPU target's quantized products read directly. Nothing passes through
// doubles.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "graph/interpret.hpp"
#include "graph/native.hpp"
#include "graph/nn.hpp"
#include "graph/quantized.hpp"
#include "model/gguf.hpp"

namespace kiln::model {

// The decoder a LLaMA GGUF describes, with a KV cache of `max_context` positions (at most the
// model's context length). A UserError naming the key for missing or unsupported metadata.
graph::nn::DecoderConfig llama_config(const Gguf& gguf, std::int64_t max_context);

// The graph's name of GGUF tensor `name` ("blk.3.attn_q.weight" -> "layers.3.attn.q.weight");
// empty if the LLaMA decoder has no such weight.
std::string llama_graph_name(const std::string& name);

// The matrices of the file stored as Q8_0, Q4_0 or Q4_1 that the decoder multiplies by (the
// embedding only when tied: its rows are gathered from f32), by graph name: the table for
// DecoderConfig::quantized_weights and for load_llama_weights.
std::map<std::string, graph::QuantFormat> llama_quantized_weights(const Gguf& gguf,
                                                                   const graph::nn::DecoderConfig& config);

// Calls `use(graph name, tensor)` for every weight of the decoder `config` (from llama_config)
// in file order, one tensor at a time in its layout on a device, so that at most one is held:
// an f32 tensor in the graph's row order is the mapped file's bytes (no copy), others are
// dequantized to f32 (q and k rows reordered). A UserError if
// a tensor is missing, has an unexpected shape or type, or is not a weight of the decoder.
// Weights named in `quantized` (from llama_quantized_weights) come as their two block tensors
// (and a tied embedding also as f32, for the gather).
void load_llama_weights(const GgufFile& file, const graph::nn::DecoderConfig& config,
                        const std::function<void(const std::string&, graph::NativeTensor)>& use,
                        const std::map<std::string, graph::QuantFormat>& quantized = {});

}  // namespace kiln::model
