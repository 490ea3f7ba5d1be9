// Small helpers shared by the unit tests of every layer.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

#include "support/diagnostic.hpp"

namespace kiln::testing {

// The message of the support::UserError that `call()` throws, or "" if it throws none.
template <class Call>
std::string user_error_of(Call&& call) {
  try {
    call();
  } catch (const support::UserError& e) {
    return e.what();
  }
  return "";
}

// An empty scratch folder for one test (named after it and this process), removed first.
inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("kiln-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace kiln::testing
