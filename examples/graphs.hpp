// Example models as HLIR graphs, registered by name: what `kiln graph NAME` prints and what
// bench/graph measures. Building one needs no weights (they are named inputs).
#pragma once

#include <string_view>
#include <vector>

#include "graph/tensor.hpp"

namespace kiln::examples {

struct Example {
  std::string_view name;         // "mlp", "attention", "smollm2-135m", "gemma3-4b", ...
  std::string_view description;  // one line
  void (*build)(graph::GraphBuilder& b);  // adds the model's nodes and outputs to `b`
};

// Every example, in a fixed order.
const std::vector<Example>& examples();
// The example called `name`, or nullptr.
const Example* find_example(std::string_view name);

// The builders, also usable directly.
// A 3-layer perceptron: x [batch, 784] -> 512 -> 512 -> 10 (ReLU, biases); output "y".
void build_mlp(graph::GraphBuilder& b);
// relu((x + bias) * scale) + residual * 0.5 over x, residual [rows, 4096]: a memory-bound
// elementwise chain, compared with a STREAM triad by bench/cpu/chain.py; output "y".
void build_chain(graph::GraphBuilder& b);
// One causal multi-head self-attention block: x [seq, 512], 8 heads of 64, RoPE; output "y".
void build_attention(graph::GraphBuilder& b);
// The SmolLM2-135M decoder (graph/nn.hpp): tokens [seq] -> logits [seq, 49152].
void build_smollm2_135m(graph::GraphBuilder& b);
// The Gemma-3-4B text decoder (graph/nn.hpp): tokens [seq] -> logits [seq, 262144].
void build_gemma3_4b(graph::GraphBuilder& b);
// The Gemma-3 decoder's structure (local and global layers, q/k norms, KV cache) at toy size:
// what rule checks run on where the full model's weights would not fit the interpreter.
void build_gemma3_tiny(graph::GraphBuilder& b);

}  // namespace kiln::examples
