// Native element layouts and NativeTensor; see native.hpp.
#include "graph/native.hpp"

#include <cstring>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

template <class T>
void put(std::byte* out, T v) {
  std::memcpy(out, &v, sizeof(T));
}

template <class T>
T get(const void* data, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

std::uint16_t bf16_bits(double v) {
  // round_to_dtype has already rounded to bf16 precision, so truncating the float is exact.
  auto f = static_cast<float>(round_to_dtype(v, DType::BF16));
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  return static_cast<std::uint16_t>(u >> 16);
}

float bf16_value(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

void store_native(double value, DType dtype, std::byte* out) {
  const double v = round_to_dtype(value, dtype);
  switch (dtype) {
    case DType::F32: put(out, static_cast<float>(v)); break;
    case DType::F64: put(out, v); break;
    case DType::F16: put(out, half_bits(v)); break;
    case DType::BF16: put(out, bf16_bits(v)); break;
    case DType::I32: put(out, static_cast<std::int32_t>(v)); break;
    case DType::I64: put(out, static_cast<std::int64_t>(v)); break;
    case DType::U8: case DType::Bool: put(out, static_cast<std::uint8_t>(v)); break;
  }
}

std::vector<std::byte> to_native(const std::vector<double>& values, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> out(values.size() * size);
  for (std::size_t i = 0; i < values.size(); ++i) store_native(values[i], dtype, out.data() + i * size);
  return out;
}

std::vector<double> from_native(const void* data, std::size_t count, DType dtype) {
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::F32: out[i] = get<float>(data, i); break;
      case DType::F64: out[i] = get<double>(data, i); break;
      case DType::F16: out[i] = half_value(get<std::uint16_t>(data, i)); break;
      case DType::BF16: out[i] = bf16_value(get<std::uint16_t>(data, i)); break;
      case DType::I32: out[i] = get<std::int32_t>(data, i); break;
      case DType::I64: out[i] = static_cast<double>(get<std::int64_t>(data, i)); break;
      case DType::U8: case DType::Bool: out[i] = get<std::uint8_t>(data, i); break;
    }
  }
  return out;
}

NativeTensor::NativeTensor(DType dtype, std::vector<std::int64_t> shape,
                           std::vector<std::byte> owned, std::span<const std::byte> borrowed)
    : dtype_(dtype), shape_(std::move(shape)), owned_(std::move(owned)), borrowed_(borrowed) {
  KILN_ASSERT(bytes().size() == static_cast<std::size_t>(numel(shape_)) * dtype_size(dtype_),
              "NativeTensor: the bytes do not hold its shape's elements");
}

NativeTensor::NativeTensor(DType dtype, std::vector<std::int64_t> shape,
                           std::vector<std::byte> bytes)
    : NativeTensor(dtype, std::move(shape), std::move(bytes), {}) {}

NativeTensor NativeTensor::borrowed(DType dtype, std::vector<std::int64_t> shape,
                                    std::span<const std::byte> bytes) {
  return NativeTensor(dtype, std::move(shape), {}, bytes);
}

NativeTensor to_native(const Tensor& t) { return {t.dtype, t.shape, to_native(t.data, t.dtype)}; }

Tensor to_tensor(const NativeTensor& t) {
  const std::span<const std::byte> bytes = t.bytes();
  return {t.dtype(), t.shape(), from_native(bytes.data(), bytes.size() / dtype_size(t.dtype()), t.dtype())};
}

}  // namespace kiln::graph
