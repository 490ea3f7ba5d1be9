// Source text held for diagnostics: a file's name, its bytes, and where each line starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::support {

class SourceFile {
 public:
  SourceFile(std::string name, std::string text);

  // Reads a file from disk; throws UserError (without a span) if it cannot be read.
  static std::shared_ptr<const SourceFile> load(const std::string& path);

  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }

  // 1-based line and column of a byte offset (columns count bytes).
  std::uint32_t line_of(std::uint32_t offset) const;
  std::uint32_t column_of(std::uint32_t offset) const;
  // The text of a 1-based line, without its newline.
  std::string line_text(std::uint32_t line) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<std::uint32_t> line_starts_;
};

// A byte range in a source file. Spans are cheap to copy; a default span has no file.
struct Span {
  std::shared_ptr<const SourceFile> file;
  std::uint32_t begin = 0;
  std::uint32_t end = 0;

  bool known() const { return file != nullptr; }
  // "file:line:col", or "<unknown>".
  std::string location() const;
};

}  // namespace kiln::support
