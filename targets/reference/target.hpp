// targets/reference: the reference interpreter as a target (always built). Kernels are Bodies
// run by graph::interpret_body on host buffers, library calls are plain loops: slow, obviously
// correct, and the oracle every other target is compared with op by op.
#pragma once

#include <memory>

#include "runtime/target.hpp"

namespace kiln::targets {

std::unique_ptr<runtime::Target> make_reference_target();

}  // namespace kiln::targets
