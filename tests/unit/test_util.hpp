// Small helpers shared by the unit tests of every layer.
#pragma once

#include <string>

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

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace kiln::testing
