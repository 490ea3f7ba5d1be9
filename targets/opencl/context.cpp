// The OpenCL context; see context.hpp.
#include "targets/opencl/context.hpp"

#include "support/diagnostic.hpp"

namespace kiln::targets::opencl {

namespace {

std::string device_string(cl_device_id device, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  clGetDeviceInfo(device, what, size, text.data(), nullptr);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string platform_string(cl_platform_id platform, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  clGetPlatformInfo(platform, what, size, text.data(), nullptr);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

}  // namespace

std::string status_text(cl_int status) {
  switch (status) {
    case CL_SUCCESS: return "CL_SUCCESS (0)";
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND (-1)";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES (-5)";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY (-6)";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE (-11)";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE (-30)";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS (-52)";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE (-54)";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (-1001)";
    default: return "OpenCL status " + std::to_string(status);
  }
}

void check(cl_int status, const char* what) {
  KILN_ASSERT(status == CL_SUCCESS, std::string("opencl: ") + what + " failed: " +
                                        status_text(status));
}

Program::~Program() { clReleaseProgram(program_); }

Context::Context() {
  cl_uint platforms = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &platforms);
  if (status != CL_SUCCESS || platforms == 0) {
    reason_ = "no OpenCL platform (" + status_text(status) + "; is an ICD such as pocl installed?)";
    return;
  }
  std::vector<cl_platform_id> ids(platforms);
  clGetPlatformIDs(platforms, ids.data(), nullptr);
  // A GPU first, else any device, in the loader's platform order.
  cl_platform_id chosen = nullptr;
  for (cl_device_type type : {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}}) {
    for (cl_platform_id p : ids) {
      if (clGetDeviceIDs(p, type, 1, &device_, nullptr) == CL_SUCCESS) {
        chosen = p;
        break;
      }
    }
    if (chosen) break;
  }
  if (!chosen) {
    reason_ = "no OpenCL device on " + std::to_string(platforms) + " platform(s)";
    return;
  }
  context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) {
    reason_ = "clCreateContext failed: " + status_text(status);
    context_ = nullptr;
    return;
  }
  queue_ = clCreateCommandQueue(context_, device_, 0, &status);
  if (status != CL_SUCCESS) {
    reason_ = "clCreateCommandQueue failed: " + status_text(status);
    queue_ = nullptr;
    return;
  }
  description_ = platform_string(chosen, CL_PLATFORM_NAME) + " / " +
                 device_string(device_, CL_DEVICE_NAME) + " / " +
                 device_string(device_, CL_DRIVER_VERSION);
}

Context::~Context() {
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

std::shared_ptr<Program> Context::build(const std::string& source, std::string& log) const {
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &text, &length, &status);
  check(status, "clCreateProgramWithSource");
  auto owned = std::make_shared<Program>(program);
  status = clBuildProgram(program, 1, &device_, "-cl-std=CL1.2", nullptr, nullptr);
  if (status == CL_SUCCESS) return owned;
  std::size_t size = 0;
  clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  log.assign(size, '\0');
  clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (log.empty()) log = status_text(status);
  return nullptr;
}

}  // namespace kiln::targets::opencl
