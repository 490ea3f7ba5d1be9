// A target that is not built into this binary (its toolkit was not found): it has a name and
// says why it cannot run; everything else about it is empty.
#pragma once

#include <memory>
#include <string>

#include "runtime/target.hpp"

namespace kiln::targets {

std::unique_ptr<runtime::Target> make_unavailable_target(const std::string& name,
                                                         const std::string& reason);

}  // namespace kiln::targets
