// The OpenCL device; see device.hpp.
#include "targets/opencl/device.hpp"

#include <algorithm>
#include <vector>

#include "support/diagnostic.hpp"
#include "targets/gpu/tuned_kernel.hpp"

namespace kiln::targets::opencl {

namespace {
// Made-up address ranges are this aligned, and a gap separates them.
constexpr std::uintptr_t kAddressAlignment = 4096;
// Kernels stride over rows and elements, so the grid can be capped.
constexpr long long kMaxGroups = 1 << 16;
}  // namespace

OpenClKernel::OpenClKernel(graph::Body body, std::shared_ptr<Program> program, cl_kernel kernel,
                           const gpu::KernelSource& source)
    : Kernel(std::move(body)), program_(std::move(program)), kernel_(kernel), source_(source),
      groups_(source.groups, source.dims, kMaxGroups) {}

OpenClKernel::~OpenClKernel() { clReleaseKernel(kernel_); }

OpenClDevice::~OpenClDevice() {
  for (auto& [address, a] : allocations_) clReleaseMemObject(a.buffer);
}

void* OpenClDevice::allocate(std::size_t bytes) {
  cl_int status = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(context_.context(), CL_MEM_READ_WRITE, std::max<std::size_t>(bytes, 1),
                                 nullptr, &status);
  if (status != CL_SUCCESS) {
    throw support::UserError("opencl: cannot allocate " + std::to_string(bytes) +
                             " bytes on the device: " + status_text(status));
  }
  const std::uintptr_t address = next_address_;
  next_address_ += (bytes / kAddressAlignment + 2) * kAddressAlignment;
  allocations_[address] = {buffer, bytes};
  return reinterpret_cast<void*>(address);
}

void OpenClDevice::release(void* buffer) {
  if (!buffer) return;
  auto it = allocations_.find(reinterpret_cast<std::uintptr_t>(buffer));
  KILN_ASSERT(it != allocations_.end(), "opencl: release of a buffer this device did not allocate");
  clReleaseMemObject(it->second.buffer);
  allocations_.erase(it);
}

OpenClDevice::Resolved OpenClDevice::resolve(const void* address) const {
  const auto p = reinterpret_cast<std::uintptr_t>(address);
  auto it = allocations_.upper_bound(p);
  KILN_ASSERT(it != allocations_.begin(), "opencl: an address outside every allocation");
  --it;
  const std::size_t offset = p - it->first;
  KILN_ASSERT(offset <= it->second.bytes, "opencl: an address outside every allocation");
  return {it->second.buffer, offset, it->second.bytes - offset};
}

void OpenClDevice::upload(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  const Resolved r = resolve(device);
  KILN_ASSERT(bytes <= r.bytes_after, "opencl: upload past the end of a buffer");
  check(clEnqueueWriteBuffer(context_.queue(), r.buffer, CL_TRUE, r.offset, bytes, host, 0, nullptr,
                             nullptr),
        "clEnqueueWriteBuffer");
}

void OpenClDevice::download(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  const Resolved r = resolve(device);
  KILN_ASSERT(bytes <= r.bytes_after, "opencl: download past the end of a buffer");
  check(clEnqueueReadBuffer(context_.queue(), r.buffer, CL_TRUE, r.offset, bytes, host, 0, nullptr,
                            nullptr),
        "clEnqueueReadBuffer");
}

void OpenClDevice::copy(void* to, const void* from, std::size_t bytes) {
  if (!bytes || to == from) return;
  const Resolved dst = resolve(to);
  const Resolved src = resolve(from);
  KILN_ASSERT(bytes <= dst.bytes_after && bytes <= src.bytes_after,
              "opencl: copy past the end of a buffer");
  const bool overlap = dst.buffer == src.buffer && dst.offset < src.offset + bytes &&
                       src.offset < dst.offset + bytes;
  if (overlap) {  // OpenCL forbids overlapping copies: go through the host
    std::vector<unsigned char> staging(bytes);
    download(staging.data(), from, bytes);
    upload(to, staging.data(), bytes);
    return;
  }
  check(clEnqueueCopyBuffer(context_.queue(), src.buffer, dst.buffer, src.offset, dst.offset, bytes,
                            0, nullptr, nullptr),
        "clEnqueueCopyBuffer");
}

void OpenClDevice::launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
                          const std::vector<long long>& dims) {
  if (const auto* tuned = dynamic_cast<const gpu::TunedKernel*>(&kernel)) {
    launch(tuned->pick(*this, buffers, dims), buffers, dims);
    return;
  }
  const auto& k = static_cast<const OpenClKernel&>(kernel);
  KILN_ASSERT(buffers.size() == kernel.body().inputs().size() + 1,
              "opencl launch: wrong number of buffers");
  KILN_ASSERT(dims.size() == kernel.dims().size(), "opencl launch: wrong number of dims");
  cl_uint arg = 0;
  for (void* b : buffers) {
    const Resolved r = resolve(b);
    const cl_long offset = static_cast<cl_long>(r.offset);
    check(clSetKernelArg(k.get(), arg++, sizeof(cl_mem), &r.buffer), "clSetKernelArg");
    check(clSetKernelArg(k.get(), arg++, sizeof(cl_long), &offset), "clSetKernelArg");
  }
  for (long long d : dims) {
    const cl_long v = d;
    check(clSetKernelArg(k.get(), arg++, sizeof(cl_long), &v), "clSetKernelArg");
  }
  const long long groups = k.groups()(dims);
  const std::size_t local = static_cast<std::size_t>(k.source().schedule.block);
  const std::size_t global = static_cast<std::size_t>(groups) * local;
  check(clEnqueueNDRangeKernel(context_.queue(), k.get(), 1, nullptr, &global, &local, 0, nullptr,
                               nullptr),
        "clEnqueueNDRangeKernel");
}

void OpenClDevice::call(const runtime::LibraryCall& call, const std::vector<void*>&,
                        const graph::DimValues&) {
  throw support::UserError("opencl: no library op " + call.op + " (kernels are generated)");
}

void OpenClDevice::synchronize() { check(clFinish(context_.queue()), "clFinish"); }

}  // namespace kiln::targets::opencl
