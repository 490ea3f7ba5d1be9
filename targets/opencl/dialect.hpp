// OpenCL C as a GPU dialect (targets/gpu/dialect.hpp). Buffers are passed as a byte base and
// a byte offset, so that a kernel can read from the middle of an arena allocation.
#pragma once

#include "targets/gpu/dialect.hpp"

namespace kiln::targets::opencl {

class OpenClDialect final : public gpu::Dialect {
 public:
  std::string header() const override;
  std::string kernel_declaration(const std::string& name, const std::string& params,
                                 int block) const override;
  gpu::BufferParam buffer_param(std::size_t index, const std::string& element_type,
                                bool writable, const std::string& name) const override;
  std::string local_array(const std::string& type, const std::string& name,
                          int size) const override;
  std::string local_id() const override { return "(kiln_i64)get_local_id(0)"; }
  std::string group_id() const override { return "(kiln_i64)get_group_id(0)"; }
  std::string group_count() const override { return "(kiln_i64)get_num_groups(0)"; }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)"; }
  std::string math(const std::string& fn, bool) const override { return fn; }
  // Sub-group exchanges (cl_khr_subgroup_shuffle) are not assumed: PoCL has no sub-groups, and
  // their size varies between devices. The renderer exchanges through local memory instead.
  std::string shuffle_xor(const std::string&, const std::string&,
                          const std::string&) const override {
    return "";
  }
  std::string half_type() const override { return "half"; }
  std::string nan(bool f64) const override { return f64 ? "(double)NAN" : "NAN"; }
  std::string infinity(bool f64) const override { return f64 ? "(double)INFINITY" : "INFINITY"; }
};

}  // namespace kiln::targets::opencl
