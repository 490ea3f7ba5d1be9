// The CUDA target; see target.hpp.
#include "targets/cuda/target.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "support/diagnostic.hpp"
#include "targets/cuda/cuda_target.hpp"
#include "targets/gpu/codegen_version.hpp"
#include "targets/gpu/render.hpp"
#include "targets/gpu/tuned_kernel.hpp"
#include "targets/rule_folder.hpp"

namespace kiln::targets {

namespace cuda {

namespace {

using graph::DType;

// Kernels per NVRTC translation unit: units compile in parallel, and a unit that fails to
// compile takes only its own kernels with it.
constexpr std::size_t kKernelsPerUnit = 24;

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
  capabilities_.library_ops = {"gemm"};
  capabilities_.host_memory = false;
  capabilities_.survives_fork = false;
  if (reason_.empty()) device_.open();
}

std::vector<std::filesystem::path> CudaTarget::rule_files() const {
  // The shared epilogue matches only products that have a Gemm, which this folder's gemm.egg
  // gives: with the folder overridden to none, kernels only.
  std::vector<std::filesystem::path> files = rule_files_in("KILN_CUDA_RULES_DIR", KILN_CUDA_RULES_DIR);
  files.push_back(shared_rule_file("gemm_epilogue.egg"));
  return files;
}

bool CudaTarget::supports(const runtime::LibraryCall& call) const {
  return reason_.empty() && blas_supports(call) && load_blas().empty();
}

std::string CudaTarget::fingerprint() const {
  return "cuda;" + compiler_.identity() + ";codegen=" + gpu::kCodegenVersion;
}

std::vector<runtime::Prepared> CudaTarget::prepare(const std::vector<graph::Body>& bodies) {
  // Each body under a few schedules, the fastest picked on the device (tuned_kernel.hpp).
  return gpu::prepare_tuned(bodies, [this](const std::vector<graph::Body>& b,
                                           const std::vector<gpu::Schedule>& s) {
    return prepare(b, s);
  });
}

std::vector<runtime::Prepared> CudaTarget::prepare(const std::vector<graph::Body>& bodies,
                                                   const std::vector<gpu::Schedule>& schedules,
                                                   std::vector<Cubin>* cubins) {
  KILN_ASSERT(bodies.size() == schedules.size(), "cuda prepare: one schedule per body");
  std::vector<runtime::Prepared> out(bodies.size());
  std::vector<gpu::KernelSource> sources(bodies.size());
  std::map<std::string, std::size_t> first_of;  // kernel name -> first body index
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const std::string problem = gpu::schedule_problem(bodies[i], schedules[i]);
    if (!problem.empty()) {
      out[i].error = "cuda: schedule " + gpu::schedule_tag(schedules[i]) + ": " + problem;
      continue;
    }
    sources[i] = gpu::render_gpu_kernel(bodies[i], schedules[i], dialect_);
    if (first_of.emplace(sources[i].name, i).second) unique.push_back(i);
  }
  if (unique.empty()) return out;
  // Translation units of kKernelsPerUnit kernels, compiled in parallel.
  const std::string prelude = gpu::gpu_prelude(dialect_);
  std::vector<std::string> units;
  std::vector<std::size_t> unit_of(bodies.size(), 0);
  for (std::size_t u = 0; u * kKernelsPerUnit < unique.size(); ++u) {
    std::string text = prelude;
    for (std::size_t j = u * kKernelsPerUnit; j < std::min(unique.size(), (u + 1) * kKernelsPerUnit); ++j) {
      text += "\n" + sources[unique[j]].code;
      unit_of[unique[j]] = u;
    }
    units.push_back(std::move(text));
  }
  std::vector<Cubin> compiled = compiler_.compile_all(units);
  std::vector<std::shared_ptr<Library>> libraries(units.size());
  std::vector<std::string> errors(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (compiled[u].image.empty()) {
      errors[u] = "cuda: the batch does not compile:\n" + compiled[u].log;
    } else if (!reason_.empty()) {
      errors[u] = "cuda: " + reason_;
    } else {
      cudaLibrary_t handle = nullptr;
      const cudaError_t e = cudaLibraryLoadData(&handle, compiled[u].image.data(), nullptr,
                                                nullptr, 0, nullptr, nullptr, 0);
      if (e == cudaSuccess) {
        libraries[u] = std::make_shared<Library>(handle);
      } else {
        errors[u] = "cuda: cudaLibraryLoadData: " + error_text(e);
      }
    }
  }
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (sources[i].name.empty()) continue;
    const std::size_t first = first_of.at(sources[i].name);
    if (first != i) {  // an equal body and schedule
      out[i] = out[first];
      continue;
    }
    const std::size_t u = unit_of[i];
    if (!libraries[u]) {
      out[i].error = errors[u];
      continue;
    }
    cudaKernel_t k = nullptr;
    const cudaError_t e = cudaLibraryGetKernel(&k, libraries[u]->get(), sources[i].name.c_str());
    if (e == cudaSuccess) {
      out[i].kernel = std::make_shared<CudaKernel>(bodies[i], libraries[u], k, sources[i]);
    } else {
      out[i].error = "cuda: cudaLibraryGetKernel " + sources[i].name + ": " + error_text(e);
    }
  }
  if (cubins) *cubins = std::move(compiled);
  return out;
}

}  // namespace cuda

std::unique_ptr<runtime::Target> make_cuda_target() {
  return std::make_unique<cuda::CudaTarget>();
}

}  // namespace kiln::targets
