// The example graphs and their table (see graphs.hpp).
#include "examples/graphs.hpp"

#include <optional>

#include "graph/nn.hpp"

namespace kiln::examples {

using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;

void build_mlp(GraphBuilder& b) {
  GraphTensor x = b.input("x", {Expr::dim("batch"), 784});
  GraphTensor h = relu(graph::nn::linear(x, "fc1", 512, /*bias=*/true));
  h = relu(graph::nn::linear(h, "fc2", 512, /*bias=*/true));
  graph::nn::linear(h, "fc3", 10, /*bias=*/true).output("y");
}

// A bias, scale, activation and residual chain: reads two rows-by-4096 tensors and writes one,
// like a STREAM triad, so fused it should run at the machine's memory bandwidth.
void build_chain(GraphBuilder& b) {
  const Expr rows = Expr::dim("rows");
  GraphTensor x = b.input("x", {rows, 4096});
  GraphTensor residual = b.input("residual", {rows, 4096});
  GraphTensor bias = b.input("bias", {Expr(4096)});
  GraphTensor scale = b.input("scale", {Expr(4096)});
  (relu((x + bias) * scale) + residual * 0.5).output("y");
}

void build_attention(GraphBuilder& b) {
  const Expr seq = Expr::dim(graph::nn::kSeqDim);
  GraphTensor x = b.input("x", {seq, 512});
  graph::nn::AttentionConfig c;
  c.heads = 8;
  c.kv_heads = 8;
  c.head_dim = 64;
  GraphTensor mask = b.causal_mask(seq, seq);
  graph::nn::attention(x, graph::nn::positions(b, seq, 0), mask, "attn", c).output("y");
}

void build_smollm2_135m(GraphBuilder& b) { graph::nn::llama_decoder(b, graph::nn::smollm2_135m()); }

void build_gemma3_4b(GraphBuilder& b) { graph::nn::gemma3_decoder(b, graph::nn::gemma3_4b()); }

void build_gemma3_tiny(GraphBuilder& b) {
  graph::nn::DecoderConfig c = graph::nn::gemma3_4b();
  c.name = "gemma3-tiny";
  c.layers = 6;  // five local layers, then a global one, as in the full model
  c.hidden = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.intermediate = 128;
  c.vocab = 256;
  c.max_context = 64;
  c.sliding_window = 8;
  graph::nn::gemma3_decoder(b, c);
}

const std::vector<Example>& examples() {
  static const std::vector<Example> table = {
      {"mlp", "3-layer perceptron, batch x 784 -> 10", build_mlp},
      {"chain", "bias, scale, ReLU and residual over rows x 4096 (memory-bound)", build_chain},
      {"attention", "causal multi-head self-attention, seq x 512, 8 heads", build_attention},
      {"smollm2-135m", "SmolLM2-135M decoder (30 LLaMA layers, GQA 9/3, KV cache)",
       build_smollm2_135m},
      {"gemma3-4b", "Gemma-3-4B text decoder (34 layers, 5:1 local/global, KV cache)",
       build_gemma3_4b},
      {"gemma3-tiny", "Gemma-3 structure at toy size (6 layers, hidden 64): checks in seconds",
       build_gemma3_tiny},
  };
  return table;
}

const Example* find_example(std::string_view name) {
  for (const Example& e : examples()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace kiln::examples
