// MappedFile: a file's bytes mapped read-only into memory (mmap), so that a model's weights are
// read in place and never copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace kiln::model {

class MappedFile {
 public:
  // Maps `path`; a UserError naming the file and the reason if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release();

  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace kiln::model
