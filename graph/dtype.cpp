// Names and sizes of element types.
#include "graph/dtype.hpp"

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
