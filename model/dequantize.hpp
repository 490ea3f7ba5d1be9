// dequantize: the reference conversion of GGUF tensor data (plain or block-quantized) to f32,
// written for clarity; the numerical truth for any faster kernel that reads the same blocks.
//
// Block layouts (32 elements a block, little-endian f16 scales):
//   Q8_0  f16 d, 32 x int8 q                        value = q * d
//   Q4_0  f16 d, 16 bytes: element j in the low nibble of byte j, element j + 16 in its high
//         nibble                                    value = (q - 8) * d
//   Q4_1  f16 d, f16 m, 16 bytes as Q4_0            value = q * d + m
// F16 and BF16 are widened exactly; F32 is copied.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ggml_type.hpp"

namespace kiln::model {

// The bytes that `count` elements of `type` take; a UserError if `count` is not whole blocks.
std::uint64_t data_bytes(GgmlType type, std::int64_t count);

// Writes the out.size() values held in `data` (exactly data_bytes(type, out.size()) bytes) to
// `out`. A UserError for a type kiln does not dequantize (is_supported) or a size mismatch.
void dequantize(GgmlType type, std::span<const std::uint8_t> data, std::span<float> out);
std::vector<float> dequantize(GgmlType type, std::span<const std::uint8_t> data,
                              std::int64_t count);

}  // namespace kiln::model
