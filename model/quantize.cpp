// Reference quantization (see quantize.hpp), following ggml's *_ref functions step for step:
// the scale used to quantize is the f32 one, the scale stored is its f16 rounding.
#include "model/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "graph/dtype.hpp"
#include "model/dequantize.hpp"
#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

constexpr std::size_t kBlock = 32;

void put_f16(std::uint8_t* p, float v) {
  const std::uint16_t bits = graph::half_bits(v);
  std::memcpy(p, &bits, 2);
}

std::uint16_t bf16_bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<std::uint16_t>((u >> 16) | 64);  // quiet NaN
  return static_cast<std::uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

}  // namespace

std::vector<std::uint8_t> quantize(GgmlType type, std::span<const float> x) {
  const GgmlTypeInfo info = ggml_type_info(type);
  if (!is_supported(type)) {
    throw support::UserError("quantize: type " + std::string(info.name) + " is not supported");
  }
  std::vector<std::uint8_t> out(data_bytes(type, static_cast<std::int64_t>(x.size())));
  if (x.empty()) return out;  // memcpy must not see the null data() of an empty span
  std::uint8_t* p = out.data();
  const std::size_t blocks = x.size() / kBlock;
  switch (type) {
    case GgmlType::F32: std::memcpy(p, x.data(), x.size() * 4); break;
    case GgmlType::F16:
      for (std::size_t i = 0; i < x.size(); ++i) put_f16(p + 2 * i, x[i]);
      break;
    case GgmlType::BF16:
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::uint16_t b = bf16_bits(x[i]);
        std::memcpy(p + 2 * i, &b, 2);
      }
      break;
    case GgmlType::Q8_0:
      for (std::size_t b = 0; b < blocks; ++b, p += info.block_bytes) {
        const float* v = x.data() + b * kBlock;
        float amax = 0.0f;
        for (std::size_t j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(v[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(p, d);
        for (std::size_t j = 0; j < kBlock; ++j) {
          p[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(v[j] * id)));
        }
      }
      break;
    case GgmlType::Q4_0:
      for (std::size_t b = 0; b < blocks; ++b, p += info.block_bytes) {
        const float* v = x.data() + b * kBlock;
        float amax = 0.0f, max = 0.0f;
        for (std::size_t j = 0; j < kBlock; ++j) {
          if (amax < std::fabs(v[j])) {
            amax = std::fabs(v[j]);
            max = v[j];
          }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(p, d);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          const int lo = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j] * id + 8.5f)));
          const int hi = std::min(15, static_cast<int>(static_cast<std::int8_t>(v[j + 16] * id + 8.5f)));
          p[2 + j] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
      }
      break;
    case GgmlType::Q4_1:
      for (std::size_t b = 0; b < blocks; ++b, p += info.block_bytes) {
        const float* v = x.data() + b * kBlock;
        float lo = v[0], hi = v[0];
        for (std::size_t j = 1; j < kBlock; ++j) {
          lo = std::min(lo, v[j]);
          hi = std::max(hi, v[j]);
        }
        const float d = (hi - lo) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(p, d);
        put_f16(p + 2, lo);
        for (std::size_t j = 0; j < kBlock / 2; ++j) {
          const int q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>((v[j] - lo) * id + 0.5f)));
          const int q1 = std::min(15, static_cast<int>(static_cast<std::int8_t>((v[j + 16] - lo) * id + 0.5f)));
          p[4 + j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
        }
      }
      break;
    default: KILN_ASSERT(false, "quantize: unhandled supported type");
  }
  return out;
}

}  // namespace kiln::model
