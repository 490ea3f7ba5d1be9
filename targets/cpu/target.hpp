// targets/cpu: kernels rendered to C++ (codegen.hpp), compiled in batches into cached shared
// objects (jit.hpp), run on host buffers; Gemm through OpenBLAS (gemm.hpp).
#pragma once

#include <filesystem>
#include <memory>

#include "runtime/target.hpp"

namespace kiln::targets {

// `cache_root` empty: the default kernel cache (see JitCompiler).
std::unique_ptr<runtime::Target> make_cpu_target(const std::filesystem::path& cache_root = {});

}  // namespace kiln::targets
