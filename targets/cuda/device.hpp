// The CUDA device through the CUDA runtime API (cudart; no driver library is linked): device
// memory, copies (synchronous and queued) and launches on one stream, kernels loaded from cubins
// with cudaLibrary*, the gemm library op on cuBLAS / cuBLASLt (blas.hpp) on the same stream,
// device-side timing by events, and capture of queued work into CUDA graphs for replay.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>

#include "runtime/target.hpp"
#include "targets/cuda/blas.hpp"
#include "targets/gpu/launch.hpp"
#include "targets/gpu/render.hpp"

namespace kiln::targets::cuda {

// The text of a CUDA runtime error ("cudaErrorInsufficientDriver: CUDA driver version is
// insufficient for CUDA runtime version").
std::string error_text(cudaError_t error);

// A loaded cubin, unloaded when the last kernel from it goes.
class Library {
 public:
  explicit Library(cudaLibrary_t library) : library_(library) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  cudaLibrary_t get() const { return library_; }

 private:
  cudaLibrary_t library_;
};

class CudaKernel final : public runtime::Kernel {
 public:
  CudaKernel(graph::Body body, std::shared_ptr<Library> library, cudaKernel_t kernel,
             gpu::KernelSource source);
  cudaKernel_t get() const { return kernel_; }
  const gpu::KernelSource& source() const { return source_; }
  const gpu::GroupCount& groups() const { return groups_; }

 private:
  std::shared_ptr<Library> library_;
  cudaKernel_t kernel_;
  gpu::KernelSource source_;
  gpu::GroupCount groups_;
};

class CudaDevice final : public runtime::Device {
 public:
  CudaDevice() = default;
  ~CudaDevice() override;
  // Creates the stream; call once the device is known to exist.
  void open();
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
  void upload_async(void* device, const void* host, std::size_t bytes) override;
  void download_async(void* host, const void* device, std::size_t bytes) override;
  // Between two CUDA events recorded on the stream.
  double time(const std::function<void()>& work) override;
  // Stream capture into a CUDA graph, instantiated; `previous` updated in place with
  // cudaGraphExecUpdate when the new graph has its topology (changed dims or buffers).
  std::unique_ptr<runtime::Recording> record(
      std::function<void()> work, std::unique_ptr<runtime::Recording> previous) override;

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;  // for time()
  std::unique_ptr<Blas> blas_;  // made with the stream; cuBLAS is opened on the first call
  std::vector<void*> args_;  // a launch's argument pointers, reused
  std::vector<void*> pointers_;
  std::vector<long long> values_;
};

}  // namespace kiln::targets::cuda
