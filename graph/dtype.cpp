// Names and sizes of element types, and binary16 conversions.
#include "graph/dtype.hpp"

#include <cmath>
#include <limits>

#include "graph/interpret.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::U8: return "u8";
  }
  KILN_ASSERT(false, "unknown DType");
  return "";
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F64: return 8;
    case DType::I32: return 4;
    case DType::I64: return 8;
    case DType::Bool: return 1;
    case DType::U8: return 1;
  }
  KILN_ASSERT(false, "unknown DType");
  return 0;
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool is_integer(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::U8; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

}  // namespace kiln::graph

namespace kiln::graph {

std::uint16_t half_bits(double value) {
  const double v = round_to_dtype(value, DType::F16);  // now exactly representable
  if (std::isnan(v)) return 0x7e00;
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {  // subnormal (or zero): a multiple of 2^-24
    return sign | static_cast<std::uint16_t>(std::ldexp(a, 24));
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int exponent = e - 1 + 15;
  const auto mantissa = static_cast<std::uint16_t>(std::ldexp(m * 2.0 - 1.0, 10));
  return sign | static_cast<std::uint16_t>(exponent << 10) | mantissa;
}

double half_value(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), -24);
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
  }
  return (bits & 0x8000) ? -v : v;
}

}  // namespace kiln::graph
