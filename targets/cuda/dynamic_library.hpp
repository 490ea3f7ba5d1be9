// Libraries of the CUDA toolkit opened with dlopen at their first use, not linked: NVRTC alone
// adds ~6 ms to the start of every process that links it (its loading and static
// initializers), which every `kiln egg` run and every CLI test would pay without compiling a
// CUDA kernel; cuBLAS and cuBLASLt would add more. A machine without them then still runs
// kiln, and only the CUDA target reports what is missing.
#pragma once

#include <dlfcn.h>

#include <string>

namespace kiln::targets::cuda {

// The library at the toolkit's `path`, else by `soname` (the loader's search path); nullptr and
// `error` set when neither opens.
inline void* open_library(const char* path, const char* soname, std::string& error) {
  for (const char* name : {path, soname}) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    const char* why = dlerror();
    error = std::string(name) + ": " + (why ? why : "dlopen failed");
  }
  return nullptr;
}

// Resolves `name` into `out` (a function pointer typed from the library's header, so a
// signature that changes between toolkits fails to compile); false and `error` set when absent.
template <class F>
bool resolve(void* library, const char* name, F& out, std::string& error) {
  out = reinterpret_cast<F>(dlsym(library, name));
  if (!out) error = std::string("no symbol ") + name;
  return out != nullptr;
}

}  // namespace kiln::targets::cuda
