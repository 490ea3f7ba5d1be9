// The contract of the safetensors reader on any bytes, shared by the fuzz target
// (fuzz_safetensors.cpp) and the corpus test of the ordinary build
// (unit/test_safetensors_corpus.cpp): the bytes either read or are rejected with a UserError; a
// file that reads has every tensor inside its data section, of the size its dtype and shape
// give, no two non-empty tensors overlapping, and each F32/F16/BF16 tensor converts to f32.
// Returns false when the contract is broken; anything else thrown escapes (a bug too).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/safetensors.hpp"
#include "support/diagnostic.hpp"

namespace kiln::testing {

inline bool safetensors_contract_holds(std::span<const std::uint8_t> bytes) {
  model::Safetensors s;
  try {
    s = model::parse_safetensors(bytes, "fuzz.safetensors");
  } catch (const support::UserError&) {
    return true;  // rejected with a message: fine
  }
  if (s.data_offset < 8 || s.data_offset > bytes.size()) return false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const model::SafetensorsTensorInfo& t : s.tensors) {
    if (t.end < t.begin || t.end > bytes.size() - s.data_offset) return false;
    if (t.bytes() !=
        static_cast<std::uint64_t>(t.elements) * model::safetensors_dtype_size(t.dtype)) {
      return false;
    }
    if (t.bytes() > 0) ranges.emplace_back(t.begin, t.end);
    const bool real = t.dtype == model::SafetensorsDtype::F32 ||
                      t.dtype == model::SafetensorsDtype::F16 ||
                      t.dtype == model::SafetensorsDtype::BF16;
    if (real && t.elements <= (1 << 20)) {
      const auto values =
          model::safetensors_to_f32(t, bytes.subspan(s.data_offset + t.begin, t.bytes()));
      if (values.size() != static_cast<std::size_t>(t.elements)) return false;
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) return false;
  }
  return true;
}

}  // namespace kiln::testing
