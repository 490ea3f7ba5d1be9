// The CPU kernel compiler and its on-disk cache; see jit.hpp.
//
// Cache layout, under <root>/cpu/<hash of identity(): compiler version, flags, codegen version>/:
//   <symbol>.ref       the name of the shared object that holds the kernel
//   batch-<hash>.cpp   a translation unit (kept for reading and debugging)
//   batch-<hash>.so    its shared object
// Files are written under a temporary name and renamed, so a crash never leaves a half file.
#include "targets/cpu/jit.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/cache_files.hpp"
#include "support/diagnostic.hpp"
#include "support/hash.hpp"
#include "targets/cpu/codegen_version.hpp"
#include "targets/cpu/threads.hpp"

namespace kiln::targets::cpu {

namespace fs = std::filesystem;

namespace {

std::string hex64(std::uint64_t v) {
  char buffer[20];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(v));
  return buffer;
}

// Runs a shell command; returns its exit status and fills `output` with stdout and stderr.
int run_command(const std::string& command, std::string& output) {
  output.clear();
  const ProcessCpusScope unconfined;  // the compiler runs on any of the process's CPUs
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  return ::pclose(pipe);
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }



// The first lines of a compiler log: enough to see the error, short enough to print.
std::string head(const std::string& log, std::size_t lines = 12) {
  std::istringstream in(log);
  std::string line, out;
  for (std::size_t i = 0; i < lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

}  // namespace

const char* JitCompiler::flags() {
  return "-std=c++17 -O3 -march=native -fPIC -shared -fopenmp -fno-math-errno -fno-trapping-math -w";
}

JitCompiler::JitCompiler(fs::path cache_root) {
  // The kernels load the OpenMP runtime, which reads its wait policy once, when loaded. An
  // idle thread spins for about 0.1-0.3 ms (GOMP_SPINCOUNT 10000 on this 2-core machine) and
  // then sleeps, unless the user chose otherwise. Waking a sleeping thread costs 50-130 us
  // here (a kernel of 300 us on 2 threads paid it at every step: `kiln compile mlp --dim
  // batch=64 --threads 2`, median of 200, 0.84-0.98 ms passive against 0.53-0.58 ms with the
  // bounded spin, 0.88 ms on 1 thread), while the gap between two parallel steps of a program
  // is a few microseconds; threads spinning without bound (libgomp's default) starve other
  // processes on a busy machine. libgomp takes GOMP_SPINCOUNT over the policy, so both are
  // left alone when either is set.
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) {
    ::setenv("GOMP_SPINCOUNT", "10000", 0);
  }
  const char* cxx = std::getenv("KILN_CXX");
  compiler_ = cxx && *cxx ? cxx : "g++";
  std::string version;
  if (run_command(compiler_ + " --version", version) != 0) {
    throw support::UserError("cannot run the C++ compiler '" + compiler_ +
                             "' (set KILN_CXX): " + head(version, 3));
  }
  // A kernel's symbol hashes its Body, not its source: what turns the one into the other (the
  // compiler, its flags, the code generator) keys the folder.
  identity_ = "compiler=" + head(version, 1) + ";flags=" + flags() + ";codegen=" + kCodegenVersion;
  std::erase(identity_, '\n');
  dir_ = (cache_root.empty() ? support::default_cache_root() : cache_root) / "cpu" /
         hex64(support::hash64(identity_));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw support::UserError("cannot create the kernel cache " + dir_.string());
}

// Loaded kernels stay loaded (RTLD_NODELETE): they bring in the OpenMP runtime, whose worker
// threads outlive any one compiler object, and unloading it under them crashes the process.
JitCompiler::~JitCompiler() = default;

KernelFn JitCompiler::load(const std::string& symbol, std::string& error) {
  std::ifstream ref(dir_ / (symbol + ".ref"));
  std::string library;
  if (!(ref >> library)) {
    error = "not in the cache";
    return nullptr;
  }
  const fs::path path = dir_ / library;
  void*& handle = libraries_[path.string()];
  if (!handle) handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    libraries_.erase(path.string());
    error = std::string("dlopen failed: ") + ::dlerror();
    return nullptr;
  }
  void* fn = ::dlsym(handle, symbol.c_str());
  if (!fn) {
    error = "symbol " + symbol + " missing from " + path.string();
    return nullptr;
  }
  return reinterpret_cast<KernelFn>(fn);
}

bool JitCompiler::build(const std::vector<const KernelSource*>& sources, std::string& log) {
  std::string unit = cpu_prelude();
  for (const KernelSource* s : sources) unit += "\n" + s->code;
  const std::string name = "batch-" + hex64(support::hash64(unit));
  const fs::path cpp = dir_ / (name + ".cpp");
  const fs::path so = dir_ / (name + ".so");
  support::write_file_atomically(cpp, unit);
  fs::path tmp = so;
  tmp += ".tmp" + std::to_string(::getpid());
  const auto start = std::chrono::steady_clock::now();
  const int status = run_command(compiler_ + " " + flags() + " -o " + quoted(tmp) + " " +
                                     quoted(cpp),
                                 log);
  stats_.compile_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++stats_.compiler_runs;
  if (status != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return false;
  }
  fs::rename(tmp, so);
  for (const KernelSource* s : sources) support::write_file_atomically(dir_ / (s->symbol + ".ref"), so.filename().string() + "\n");
  stats_.kernels_compiled += sources.size();
  return true;
}

std::vector<CompiledKernel> JitCompiler::compile(const std::vector<KernelSource>& sources) {
  std::vector<CompiledKernel> out(sources.size());
  std::vector<std::size_t> missing;
  std::map<std::string, std::size_t> first;  // one compile per distinct symbol
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string error;
    out[i].fn = load(sources[i].symbol, error);
    if (out[i].fn) {
      ++stats_.cache_hits;
    } else if (first.emplace(sources[i].symbol, i).second) {
      missing.push_back(i);
    }
  }
  if (!missing.empty()) {
    std::vector<const KernelSource*> batch;
    for (std::size_t i : missing) batch.push_back(&sources[i]);
    std::string log;
    if (!build(batch, log)) {
      // Isolate the broken kernels: compile each alone.
      for (std::size_t i : missing) {
        std::string single_log;
        if (!build({&sources[i]}, single_log)) {
          out[i].error = "the C++ compiler rejected kernel " + sources[i].symbol + ":\n" +
                         head(single_log);
        }
      }
    }
    for (std::size_t i : missing) {
      if (!out[i].error.empty()) continue;
      std::string error;
      out[i].fn = load(sources[i].symbol, error);
      if (!out[i].fn) out[i].error = error;
    }
  }
  // Duplicates of a symbol share the first one's result.
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::size_t j = first.count(sources[i].symbol) ? first[sources[i].symbol] : i;
    if (!out[i].fn && j != i) out[i] = out[j];
  }
  return out;
}

}  // namespace kiln::targets::cpu
