// The OpenCL target's class, for tests that run Bodies under chosen schedules.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/target.hpp"
#include "targets/gpu/schedule.hpp"
#include "targets/opencl/context.hpp"
#include "targets/opencl/device.hpp"
#include "targets/opencl/dialect.hpp"

namespace kiln::targets::opencl {

class OpenClTarget final : public runtime::Target {
 public:
  OpenClTarget();
  std::string name() const override { return "opencl"; }
  std::string unavailable() const override { return context_.unavailable_reason(); }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  bool supports(const graph::Body& body) const override;
  bool supports(const runtime::LibraryCall&) const override { return false; }
  // Each body under gpu::default_schedule.
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override;
  // Body i under schedules[i]: one program for the batch; when it does not build, each kernel
  // alone, so that one bad kernel names its own error.
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies,
                                         const std::vector<gpu::Schedule>& schedules);
  runtime::Device& device() override { return device_; }
  std::string fingerprint() const override;

 private:
  Context context_;
  OpenClDialect dialect_;
  runtime::Capabilities capabilities_;
  OpenClDevice device_;
  bool has_f64_ = false;
};

}  // namespace kiln::targets::opencl
