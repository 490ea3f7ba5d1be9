// A tiny random LLaMA written to a GGUF file by the tests themselves (tests never download a
// model): 2 layers, hidden 64, 4 heads over 2 kv heads, a byte-level BPE vocabulary of the 256
// byte tokens, a few merges and ChatML's special tokens.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/nn.hpp"
#include "model/ggml_type.hpp"
#include "model/gguf.hpp"

namespace kiln::testing {

struct TinyLlama {
  graph::nn::DecoderConfig config;
  // Each weight by graph name, in the graph's (rotate-half) row order, as the loader should
  // return it: quantized to the file's type and dequantized again.
  std::map<std::string, std::vector<float>> weights;
  // The metadata written, in order.
  std::vector<std::pair<std::string, model::GgufValue>> metadata;
};

// Writes the model to `path` with its matrices in `matrix_type` (norm weights stay f32), its q
// and k rows in llama.cpp's order, and the embedding tied unless `untied`. Random values are
// seeded by `seed`.
TinyLlama write_tiny_llama(const std::string& path, model::GgmlType matrix_type,
                           unsigned seed = 1, bool untied = false);

// The tiny vocabulary's tokens (GPT-2 byte characters), merges and the ids of its specials.
std::vector<std::string> tiny_tokens();
std::vector<std::string> tiny_merges();

// A fresh path under the system's temporary directory.
std::string temp_path(const std::string& name);

}  // namespace kiln::testing
