// targets/cuda: Bodies rendered as CUDA C++ from the GPU schedule (targets/gpu), compiled in
// process by NVRTC to a cubin for the device's architecture (sm_90 where there is no device),
// cached on disk, loaded and launched through the CUDA runtime API. Without a driver or a
// device the target is unavailable, with cudart's reason; code generation and compilation
// still work (the CI tests compile every kernel for sm_90).
#pragma once

#include <memory>

#include "runtime/target.hpp"

namespace kiln::targets {

std::unique_ptr<runtime::Target> make_cuda_target();

}  // namespace kiln::targets
