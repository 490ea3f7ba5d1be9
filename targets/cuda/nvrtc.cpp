// NVRTC compilation; see nvrtc.hpp.
#include "targets/cuda/nvrtc.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "support/cache_files.hpp"
#include "support/diagnostic.hpp"
#include "support/hash.hpp"
#include "targets/cuda/dynamic_library.hpp"

#ifndef KILN_CUDA_INCLUDE_DIR
#define KILN_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace kiln::targets::cuda {

namespace fs = std::filesystem;

namespace {

// NVRTC's functions, from the library opened at the first compiler made (dynamic_library.hpp).
struct Nvrtc {
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
};

// Throws a UserError naming the library and the missing piece when NVRTC cannot be loaded.
const Nvrtc& nvrtc() {
  static Nvrtc functions;
  static std::string load_error;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string error;
    void* library = open_library(KILN_NVRTC_PATH, KILN_NVRTC_SONAME, error);
    Nvrtc& f = functions;
    const bool ok = library && resolve(library, "nvrtcVersion", f.version, error) &&
                    resolve(library, "nvrtcGetErrorString", f.error_string, error) &&
                    resolve(library, "nvrtcCreateProgram", f.create, error) &&
                    resolve(library, "nvrtcCompileProgram", f.compile, error) &&
                    resolve(library, "nvrtcGetProgramLogSize", f.log_size, error) &&
                    resolve(library, "nvrtcGetProgramLog", f.log, error) &&
                    resolve(library, "nvrtcGetCUBINSize", f.cubin_size, error) &&
                    resolve(library, "nvrtcGetCUBIN", f.cubin, error) &&
                    resolve(library, "nvrtcDestroyProgram", f.destroy, error);
    if (!ok) load_error = "cuda: cannot load NVRTC: " + error;
  });
  if (!load_error.empty()) throw support::UserError(load_error);
  return functions;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<KernelResources> parse_ptxas_report(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([A-Za-z0-9_]+)')");
  static const std::regex used(R"(Used ([0-9]+) registers)");
  static const std::regex frame(
      R"(([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  std::vector<KernelResources> out;
  std::istringstream lines(log);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({m[1].str()});
    } else if (!out.empty() && std::regex_search(line, m, used)) {
      out.back().registers = std::stoi(m[1].str());
    } else if (!out.empty() && std::regex_search(line, m, frame)) {
      out.back().stack_bytes = std::stoll(m[1].str());
      out.back().spill_stores = std::stoll(m[2].str());
      out.back().spill_loads = std::stoll(m[3].str());
    }
  }
  return out;
}

NvrtcCompiler::NvrtcCompiler(std::string arch, fs::path cache_root) : arch_(std::move(arch)) {
  options_ = {"--gpu-architecture=" + arch_, "--std=c++17", "-I" KILN_CUDA_INCLUDE_DIR,
              "--ptxas-options=-v"};
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  identity_ = "nvrtc " + std::to_string(major) + "." + std::to_string(minor);
  for (const std::string& o : options_) identity_ += " " + o;
  if (cache_root.empty()) cache_root = support::default_cache_root();
  const support::Hash128 h = support::hash128(identity_.data(), identity_.size());
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h.low));
  dir_ = cache_root / "cuda" / hex;
}

Cubin NvrtcCompiler::compile(const std::string& source) const {
  const support::Hash128 key = support::hash128(source.data(), source.size());
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(key.high),
                static_cast<unsigned long long>(key.low));
  const fs::path cubin_path = dir_ / (std::string(hex) + ".cubin");
  const fs::path log_path = dir_ / (std::string(hex) + ".log");
  Cubin out;
  std::error_code ec;
  if (fs::exists(cubin_path, ec) && fs::exists(log_path, ec)) {
    out.image = read_file(cubin_path);
    out.log = read_file(log_path);
    out.resources = parse_ptxas_report(out.log);
    out.from_cache = !out.image.empty();
    if (out.from_cache) return out;
  }
  const Nvrtc& f = nvrtc();
  nvrtcProgram program = nullptr;
  nvrtcResult status = f.create(&program, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr);
  KILN_ASSERT(status == NVRTC_SUCCESS,
              std::string("nvrtcCreateProgram failed: ") + f.error_string(status));
  std::vector<const char*> options;
  for (const std::string& o : options_) options.push_back(o.c_str());
  status = f.compile(program, static_cast<int>(options.size()), options.data());
  std::size_t log_size = 0;
  f.log_size(program, &log_size);
  out.log.assign(log_size, '\0');
  if (log_size) f.log(program, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (status == NVRTC_SUCCESS) {
    std::size_t size = 0;
    f.cubin_size(program, &size);
    out.image.assign(size, '\0');
    f.cubin(program, out.image.data());
  } else if (out.log.empty()) {
    out.log = f.error_string(status);
  }
  f.destroy(&program);
  out.resources = parse_ptxas_report(out.log);
  if (!out.image.empty()) {
    fs::create_directories(dir_, ec);
    support::write_file_atomically(log_path, out.log);
    support::write_file_atomically(cubin_path, out.image);
  }
  return out;
}

}  // namespace kiln::targets::cuda

namespace kiln::targets::cuda {

std::vector<Cubin> NvrtcCompiler::compile_all(const std::vector<std::string>& sources,
                                              unsigned threads) const {
  std::vector<Cubin> out(sources.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(sources.size()));
  std::atomic<std::size_t> next{0};
  std::vector<std::string> failures(threads);
  auto work = [&](unsigned worker) {
    try {
      for (std::size_t i = next++; i < sources.size(); i = next++) out[i] = compile(sources[i]);
    } catch (const std::exception& e) {
      failures[worker] = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  if (threads > 0) work(0);
  for (std::thread& t : pool) t.join();
  for (const std::string& f : failures) KILN_ASSERT(f.empty(), "nvrtc: " + f);
  return out;
}

}  // namespace kiln::targets::cuda
