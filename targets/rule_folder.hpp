// A target's own rule files: every *.egg of its rules/ folder, in name order.
#pragma once

#include <filesystem>
#include <vector>

namespace kiln::targets {

// The *.egg files of the folder named by environment variable `env_var` when it is set and not
// empty, else of `built_in` (fixed at build time); none when the folder does not exist.
std::vector<std::filesystem::path> rule_files_in(const char* env_var,
                                                 const std::filesystem::path& built_in);

}  // namespace kiln::targets
