// Elements in their dtype's native layout (what device buffers and kernels hold), converted
// from and to the doubles of graph::Tensor (what the interpreter and users hold); and
// NativeTensor, a tensor already in that layout, so that a model's weights and random inputs
// reach a device without passing through doubles (8 bytes an element, a conversion each).
//
// Layouts: f32 float, f64 double, f16 IEEE binary16, bf16 the upper half of a float (rounded
// to nearest even), i32/i64 two's complement, u8 one byte, bool one byte 0 or 1. Converting to
// a dtype rounds as graph::round_to_dtype does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "graph/dtype.hpp"
#include "graph/interpret.hpp"

namespace kiln::graph {

std::vector<std::byte> to_native(const std::vector<double>& values, DType dtype);
std::vector<double> from_native(const void* data, std::size_t count, DType dtype);
// `v` rounded to `dtype`, written to `out` (dtype_size(dtype) bytes).
void store_native(double v, DType dtype, std::byte* out);

// A row-major tensor in its dtype's native layout. Its bytes are its own, or borrowed from
// memory that outlives it (a mapped model file), so a weight already in the layout the kernels
// read is never converted or copied on the host.
class NativeTensor {
 public:
  // Owns `bytes`, exactly numel(shape) elements of `dtype` (checked).
  NativeTensor(DType dtype, std::vector<std::int64_t> shape, std::vector<std::byte> bytes);
  // Reads `bytes` in place: they must stay valid while the tensor is used.
  static NativeTensor borrowed(DType dtype, std::vector<std::int64_t> shape,
                               std::span<const std::byte> bytes);

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  std::span<const std::byte> bytes() const {
    return owned_.empty() ? borrowed_ : std::span<const std::byte>(owned_);
  }
  bool is_borrowed() const { return owned_.empty() && !borrowed_.empty(); }

 private:
  NativeTensor(DType dtype, std::vector<std::int64_t> shape, std::vector<std::byte> owned,
               std::span<const std::byte> borrowed);

  DType dtype_;
  std::vector<std::int64_t> shape_;
  std::vector<std::byte> owned_;
  std::span<const std::byte> borrowed_;
};

// `t`'s values in native layout (rounded to its dtype).
NativeTensor to_native(const Tensor& t);
// `t`'s values as doubles.
Tensor to_tensor(const NativeTensor& t);

}  // namespace kiln::graph
