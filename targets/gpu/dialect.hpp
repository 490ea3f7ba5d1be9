// The few places where GPU languages differ (OpenCL C, CUDA C++), as hooks for the one GPU
// renderer (render.hpp): qualifiers, thread-index names, barriers, local-memory arrays, math
// function names, half and bfloat16 storage. targets/opencl and targets/cuda implement it;
// the indexing, reduction and barrier logic stays in the renderer, shared.
#pragma once

#include <cstddef>
#include <string>

#include "graph/dtype.hpp"

namespace kiln::targets::gpu {

// A buffer argument of a kernel: its parameter text and the statement that declares the
// pointer `name` the body uses (empty when the parameter is that pointer).
struct BufferParam {
  std::string params;
  std::string setup;
};

class Dialect {
 public:
  virtual ~Dialect() = default;
  // Text before the kernels. It defines the 64-bit integer `kiln_i64`, `KILN_FN` (qualifiers
  // of helper functions), KILN_HAS_F64 where double is available, and these macros, which the
  // shared helpers and generated code use:
  //   kiln_float_bits(f), kiln_bits_float(u)    float <-> 32-bit unsigned bits
  //   kiln_trunc(x)                             double truncation
  //   kiln_load_f16(p, i), kiln_store_f16(p, i, v), kiln_round_f16(x)   half storage, in float
  virtual std::string header() const = 0;
  // The kernel's declaration up to its body: `name(params)` with the qualifiers, for `block`
  // threads per group.
  virtual std::string kernel_declaration(const std::string& name, const std::string& params,
                                         int block) const = 0;
  // Buffer `index` of a kernel, elements of `element_type`, named `name` in the body.
  virtual BufferParam buffer_param(std::size_t index, const std::string& element_type,
                                   bool writable, const std::string& name) const = 0;
  // A local (shared) memory array declared at the top of a kernel.
  virtual std::string local_array(const std::string& type, const std::string& name,
                                  int size) const = 0;
  // Thread index in the group, group index and group count, as kiln_i64 expressions.
  virtual std::string local_id() const = 0;
  virtual std::string group_id() const = 0;
  virtual std::string group_count() const = 0;
  // A barrier for the group's threads that also orders their local and global memory.
  virtual std::string barrier() const = 0;
  // The name of math function `fn` (exp2, log2, sin, sqrt, fmod) for float or double.
  virtual std::string math(const std::string& fn, bool f64) const = 0;
  // The value of `value` (of compute type `type`) held by the thread whose index in its
  // sub-group of kSubGroup (schedule.hpp) is this one's xor `lane_mask`, as an expression; every
  // thread of the sub-group evaluates it together. Empty when the language or device has no
  // such exchange: the renderer then exchanges through local memory.
  virtual std::string shuffle_xor(const std::string& type, const std::string& value,
                                  const std::string& lane_mask) const = 0;
  // The element type of an f16 buffer.
  virtual std::string half_type() const = 0;
  // NaN and +infinity of float or double.
  virtual std::string nan(bool f64) const = 0;
  virtual std::string infinity(bool f64) const = 0;
};

}  // namespace kiln::targets::gpu
