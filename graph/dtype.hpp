// DType: the element types of HLIR tensors, with their names, sizes and parsing from names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::graph {

enum class DType : std::uint8_t { F32, F16, BF16, F64, I32, I64, Bool, U8 };

// Every DType, in declaration order.
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                       DType::I32, DType::I64, DType::Bool, DType::U8};

// The short lower-case name used in text forms: f32 f16 bf16 f64 i32 i64 bool u8.
std::string_view dtype_name(DType t);
// Bytes per element (Bool is stored as one byte).
std::size_t dtype_size(DType t);
bool is_float(DType t);
bool is_integer(DType t);  // I32, I64, U8 (not Bool)
// The DType with that name (as dtype_name() prints it); nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace kiln::graph

namespace kiln::graph {

// IEEE binary16 bits <-> values, in portable code (not every compiler has _Float16). To bits
// rounds to nearest even as round_to_dtype does; NaN becomes the quiet NaN 0x7e00.
std::uint16_t half_bits(double value);
double half_value(std::uint16_t bits);

}  // namespace kiln::graph
