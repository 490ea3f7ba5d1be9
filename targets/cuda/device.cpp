// The CUDA device; see device.hpp.
#include "targets/cuda/device.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"
#include "targets/gpu/tuned_kernel.hpp"

namespace kiln::targets::cuda {

namespace {

// Kernels stride over rows and elements, so the grid can be capped.
constexpr long long kMaxGroups = 1 << 20;

void check(cudaError_t error, const char* what) {
  KILN_ASSERT(error == cudaSuccess, std::string("cuda: ") + what + " failed: " + error_text(error));
}

}  // namespace

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

Library::~Library() { cudaLibraryUnload(library_); }

CudaKernel::CudaKernel(graph::Body body, std::shared_ptr<Library> library, cudaKernel_t kernel,
                       gpu::KernelSource source)
    : Kernel(std::move(body)), library_(std::move(library)), kernel_(kernel),
      source_(std::move(source)), groups_(source_.groups, source_.dims, kMaxGroups) {}

namespace {

// A CUDA graph of captured work, instantiated for launch on the device's stream.
class CudaRecording final : public runtime::Recording {
 public:
  CudaRecording(cudaGraph_t graph, cudaGraphExec_t exec, cudaStream_t stream)
      : graph_(graph), exec_(exec), stream_(stream) {}
  ~CudaRecording() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  CudaRecording(const CudaRecording&) = delete;
  CudaRecording& operator=(const CudaRecording&) = delete;
  void replay() override { check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch"); }
  // Takes `graph`'s parameters (kernel arguments, grid sizes) if its topology is this one's.
  bool update(cudaGraph_t graph) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec_, graph, &info) != cudaSuccess) {
      cudaGetLastError();  // clear the failed update's error
      return false;
    }
    cudaGraphDestroy(graph_);
    graph_ = graph;
    return true;
  }

 private:
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

}  // namespace

CudaDevice::~CudaDevice() {
  blas_.reset();
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaDevice::open() {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  blas_ = std::make_unique<Blas>(stream_);
}

void* CudaDevice::allocate(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
  if (e != cudaSuccess) {
    throw support::UserError("cuda: cannot allocate " + std::to_string(bytes) +
                             " bytes on the device: " + error_text(e));
  }
  return p;
}

void CudaDevice::release(void* buffer) {
  if (buffer) check(cudaFree(buffer), "cudaFree");
}

void CudaDevice::upload(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // `host` may go away
}

void CudaDevice::download(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaDevice::copy(void* to, const void* from, std::size_t bytes) {
  if (!bytes || to == from) return;
  const auto* a = static_cast<const char*>(to);
  const auto* b = static_cast<const char*>(from);
  if (a < b + bytes && b < a + bytes) {  // overlapping: through a temporary buffer
    void* staging = allocate(bytes);
    check(cudaMemcpyAsync(staging, from, bytes, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync");
    check(cudaMemcpyAsync(to, staging, bytes, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync");
    synchronize();
    release(staging);
    return;
  }
  check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
}

void CudaDevice::launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
                        const std::vector<long long>& dims) {
  if (const auto* tuned = dynamic_cast<const gpu::TunedKernel*>(&kernel)) {
    launch(tuned->pick(*this, buffers, dims), buffers, dims);
    return;
  }
  const auto& k = static_cast<const CudaKernel&>(kernel);
  KILN_ASSERT(buffers.size() == kernel.body().inputs().size() + 1,
              "cuda launch: wrong number of buffers");
  KILN_ASSERT(dims.size() == kernel.dims().size(), "cuda launch: wrong number of dims");
  // cudaLaunchKernel takes the address of each argument; the copies live in the device, so a
  // launch allocates nothing once the vectors have grown.
  pointers_.assign(buffers.begin(), buffers.end());
  values_.assign(dims.begin(), dims.end());
  args_.clear();
  for (void*& p : pointers_) args_.push_back(&p);
  for (long long& v : values_) args_.push_back(&v);
  const long long groups = k.groups()(dims);
  check(cudaLaunchKernel(reinterpret_cast<const void*>(k.get()),
                         dim3(static_cast<unsigned>(groups)),
                         dim3(static_cast<unsigned>(k.source().schedule.block)), args_.data(), 0,
                         stream_),
        "cudaLaunchKernel");
}

void CudaDevice::call(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
                      const graph::DimValues& dims) {
  if (call.op != "gemm") throw support::UserError("cuda: no library op " + call.op);
  KILN_ASSERT(blas_, "cuda call: the device is not open");
  blas_->gemm(call, buffers, dims);
}

void CudaDevice::upload_async(void* device, const void* host, std::size_t bytes) {
  if (!bytes) return;
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync");
}

void CudaDevice::download_async(void* host, const void* device, std::size_t bytes) {
  if (!bytes) return;
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
}

double CudaDevice::time(const std::function<void()>& work) {
  if (!start_) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  check(cudaEventRecord(start_, stream_), "cudaEventRecord");
  work();
  check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
  check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
  return ms * 1e-3;
}

std::unique_ptr<runtime::Recording> CudaDevice::record(
    std::function<void()> work, std::unique_ptr<runtime::Recording> previous) {
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);  // leave capture mode before reporting
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
  if (auto* old = dynamic_cast<CudaRecording*>(previous.get()); old && old->update(graph)) {
    return previous;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  if (e != cudaSuccess) {
    cudaGraphDestroy(graph);
    check(e, "cudaGraphInstantiate");
  }
  return std::make_unique<CudaRecording>(graph, exec, stream_);
}

void CudaDevice::synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

}  // namespace kiln::targets::cuda
