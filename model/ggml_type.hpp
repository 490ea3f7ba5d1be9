// GgmlType: the tensor element types of GGUF files (ggml's type ids), with the block layout of
// each: how many elements a block holds and how many bytes it takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::model {

// ggml's type ids, as stored in a GGUF tensor info. Only some of them can be dequantized by kiln
// (see is_supported); the others are still read, so a file that holds them loads and says which
// tensor it cannot use.
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

struct GgmlTypeInfo {
  std::string_view name;        // "q4_1"
  std::int64_t block_elems;     // elements per block (1 for plain types)
  std::int64_t block_bytes;     // bytes per block
};

// The layout of type id `id`; nullopt for an id this reader does not know.
std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t id);
// The layout of a known type (an internal error for an unknown one).
GgmlTypeInfo ggml_type_info(GgmlType type);

// The types kiln dequantizes (model/dequantize): F32, F16, BF16, Q8_0, Q4_0, Q4_1.
bool is_supported(GgmlType type);

}  // namespace kiln::model
