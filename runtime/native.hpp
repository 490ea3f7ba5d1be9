// Elements in their dtype's native layout (what device buffers and kernels hold), converted
// from and to the doubles of graph::Tensor (what the interpreter and users hold).
//
// Layouts: f32 float, f64 double, f16 IEEE binary16, bf16 the upper half of a float (rounded
// to nearest even), i32/i64 two's complement, u8 one byte, bool one byte 0 or 1. Converting to
// a dtype rounds as graph::round_to_dtype does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/dtype.hpp"

namespace kiln::runtime {

std::vector<std::byte> to_native(const std::vector<double>& values, graph::DType dtype);
std::vector<double> from_native(const void* data, std::size_t count, graph::DType dtype);

}  // namespace kiln::runtime
