// The list of targets. Adding a target is adding its folder and one line in registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/target.hpp"

namespace kiln::targets {

// Names of the targets built into this binary, in a fixed order.
std::vector<std::string> target_names();

// A new instance of target `name`; an unknown name is a UserError listing the known ones, and
// so is a target that cannot run here (its unavailable() reason).
std::unique_ptr<runtime::Target> make_target(const std::string& name);

}  // namespace kiln::targets
