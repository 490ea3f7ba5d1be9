// CUDA C++ as a GPU dialect (targets/gpu/dialect.hpp): `extern "C" __global__` kernels taking
// device pointers, __shared__ arrays, __syncthreads, warp shuffles, cuda_fp16.h halves.
#pragma once

#include "targets/gpu/dialect.hpp"

namespace kiln::targets::cuda {

class CudaDialect final : public gpu::Dialect {
 public:
  std::string header() const override;
  std::string kernel_declaration(const std::string& name, const std::string& params,
                                 int block) const override;
  gpu::BufferParam buffer_param(std::size_t index, const std::string& element_type,
                                bool writable, const std::string& name) const override;
  std::string local_array(const std::string& type, const std::string& name,
                          int size) const override;
  std::string local_id() const override { return "(kiln_i64)threadIdx.x"; }
  std::string group_id() const override { return "(kiln_i64)blockIdx.x"; }
  std::string group_count() const override { return "(kiln_i64)gridDim.x"; }
  std::string barrier() const override { return "__syncthreads()"; }
  std::string math(const std::string& fn, bool f64) const override { return f64 ? fn : fn + "f"; }
  std::string shuffle_xor(const std::string& type, const std::string& value,
                          const std::string& lane_mask) const override;
  std::string half_type() const override { return "__half"; }
  std::string nan(bool f64) const override;
  std::string infinity(bool f64) const override;
};

}  // namespace kiln::targets::cuda
