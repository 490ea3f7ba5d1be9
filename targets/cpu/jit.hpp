// Compiles CPU kernel sources into shared objects and loads them (DESIGN §6).
//
// Many kernels go into one translation unit and one `g++ -O3 -march=native -shared -fPIC`
// run, since the compiler's start-up dominates small kernels. Results live in an on-disk
// cache keyed by each kernel's symbol (the hash of its Body) under a folder keyed by the
// compiler's version, its flags and the code generator's version (a hash of its sources): a
// kernel is never compiled twice, and a changed code generator never loads old kernels. A source that
// fails to compile is isolated (the batch is retried kernel by kernel) and rejected with the
// compiler's message; the other kernels of the batch still load.
//
// Thread safety: one JitCompiler per thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "targets/cpu/codegen.hpp"

namespace kiln::targets::cpu {

// The kernel ABI (codegen.hpp).
using KernelFn = void (*)(void* const* buffers, const long long* dims);

struct CompiledKernel {
  KernelFn fn = nullptr;  // null when rejected
  std::string error;      // why it was rejected
};

struct JitStats {
  std::size_t kernels_compiled = 0;  // kernels that went through the compiler
  std::size_t cache_hits = 0;        // kernels loaded from the cache
  std::size_t compiler_runs = 0;     // processes started
  double compile_seconds = 0.0;
};

class JitCompiler {
 public:
  // `cache_root` empty: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
  // $KILN_CXX overrides the compiler (default g++).
  explicit JitCompiler(std::filesystem::path cache_root = {});
  ~JitCompiler();
  JitCompiler(const JitCompiler&) = delete;
  JitCompiler& operator=(const JitCompiler&) = delete;

  // One result per source, in order. Cached kernels load without compiling.
  std::vector<CompiledKernel> compile(const std::vector<KernelSource>& sources);

  const JitStats& stats() const { return stats_; }
  const std::filesystem::path& cache_dir() const { return dir_; }
  // What decides the code and so the speed of a kernel besides its Body, as one line:
  // "compiler=<first line of --version>;flags=...;codegen=<hash>".
  const std::string& identity() const { return identity_; }
  static const char* flags();

 private:
  // Compiles `sources` into one shared object; returns the compiler's output on failure.
  bool build(const std::vector<const KernelSource*>& sources, std::string& log);
  KernelFn load(const std::string& symbol, std::string& error);

  std::filesystem::path dir_;
  std::string identity_;
  std::string compiler_;
  std::map<std::string, void*> libraries_;  // shared object path -> dlopen handle
  JitStats stats_;
};

}  // namespace kiln::targets::cpu
