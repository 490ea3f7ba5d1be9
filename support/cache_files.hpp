// The on-disk caches (compiled kernels, measurements): where they live and how their files are
// written, so that a crash or two processes writing one key never leave a half file.
#pragma once

#include <filesystem>
#include <string>

namespace kiln::support {

// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln, else <tmp>/kiln-cache.
std::filesystem::path default_cache_root();

// Writes `text` to a temporary file beside `path` (named by process and a counter) and renames
// it over `path`. A failure is a UserError naming the file.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace kiln::support
