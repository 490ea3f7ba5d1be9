// Quantized weights in the graph; see quantized.hpp.
#include "graph/quantized.hpp"

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

constexpr std::string_view kDequantizePrefix = "dequantize-";

}  // namespace

std::string_view quant_format_name(QuantFormat f) {
  switch (f) {
    case QuantFormat::Q8_0: return "q8_0";
    case QuantFormat::Q4_0: return "q4_0";
    case QuantFormat::Q4_1: return "q4_1";
  }
  return "?";
}

std::optional<QuantFormat> parse_quant_format(std::string_view name) {
  for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q4_1}) {
    if (quant_format_name(f) == name) return f;
  }
  return std::nullopt;
}

std::int64_t quant_bytes(QuantFormat f) {
  return f == QuantFormat::Q8_0 ? 32 : 16;
}

std::int64_t scales_per_block(QuantFormat f) {
  return f == QuantFormat::Q4_1 ? 2 : 1;
}

std::string dequantize_op_name(QuantFormat f) {
  return std::string(kDequantizePrefix) + std::string(quant_format_name(f));
}

std::optional<QuantFormat> dequantize_op_format(std::string_view op_name) {
  if (op_name.substr(0, kDequantizePrefix.size()) != kDequantizePrefix) return std::nullopt;
  return parse_quant_format(op_name.substr(kDequantizePrefix.size()));
}

float dequantize_element(QuantFormat f, const std::uint8_t* quants, float d, float m, int j) {
  switch (f) {
    case QuantFormat::Q8_0: return static_cast<float>(static_cast<std::int8_t>(quants[j])) * d;
    case QuantFormat::Q4_0:
    case QuantFormat::Q4_1: {
      const int half = static_cast<int>(kQuantBlock / 2);
      const int nibble = j < half ? quants[j] & 0x0F : quants[j - half] >> 4;
      if (f == QuantFormat::Q4_0) return static_cast<float>(nibble - 8) * d;
      return static_cast<float>(nibble) * d + m;
    }
  }
  return 0.0f;
}

GraphTensor dequantize(QuantFormat f, const GraphTensor& quants, const GraphTensor& scales,
                       std::int64_t rows, std::int64_t cols) {
  const std::string what = dequantize_op_name(f);
  if (rows < 1 || cols < 1 || cols % kQuantBlock != 0) {
    throw support::UserError(what + ": a [" + std::to_string(rows) + ", " + std::to_string(cols) +
                             "] matrix is not whole blocks of " + std::to_string(kQuantBlock));
  }
  const std::int64_t blocks = cols / kQuantBlock;
  const std::vector<Expr> want_q{Expr(rows), Expr(blocks * quant_bytes(f))};
  const std::vector<Expr> want_s{Expr(rows), Expr(blocks * scales_per_block(f))};
  if (quants.dtype() != DType::U8 || quants.shape() != want_q) {
    throw support::UserError(what + ": the quants must be u8 " + shape_text(want_q) + ", got " +
                             std::string(dtype_name(quants.dtype())) + " " +
                             shape_text(quants.shape()));
  }
  if (scales.dtype() != DType::F16 || scales.shape() != want_s) {
    throw support::UserError(what + ": the scales must be f16 " + shape_text(want_s) + ", got " +
                             std::string(dtype_name(scales.dtype())) + " " +
                             shape_text(scales.shape()));
  }
  Node n;
  n.op = Op::CustomOp;
  n.dtype = DType::F32;
  n.shape = {Expr(rows), Expr(cols)};
  n.name = what;
  return quants.builder().add(std::move(n), {quants, scales});
}

std::vector<double> dequantize_values(QuantFormat f, const std::vector<double>& quants,
                                      const std::vector<double>& scales, std::int64_t rows,
                                      std::int64_t cols) {
  const std::int64_t blocks = cols / kQuantBlock;
  const std::int64_t qb = quant_bytes(f), sb = scales_per_block(f);
  if (cols % kQuantBlock != 0 || static_cast<std::int64_t>(quants.size()) != rows * blocks * qb ||
      static_cast<std::int64_t>(scales.size()) != rows * blocks * sb) {
    throw support::UserError(dequantize_op_name(f) + ": buffers of " +
                             std::to_string(quants.size()) + " quants and " +
                             std::to_string(scales.size()) + " scales do not hold a [" +
                             std::to_string(rows) + ", " + std::to_string(cols) + "] matrix");
  }
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  std::uint8_t block[32];
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t block_index = r * blocks + b;
      for (std::int64_t j = 0; j < qb; ++j) {
        block[j] = static_cast<std::uint8_t>(quants[static_cast<std::size_t>(block_index * qb + j)]);
      }
      const auto d = static_cast<float>(scales[static_cast<std::size_t>(block_index * sb)]);
      const auto m = sb > 1 ? static_cast<float>(scales[static_cast<std::size_t>(block_index * sb + 1)])
                            : 0.0f;
      for (int j = 0; j < kQuantBlock; ++j) {
        out[static_cast<std::size_t>(r * cols + b * kQuantBlock + j)] =
            dequantize_element(f, block, d, m, j);
      }
    }
  }
  return out;
}

}  // namespace kiln::graph
