// Conversions between doubles and native element layouts; see native.hpp.
#include "runtime/native.hpp"

#include <cstring>

#include "graph/interpret.hpp"

namespace kiln::runtime {

using graph::DType;

namespace {

template <class T>
void put(std::vector<std::byte>& out, std::size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

template <class T>
T get(const void* data, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

std::uint16_t bf16_bits(double v) {
  // round_to_dtype has already rounded to bf16 precision, so truncating the float is exact.
  auto f = static_cast<float>(graph::round_to_dtype(v, DType::BF16));
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

std::vector<std::byte> to_native(const std::vector<double>& values, DType dtype) {
  std::vector<std::byte> out(values.size() * graph::dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = graph::round_to_dtype(values[i], dtype);
    switch (dtype) {
      case DType::F32: put(out, i, static_cast<float>(v)); break;
      case DType::F64: put(out, i, v); break;
      case DType::F16: put(out, i, graph::half_bits(v)); break;
      case DType::BF16: put(out, i, bf16_bits(v)); break;
      case DType::I32: put(out, i, static_cast<std::int32_t>(v)); break;
      case DType::I64: put(out, i, static_cast<std::int64_t>(v)); break;
      case DType::U8: case DType::Bool: put(out, i, static_cast<std::uint8_t>(v)); break;
    }
  }
  return out;
}

std::vector<double> from_native(const void* data, std::size_t count, DType dtype) {
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case DType::F32: out[i] = get<float>(data, i); break;
      case DType::F64: out[i] = get<double>(data, i); break;
      case DType::F16: out[i] = graph::half_value(get<std::uint16_t>(data, i)); break;
      case DType::BF16: out[i] = bf16_value(get<std::uint16_t>(data, i)); break;
      case DType::I32: out[i] = get<std::int32_t>(data, i); break;
      case DType::I64: out[i] = static_cast<double>(get<std::int64_t>(data, i)); break;
      case DType::U8: case DType::Bool: out[i] = get<std::uint8_t>(data, i); break;
    }
  }
  return out;
}

}  // namespace kiln::runtime
