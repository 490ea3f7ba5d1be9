// The OpenCL target when kiln is built without OpenCL (no headers or ICD loader found).
#include "targets/opencl/target.hpp"
#include "targets/unavailable_target.hpp"

namespace kiln::targets {

std::unique_ptr<runtime::Target> make_opencl_target() {
  return make_unavailable_target(
      "opencl", "built without OpenCL (install ocl-icd-opencl-dev and opencl-headers, "
                "then reconfigure with KILN_OPENCL=ON)");
}

}  // namespace kiln::targets
