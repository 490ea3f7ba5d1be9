#include "dsl/table_files.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "support/diagnostic.hpp"

namespace kiln::dsl {

namespace {

bool parse_field(const std::string& text, engine::SortId sort, const engine::Builtins& b,
                 engine::Value& out) {
  const char* end = text.data() + text.size();
  if (sort == b.i64) {
    std::int64_t x = 0;
    auto [p, ec] = std::from_chars(text.data(), end, x);
    if (ec != std::errc() || p != end) return false;
    out = engine::I64Sort::make(x);
    return true;
  }
  if (sort == b.f64) {
    double x = 0;
    auto [p, ec] = std::from_chars(text.data(), end, x);
    if (ec != std::errc() || p != end) return false;
    out = b.f64_sort->make(x);
    return true;
  }
  out = b.string_sort->make(text);
  return true;
}

}  // namespace

bool readable_from_file(const engine::Builtins& b, engine::SortId sort, bool output_column) {
  return sort == b.i64 || sort == b.string || (sort == b.f64 && !output_column);
}

std::vector<std::vector<engine::Value>> read_tsv_rows(const std::string& path,
                                                      const std::vector<engine::SortId>& sorts,
                                                      const engine::Builtins& builtins) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::RuntimeFailure("cannot read input file '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  std::vector<std::vector<engine::Value>> rows;
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t newline = text.find('\n', start);
    std::size_t stop = newline == std::string::npos ? text.size() : newline;
    std::string line = text.substr(start, stop - start);
    start = newline == std::string::npos ? text.size() : newline + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<std::string> fields;
    for (std::size_t from = 0;;) {
      std::size_t tab = line.find('\t', from);
      fields.push_back(line.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (fields.size() != sorts.size()) {
      throw support::RuntimeFailure(where + "expected " + std::to_string(sorts.size()) +
                                    " tab-separated field(s), found " + std::to_string(fields.size()));
    }
    std::vector<engine::Value> row(sorts.size());
    for (std::size_t i = 0; i < sorts.size(); ++i) {
      if (!parse_field(fields[i], sorts[i], builtins, row[i])) {
        throw support::RuntimeFailure(where + "field " + std::to_string(i + 1) + " ('" + fields[i] +
                                      "') is not a" + (sorts[i] == builtins.i64 ? "n i64" : " f64"));
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string csv_field(const std::string& text) {
  if (!text.empty() && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace kiln::dsl
