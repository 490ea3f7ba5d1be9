// The OpenCL device: buffers, transfers and launches on one in-order queue.
//
// OpenCL buffers are handles, not addresses, but the runtime does arithmetic on buffers (an
// arena plus an offset). So each allocation gets a range of made-up addresses, and a pointer
// into a range resolves to (buffer, byte offset); kernels take both (dialect.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "runtime/target.hpp"
#include "targets/gpu/launch.hpp"
#include "targets/gpu/render.hpp"
#include "targets/opencl/context.hpp"

namespace kiln::targets::opencl {

// A compiled kernel: the OpenCL kernel object and how to size its grid.
class OpenClKernel final : public runtime::Kernel {
 public:
  OpenClKernel(graph::Body body, std::shared_ptr<Program> program, cl_kernel kernel,
               const gpu::KernelSource& source);
  ~OpenClKernel() override;
  cl_kernel get() const { return kernel_; }
  const gpu::KernelSource& source() const { return source_; }
  const gpu::GroupCount& groups() const { return groups_; }

 private:
  std::shared_ptr<Program> program_;  // kept alive while the kernel is
  cl_kernel kernel_;
  gpu::KernelSource source_;
  gpu::GroupCount groups_;
};

class OpenClDevice final : public runtime::Device {
 public:
  explicit OpenClDevice(const Context& context) : context_(context) {}
  ~OpenClDevice() override;
  void* allocate(std::size_t bytes) override;
  void release(void* buffer) override;
  void upload(void* device, const void* host, std::size_t bytes) override;
  void download(void* host, const void* device, std::size_t bytes) override;
  void copy(void* to, const void* from, std::size_t bytes) override;
  void launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
              const std::vector<long long>& dims) override;
  void call(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
            const graph::DimValues& dims) override;
  void synchronize() override;

 private:
  struct Allocation {
    cl_mem buffer = nullptr;
    std::size_t bytes = 0;
  };
  struct Resolved {
    cl_mem buffer = nullptr;
    std::size_t offset = 0;
    std::size_t bytes_after = 0;
  };
  // The allocation holding `address` and the offset in it; an internal error if none does.
  Resolved resolve(const void* address) const;

  const Context& context_;
  std::map<std::uintptr_t, Allocation> allocations_;  // made-up start address -> buffer
  std::uintptr_t next_address_ = std::uintptr_t{1} << 40;
};

}  // namespace kiln::targets::opencl
