// The OpenCL target; see target.hpp.
#include "targets/opencl/target.hpp"

#include <map>

#include "support/diagnostic.hpp"
#include "targets/gpu/codegen_version.hpp"
#include "targets/gpu/render.hpp"
#include "targets/gpu/tuned_kernel.hpp"
#include "targets/opencl/opencl_target.hpp"

namespace kiln::targets {

namespace opencl {

using graph::DType;

OpenClTarget::OpenClTarget() : device_(context_) {
  capabilities_.host_memory = false;
  capabilities_.survives_fork = false;
  if (!context_.available()) return;
  std::size_t size = 0;
  clGetDeviceInfo(context_.device(), CL_DEVICE_EXTENSIONS, 0, nullptr, &size);
  std::string extensions(size, '\0');
  clGetDeviceInfo(context_.device(), CL_DEVICE_EXTENSIONS, size, extensions.data(), nullptr);
  has_f64_ = extensions.find("cl_khr_fp64") != std::string::npos;
  capabilities_.dtypes = {DType::F32, DType::F16, DType::BF16, DType::I32,
                          DType::I64, DType::Bool, DType::U8};
  if (has_f64_) capabilities_.dtypes.push_back(DType::F64);
}

bool OpenClTarget::supports(const graph::Body& body) const {
  if (!context_.available()) return false;
  // Float-to-integer casts saturate through double.
  if (has_f64_) return true;
  for (const graph::Scalar& s : body.scalars()) {
    if (s.dtype == DType::F64 || s.op == graph::ScalarOp::Cast) return false;
  }
  for (DType t : body.inputs()) {
    if (t == DType::F64) return false;
  }
  return true;
}

std::string OpenClTarget::fingerprint() const {
  return "opencl;" + context_.description() + ";codegen=" + gpu::kCodegenVersion;
}

std::vector<runtime::Prepared> OpenClTarget::prepare(const std::vector<graph::Body>& bodies) {
  // Each body under a few schedules, the fastest picked on the device (tuned_kernel.hpp).
  return gpu::prepare_tuned(bodies, [this](const std::vector<graph::Body>& b,
                                           const std::vector<gpu::Schedule>& s) {
    return prepare(b, s);
  });
}

std::vector<runtime::Prepared> OpenClTarget::prepare(const std::vector<graph::Body>& bodies,
                                                     const std::vector<gpu::Schedule>& schedules) {
  KILN_ASSERT(bodies.size() == schedules.size(), "opencl prepare: one schedule per body");
  std::vector<runtime::Prepared> out(bodies.size());
  if (!context_.available()) {
    for (auto& p : out) p.error = "opencl: " + context_.unavailable_reason();
    return out;
  }
  // Render; equal kernels (same body and schedule) are compiled once.
  std::vector<gpu::KernelSource> sources(bodies.size());
  std::map<std::string, std::size_t> first_of;  // kernel name -> first body index
  std::string program_text = gpu::gpu_prelude(dialect_);
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!supports(bodies[i])) {
      out[i].error = "opencl: the device has no double precision (cl_khr_fp64)";
      continue;
    }
    const std::string problem = gpu::schedule_problem(bodies[i], schedules[i]);
    if (!problem.empty()) {
      out[i].error = "opencl: schedule " + gpu::schedule_tag(schedules[i]) + ": " + problem;
      continue;
    }
    sources[i] = gpu::render_gpu_kernel(bodies[i], schedules[i], dialect_);
    if (first_of.emplace(sources[i].name, i).second) {
      unique.push_back(i);
      program_text += "\n" + sources[i].code;
    }
  }
  if (unique.empty()) return out;
  auto make = [&](const std::shared_ptr<Program>& program, std::size_t i) {
    cl_int status = CL_SUCCESS;
    cl_kernel k = clCreateKernel(program->get(), sources[i].name.c_str(), &status);
    if (status != CL_SUCCESS) {
      out[i].error = "opencl: clCreateKernel " + sources[i].name + ": " + status_text(status);
      return;
    }
    out[i].kernel = std::make_shared<OpenClKernel>(bodies[i], program, k, sources[i]);
  };
  std::string log;
  std::shared_ptr<Program> program = context_.build(program_text, log);
  for (std::size_t i : unique) {
    if (program) {
      make(program, i);
      continue;
    }
    std::string own_log;
    auto alone = context_.build(gpu::gpu_prelude(dialect_) + sources[i].code, own_log);
    if (alone) {
      make(alone, i);
    } else {
      out[i].error = "opencl: " + sources[i].name + " does not compile:\n" + own_log;
    }
  }
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (out[i].kernel || !out[i].error.empty() || sources[i].name.empty()) continue;
    const std::size_t first = first_of.at(sources[i].name);  // an equal body and schedule
    out[i] = out[first];
  }
  return out;
}

}  // namespace opencl

std::unique_ptr<runtime::Target> make_opencl_target() {
  return std::make_unique<opencl::OpenClTarget>();
}

}  // namespace kiln::targets
