// quantize: f32 values to GGUF tensor data of a supported type, as ggml's reference quantizers
// do (quantize_row_*_ref), so that kiln can write model files (model/gguf_writer) and tests can
// make quantized weights.
//   Q8_0  d = max|x| / 127, q = round(x / d)
//   Q4_0  d = (the x of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5))
//   Q4_1  d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5))
// F16 and BF16 round to nearest even.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ggml_type.hpp"

namespace kiln::model {

// A UserError for an unsupported type or a count that is not whole blocks.
std::vector<std::uint8_t> quantize(GgmlType type, std::span<const float> values);

}  // namespace kiln::model
