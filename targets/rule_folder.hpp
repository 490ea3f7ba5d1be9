// A target's rule files: every *.egg of its own rules/ folder, in name order, and the shared
// ones of targets/rules/ that it names (patterns over library ops several targets have).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::targets {

// The *.egg files of the folder named by environment variable `env_var` when it is set and not
// empty, else of `built_in` (fixed at build time); none when the folder does not exist.
std::vector<std::filesystem::path> rule_files_in(const char* env_var,
                                                 const std::filesystem::path& built_in);

// targets/rules/`name`, the folder fixed at build time.
std::filesystem::path shared_rule_file(const std::string& name);

}  // namespace kiln::targets
