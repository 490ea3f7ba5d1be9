// The CUDA target when kiln is built without the CUDA toolkit.
#include "targets/cuda/target.hpp"
#include "targets/unavailable_target.hpp"

namespace kiln::targets {

std::unique_ptr<runtime::Target> make_cuda_target() {
  return make_unavailable_target(
      "cuda", "built without the CUDA toolkit (NVRTC and cudart; reconfigure with KILN_CUDA=ON "
              "where the toolkit is installed)");
}

}  // namespace kiln::targets
