// An OpenCL context on the first device the ICD loader offers (a GPU if there is one, else
// any device: PoCL's CPU device in CI), its in-order queue, and program builds.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <memory>
#include <string>
#include <vector>

namespace kiln::targets::opencl {

// The text of an OpenCL status code ("CL_OUT_OF_RESOURCES (-5)").
std::string status_text(cl_int status);

// Throws a support::InternalError naming `what` when `status` is not CL_SUCCESS.
void check(cl_int status, const char* what);

class Program {
 public:
  explicit Program(cl_program program) : program_(program) {}
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  cl_program get() const { return program_; }

 private:
  cl_program program_;
};

class Context {
 public:
  // Opens the device; on failure `available()` is false and `unavailable_reason()` says why.
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool available() const { return queue_ != nullptr; }
  const std::string& unavailable_reason() const { return reason_; }
  // "platform / device / driver version", for fingerprints and reports.
  const std::string& description() const { return description_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  cl_device_id device() const { return device_; }

  // Builds `source`; null and `log` set when it does not compile.
  std::shared_ptr<Program> build(const std::string& source, std::string& log) const;

 private:
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string description_;
  std::string reason_;
};

}  // namespace kiln::targets::opencl
