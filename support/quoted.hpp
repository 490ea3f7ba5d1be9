// A string in double quotes with `"`, `\` and newlines escaped: the form both JSON and kiln's
// own text formats (cached programs) read back.
#pragma once

#include <string>

namespace kiln::support {

inline std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + '"';
}

}  // namespace kiln::support
