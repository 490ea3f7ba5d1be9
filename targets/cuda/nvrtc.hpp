// CUDA C++ -> cubin in process with NVRTC (needs no GPU or driver), cached on disk by the hash
// of the source, the options and NVRTC's version; with ptxas's resource report (registers,
// spills) per kernel, parsed from the compile log.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::targets::cuda {

struct KernelResources {
  std::string name;
  int registers = -1;
  long long stack_bytes = 0;
  long long spill_stores = 0;
  long long spill_loads = 0;
};

struct Cubin {
  std::string image;  // the cubin; empty when the source did not compile
  std::string log;    // NVRTC's log (errors, or ptxas's report)
  std::vector<KernelResources> resources;
  bool from_cache = false;
};

// The entry functions of a ptxas verbose report, in order of appearance.
std::vector<KernelResources> parse_ptxas_report(const std::string& log);

class NvrtcCompiler {
 public:
  // `arch`: a real architecture ("sm_90"). `cache_root` empty: support::default_cache_root().
  explicit NvrtcCompiler(std::string arch = "sm_90", std::filesystem::path cache_root = {});
  // Compiles one translation unit.
  Cubin compile(const std::string& source) const;
  // Compiles many translation units on up to `threads` threads (0: one per core); one result
  // per source, in order.
  std::vector<Cubin> compile_all(const std::vector<std::string>& sources, unsigned threads = 0) const;
  // "nvrtc 13.0 sm_90 <options>": what besides the source decides the code.
  const std::string& identity() const { return identity_; }
  const std::string& arch() const { return arch_; }

 private:
  std::string arch_;
  std::vector<std::string> options_;
  std::string identity_;
  std::filesystem::path dir_;
};

}  // namespace kiln::targets::cuda
