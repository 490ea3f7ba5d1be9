// targets/opencl: Bodies rendered as OpenCL C from the GPU schedule (targets/gpu), compiled per
// batch through the ICD loader (one clBuildProgram per prepare), run on the first OpenCL device
// (a GPU if any; PoCL's CPU device in CI, which executes every schedule, work-group reductions
// and barriers included). No library ops: every kernel is generated.
#pragma once

#include <memory>

#include "runtime/target.hpp"

namespace kiln::targets {

// The OpenCL target; unavailable (with the reason) when there is no OpenCL device, or when kiln
// was built without OpenCL.
std::unique_ptr<runtime::Target> make_opencl_target();

}  // namespace kiln::targets
