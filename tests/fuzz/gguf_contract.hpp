// The contract of the GGUF reader on any bytes, shared by the fuzz target (fuzz_gguf.cpp) and
// the corpus test of the ordinary build (unit/test_gguf_corpus.cpp): the bytes either read or
// are rejected with a UserError; a file that reads has every tensor inside it (each of a
// supported type dequantizes), and its metadata, written again by GgufWriter, reads back equal.
// Returns false when the contract is broken; anything else thrown escapes (a bug too).
#pragma once

#include <cstdint>
#include <span>

#include "model/dequantize.hpp"
#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "support/diagnostic.hpp"

namespace kiln::testing {

inline bool gguf_contract_holds(std::span<const std::uint8_t> bytes) {
  model::Gguf g;
  try {
    g = model::parse_gguf(bytes, "fuzz.gguf");
  } catch (const support::UserError&) {
    return true;  // rejected with a message: fine
  }
  for (const model::GgufTensorInfo& t : g.tensors) {
    if (g.data_offset + t.offset + t.bytes > bytes.size()) return false;
    if (!model::is_supported(t.type) || t.elements > (1 << 20)) continue;
    model::dequantize(t.type, bytes.subspan(g.data_offset + t.offset, t.bytes), t.elements);
  }
  model::GgufWriter w;
  for (const auto& [key, value] : g.metadata) w.set(key, value);
  const model::Gguf again = model::parse_gguf(w.bytes(), "again.gguf");
  return again.metadata == g.metadata;
}

}  // namespace kiln::testing
