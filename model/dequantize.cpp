// Reference dequantization (see dequantize.hpp).
#include "model/dequantize.hpp"

#include <cstring>
#include <string>

#include "graph/dtype.hpp"
#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

constexpr std::int64_t kBlock = 32;

float f16_at(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  return static_cast<float>(graph::half_value(bits));
}

float bf16_at(const std::uint8_t* p) {
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

}  // namespace

std::uint64_t data_bytes(GgmlType type, std::int64_t count) {
  const GgmlTypeInfo info = ggml_type_info(type);
  if (count < 0 || count % info.block_elems != 0) {
    throw support::UserError(std::to_string(count) + " elements are not whole blocks of " +
                             std::to_string(info.block_elems) + " (" + std::string(info.name) + ")");
  }
  return static_cast<std::uint64_t>(count / info.block_elems) *
         static_cast<std::uint64_t>(info.block_bytes);
}

void dequantize(GgmlType type, std::span<const std::uint8_t> data, std::span<float> out) {
  const GgmlTypeInfo info = ggml_type_info(type);
  if (!is_supported(type)) {
    throw support::UserError("dequantize: type " + std::string(info.name) + " is not supported");
  }
  const auto count = static_cast<std::int64_t>(out.size());
  const std::uint64_t need = data_bytes(type, count);
  if (data.size() != need) {
    throw support::UserError("dequantize: " + std::to_string(count) + " " +
                             std::string(info.name) + " elements need " + std::to_string(need) +
                             " bytes, got " + std::to_string(data.size()));
  }
  if (count == 0) return;  // an empty span's data() may be null, which memcpy must not see
  const std::uint8_t* p = data.data();
  float* y = out.data();
  switch (type) {
    case GgmlType::F32: std::memcpy(y, p, out.size() * 4); break;
    case GgmlType::F16:
      for (std::int64_t i = 0; i < count; ++i) y[i] = f16_at(p + 2 * i);
      break;
    case GgmlType::BF16:
      for (std::int64_t i = 0; i < count; ++i) y[i] = bf16_at(p + 2 * i);
      break;
    case GgmlType::Q8_0:
      for (std::int64_t b = 0; b < count / kBlock; ++b, p += info.block_bytes, y += kBlock) {
        const float d = f16_at(p);
        for (int j = 0; j < kBlock; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(p[2 + j])) * d;
      }
      break;
    case GgmlType::Q4_0:
      for (std::int64_t b = 0; b < count / kBlock; ++b, p += info.block_bytes, y += kBlock) {
        const float d = f16_at(p);
        const std::uint8_t* q = p + 2;
        for (int j = 0; j < kBlock / 2; ++j) {
          y[j] = static_cast<float>((q[j] & 0x0F) - 8) * d;
          y[j + kBlock / 2] = static_cast<float>((q[j] >> 4) - 8) * d;
        }
      }
      break;
    case GgmlType::Q4_1:
      for (std::int64_t b = 0; b < count / kBlock; ++b, p += info.block_bytes, y += kBlock) {
        const float d = f16_at(p);
        const float m = f16_at(p + 2);
        const std::uint8_t* q = p + 4;
        for (int j = 0; j < kBlock / 2; ++j) {
          const float lo = static_cast<float>(q[j] & 0x0F) * d;
          const float hi = static_cast<float>(q[j] >> 4) * d;
          y[j] = lo + m;
          y[j + kBlock / 2] = hi + m;
        }
      }
      break;
    default: KILN_ASSERT(false, "dequantize: unhandled supported type");
  }
}

std::vector<float> dequantize(GgmlType type, std::span<const std::uint8_t> data,
                              std::int64_t count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  dequantize(type, data, out);
  return out;
}

}  // namespace kiln::model
