// See rule_folder.hpp.
#include "targets/rule_folder.hpp"

#include <algorithm>
#include <cstdlib>

namespace kiln::targets {

std::vector<std::filesystem::path> rule_files_in(const char* env_var,
                                                 const std::filesystem::path& built_in) {
  const char* env = std::getenv(env_var);
  const std::filesystem::path dir = env && *env ? std::filesystem::path(env) : built_in;
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".egg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());  // directory order is the file system's
  return files;
}

std::filesystem::path shared_rule_file(const std::string& name) {
  return std::filesystem::path(KILN_SHARED_RULES_DIR) / name;
}

}  // namespace kiln::targets
