// Cache locations and atomic writes; see cache_files.hpp.
#include "support/cache_files.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "support/diagnostic.hpp"

namespace kiln::support {

namespace fs = std::filesystem;

fs::path default_cache_root() {
  if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "kiln";
  if (const char* home = std::getenv("HOME"); home && *home) {
    return fs::path(home) / ".cache" / "kiln";
  }
  return fs::temp_directory_path() / "kiln-cache";
}

void write_file_atomically(const fs::path& path, const std::string& text) {
  static std::atomic<unsigned long> counter{0};
  fs::path tmp = path;
  tmp += ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw UserError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError("cannot write " + path.string());
  }
}

}  // namespace kiln::support
