#include "support/source_file.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "support/diagnostic.hpp"

namespace kiln::support {

SourceFile::SourceFile(std::string name, std::string text)
    : name_(std::move(name)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (std::uint32_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::shared_ptr<const SourceFile> SourceFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read file '" + path + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return std::make_shared<const SourceFile>(path, buffer.str());
}

std::uint32_t SourceFile::line_of(std::uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<std::uint32_t>(it - line_starts_.begin());
}

std::uint32_t SourceFile::column_of(std::uint32_t offset) const {
  return offset - line_starts_[line_of(offset) - 1] + 1;
}

std::string SourceFile::line_text(std::uint32_t line) const {
  if (line == 0 || line > line_starts_.size()) return {};
  std::uint32_t begin = line_starts_[line - 1];
  std::uint32_t end = line < line_starts_.size() ? line_starts_[line] : text_.size();
  while (end > begin && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return text_.substr(begin, end - begin);
}

std::string Span::location() const {
  if (!file) return "<unknown>";
  return file->name() + ":" + std::to_string(file->line_of(begin)) + ":" +
         std::to_string(file->column_of(begin));
}

}  // namespace kiln::support
