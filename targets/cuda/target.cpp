// The CUDA target; see target.hpp.
#include "targets/cuda/target.hpp"

#include <map>

#include "support/diagnostic.hpp"
#include "targets/cuda/cuda_target.hpp"
#include "targets/gpu/codegen_version.hpp"
#include "targets/gpu/render.hpp"

namespace kiln::targets {

namespace cuda {

namespace {

using graph::DType;

// Why cudart cannot use a device here (empty if it can), and the device's architecture.
std::string probe(std::string& arch) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return "CUDA runtime: " + error_text(e);
  if (count == 0) return "no CUDA device";
  cudaDeviceProp props{};
  const cudaError_t p = cudaGetDeviceProperties(&props, 0);
  if (p != cudaSuccess) return "CUDA runtime: " + error_text(p);
  arch = "sm_" + std::to_string(props.major) + std::to_string(props.minor);
  return "";
}

std::string device_arch() {
  std::string arch = "sm_90";
  probe(arch);
  return arch;
}

}  // namespace

CudaTarget::CudaTarget() : compiler_(device_arch()) {
  std::string arch;
  reason_ = probe(arch);
  capabilities_.dtypes = {DType::F32, DType::F16, DType::BF16, DType::F64,
                          DType::I32, DType::I64, DType::Bool, DType::U8};
  capabilities_.host_memory = false;
  capabilities_.survives_fork = false;
  if (reason_.empty()) device_.open();
}

std::string CudaTarget::fingerprint() const {
  return "cuda;" + compiler_.identity() + ";codegen=" + gpu::kCodegenVersion;
}

std::vector<runtime::Prepared> CudaTarget::prepare(const std::vector<graph::Body>& bodies) {
  std::vector<gpu::Schedule> schedules;
  for (const graph::Body& body : bodies) schedules.push_back(gpu::default_schedule(body));
  return prepare(bodies, schedules);
}

std::vector<runtime::Prepared> CudaTarget::prepare(const std::vector<graph::Body>& bodies,
                                                   const std::vector<gpu::Schedule>& schedules,
                                                   Cubin* cubin) {
  KILN_ASSERT(bodies.size() == schedules.size(), "cuda prepare: one schedule per body");
  std::vector<runtime::Prepared> out(bodies.size());
  std::vector<gpu::KernelSource> sources(bodies.size());
  std::map<std::string, std::size_t> first_of;  // kernel name -> first body index
  std::string program = gpu::gpu_prelude(dialect_);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const std::string problem = gpu::schedule_problem(bodies[i], schedules[i]);
    if (!problem.empty()) {
      out[i].error = "cuda: schedule " + gpu::schedule_tag(schedules[i]) + ": " + problem;
      continue;
    }
    sources[i] = gpu::render_gpu_kernel(bodies[i], schedules[i], dialect_);
    if (first_of.emplace(sources[i].name, i).second) program += "\n" + sources[i].code;
  }
  if (first_of.empty()) return out;
  Cubin compiled = compiler_.compile(program);
  const bool ok = !compiled.image.empty();
  std::shared_ptr<Library> library;
  std::string load_error = reason_.empty() ? "" : "cuda: " + reason_;
  if (ok && reason_.empty()) {
    cudaLibrary_t handle = nullptr;
    const cudaError_t e = cudaLibraryLoadData(&handle, compiled.image.data(), nullptr, nullptr, 0,
                                              nullptr, nullptr, 0);
    if (e == cudaSuccess) {
      library = std::make_shared<Library>(handle);
    } else {
      load_error = "cuda: cudaLibraryLoadData: " + error_text(e);
    }
  }
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (sources[i].name.empty()) continue;
    if (!ok) {
      out[i].error = "cuda: the batch does not compile:\n" + compiled.log;
    } else if (!library) {
      out[i].error = load_error;
    } else {
      cudaKernel_t k = nullptr;
      const cudaError_t e = cudaLibraryGetKernel(&k, library->get(), sources[i].name.c_str());
      if (e == cudaSuccess) {
        out[i].kernel = std::make_shared<CudaKernel>(bodies[i], library, k, sources[i]);
      } else {
        out[i].error = "cuda: cudaLibraryGetKernel " + sources[i].name + ": " + error_text(e);
      }
    }
  }
  if (cubin) *cubin = std::move(compiled);
  return out;
}

}  // namespace cuda

std::unique_ptr<runtime::Target> make_cuda_target() {
  return std::make_unique<cuda::CudaTarget>();
}

}  // namespace kiln::targets
