// The CPU target; see target.hpp.
#include "targets/cpu/target.hpp"

#include <algorithm>
#include <cstdlib>

#include "support/diagnostic.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/gemm.hpp"
#include "targets/cpu/jit.hpp"
#include "targets/cpu/quantized_gemm.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/host_device.hpp"
#include "targets/rule_folder.hpp"

#ifndef KILN_CPU_RULES_DIR
#define KILN_CPU_RULES_DIR "targets/cpu/rules"
#endif

namespace kiln::targets {

namespace {

using graph::DType;

class CpuKernel final : public runtime::Kernel {
 public:
  CpuKernel(graph::Body body, cpu::KernelFn fn) : Kernel(std::move(body)), fn_(fn) {}
  cpu::KernelFn fn() const { return fn_; }

 private:
  cpu::KernelFn fn_;
};

class CpuDevice final : public HostDevice {
 public:
  void launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
              const std::vector<long long>& dims) override {
    KILN_ASSERT(buffers.size() == kernel.body().inputs().size() + 1,
                "cpu launch: wrong number of buffers");
    KILN_ASSERT(dims.size() == kernel.dims().size(), "cpu launch: wrong number of dims");
    static_cast<const CpuKernel&>(kernel).fn()(buffers.data(), dims.data());
  }
  void call(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
            const graph::DimValues& dims) override {
    if (cpu::quantized_gemm_supported(call)) {
      cpu::quantized_gemm_cpu(call, buffers, dims);
      return;
    }
    if (!cpu::gemm_supported(call)) {
      throw support::UserError("cpu: no library op " + call.op + " for " +
                               std::string(graph::dtype_name(call.dtype)));
    }
    cpu::gemm_cpu(call, buffers, dims);
  }
};

class CpuTarget final : public runtime::Target {
 public:
  explicit CpuTarget(const std::filesystem::path& cache_root) : jit_(cache_root) {
    capabilities_.dtypes = {DType::F32, DType::F16, DType::BF16, DType::F64,
                            DType::I32, DType::I64, DType::Bool, DType::U8};
    capabilities_.library_ops = {"gemm", "gemm-q8_0", "gemm-q4_0", "gemm-q4_1"};
    cpu::load_thread_pool(jit_);
  }
  std::string name() const override { return "cpu"; }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  // targets/cpu/rules/*.egg in name order ($KILN_CPU_RULES_DIR overrides the folder), then
  // the shared bias and ReLU epilogue (gemm.cpp runs it).
  std::vector<std::filesystem::path> rule_files() const override {
    std::vector<std::filesystem::path> files = rule_files_in("KILN_CPU_RULES_DIR", KILN_CPU_RULES_DIR);
    files.push_back(shared_rule_file("gemm_epilogue.egg"));
    return files;
  }
  bool supports(const graph::Body&) const override { return true; }
  bool supports(const runtime::LibraryCall& call) const override {
    return cpu::gemm_supported(call) || cpu::quantized_gemm_supported(call);
  }
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override {
    std::vector<cpu::KernelSource> sources;
    for (const graph::Body& body : bodies) sources.push_back(cpu::render_kernel(body));
    std::vector<cpu::CompiledKernel> compiled = jit_.compile(sources);
    std::vector<runtime::Prepared> out;
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      if (compiled[i].fn) {
        out.push_back({std::make_shared<CpuKernel>(bodies[i], compiled[i].fn), ""});
      } else {
        out.push_back({nullptr, compiled[i].error});
      }
    }
    return out;
  }
  runtime::Device& device() override { return device_; }
  std::string fingerprint() const override { return "cpu;" + jit_.identity(); }
  int set_threads(int threads) override { return cpu::set_threads(threads); }
  int threads() const override { return cpu::threads_in_use(); }

 private:
  runtime::Capabilities capabilities_;
  cpu::JitCompiler jit_;
  CpuDevice device_;
};

}  // namespace

std::unique_ptr<runtime::Target> make_cpu_target(const std::filesystem::path& cache_root) {
  return std::make_unique<CpuTarget>(cache_root);
}

}  // namespace kiln::targets
