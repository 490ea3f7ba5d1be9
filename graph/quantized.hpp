// Quantized weights in the graph: a matrix stored as 32-element blocks (GGUF's Q8_0, Q4_0 and
// Q4_1), split into two plain tensors the graph can hold, and the CustomOp that dequantizes
// them. The split keeps every byte pattern of either tensor meaningful (an f16 scale in a U8
// buffer could be NaN), so the search's random inputs check kernels that read blocks directly.
//
// Layout of a [rows, cols] matrix (cols a multiple of 32), per row, block b = cols / 32 blocks:
//   quants  U8  [rows, cols / 32 * quant_bytes]
//             q8_0: 32 bytes a block, each an int8 value (two's complement)
//             q4_0, q4_1: 16 bytes a block, element j in the low nibble of byte j, element
//             j + 16 in its high nibble (GGUF's order)
//   scales  F16 [rows, cols / 32 * scales_per_block]
//             q8_0, q4_0: d;  q4_1: d then m
// Value of element j of a block, computed in f32 as ggml does:
//   q8_0: q * d     q4_0: (q - 8) * d     q4_1: q * d + m
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "graph/tensor.hpp"

namespace kiln::graph {

enum class QuantFormat : std::uint8_t { Q8_0, Q4_0, Q4_1 };

inline constexpr std::int64_t kQuantBlock = 32;

// "q8_0", "q4_0", "q4_1".
std::string_view quant_format_name(QuantFormat f);
std::optional<QuantFormat> parse_quant_format(std::string_view name);
// Bytes of quants and f16 scales per block.
std::int64_t quant_bytes(QuantFormat f);
std::int64_t scales_per_block(QuantFormat f);

// The CustomOp name of dequantization ("dequantize-q4_1"), and the format it names.
std::string dequantize_op_name(QuantFormat f);
std::optional<QuantFormat> dequantize_op_format(std::string_view op_name);

// Element j of one block as f32, from its 32 (q8_0) or 16 (q4) quant bytes and its scales.
float dequantize_element(QuantFormat f, const std::uint8_t* quants, float d, float m, int j);

// The f32 [rows, cols] matrix held by `quants` ([rows, cols / 32 * quant_bytes], U8) and
// `scales` ([rows, cols / 32 * scales_per_block], F16): a CustomOp the interpreter knows and
// the CPU target's quantized matrix products read directly. A UserError for shapes that do not
// fit the layout.
GraphTensor dequantize(QuantFormat f, const GraphTensor& quants, const GraphTensor& scales,
                       std::int64_t rows, std::int64_t cols);

// The interpreter's semantics: `quants` and `scales` as the interpreter holds them (values as
// doubles, row-major), the [rows, cols] result.
std::vector<double> dequantize_values(QuantFormat f, const std::vector<double>& quants,
                                      const std::vector<double>& scales, std::int64_t rows,
                                      std::int64_t cols);

}  // namespace kiln::graph
