// The CUDA target's class, for tests that compile or run Bodies under chosen schedules.
#pragma once

#include <string>
#include <vector>

#include "runtime/target.hpp"
#include "targets/cuda/device.hpp"
#include "targets/cuda/dialect.hpp"
#include "targets/cuda/nvrtc.hpp"
#include "targets/gpu/schedule.hpp"

namespace kiln::targets::cuda {

class CudaTarget final : public runtime::Target {
 public:
  CudaTarget();
  std::string name() const override { return "cuda"; }
  std::string unavailable() const override { return reason_; }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  bool supports(const graph::Body&) const override { return reason_.empty(); }
  // targets/cuda/rules/*.egg in name order ($KILN_CUDA_RULES_DIR overrides the folder).
  std::vector<std::filesystem::path> rule_files() const override;
  // A gemm cuBLAS or cuBLASLt can run, on a device, with the libraries loaded.
  bool supports(const runtime::LibraryCall& call) const override;
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override;
  // Body i under schedules[i], compiled by NVRTC in translation units of a few dozen kernels,
  // in parallel (then loaded if a device is present). `cubins`, when given, receives the
  // compiles' results.
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies,
                                         const std::vector<gpu::Schedule>& schedules,
                                         std::vector<Cubin>* cubins = nullptr);
  runtime::Device& device() override { return device_; }
  std::string fingerprint() const override;
  const NvrtcCompiler& compiler() const { return compiler_; }

 private:
  std::string reason_;
  runtime::Capabilities capabilities_;
  CudaDialect dialect_;
  NvrtcCompiler compiler_;
  CudaDevice device_;
};

}  // namespace kiln::targets::cuda
