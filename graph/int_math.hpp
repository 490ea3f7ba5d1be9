// Overflow-checked 64-bit integer arithmetic with floor semantics, shared by Expr's evaluator,
// simplifier and bounds. Every function returns nullopt on overflow or a zero divisor.
#pragma once

#include <cstdint>
#include <optional>

namespace kiln::graph::int_math {

inline std::optional<std::int64_t> add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> sub(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Rounds toward negative infinity: floor_div(-7, 2) == -4.
inline std::optional<std::int64_t> floor_div(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return sub(0, a);
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// Rounds toward positive infinity: ceil_div(7, 2) == 4.
inline std::optional<std::int64_t> ceil_div(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return sub(0, a);
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  return q;
}

// The remainder of floor division: it has the sign of b, and a == b*floor_div(a, b) + mod(a, b).
inline std::optional<std::int64_t> mod(std::int64_t a, std::int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return std::int64_t{0};
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace kiln::graph::int_math
