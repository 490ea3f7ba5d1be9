// The .npy reader; see npy.hpp. Format: magic "\x93NUMPY", major and minor version, header
// length (2 bytes in v1, 4 in v2/v3), then a Python dict literal with 'descr', 'fortran_order'
// and 'shape', then the raw data.
#include "graph/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
  std::size_t size;
};

const NpyType kTypes[] = {
    {"<f2", DType::F16, 2}, {"<f4", DType::F32, 4}, {"<f8", DType::F64, 8},
    {"<i4", DType::I32, 4}, {"<i8", DType::I64, 8}, {"|u1", DType::U8, 1},
    {"|b1", DType::Bool, 1},
};

double element(const char* p, DType dtype) {
  switch (dtype) {
    case DType::F16: { _Float16 v; std::memcpy(&v, p, 2); return static_cast<double>(v); }
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::I32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::I64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: return static_cast<unsigned char>(*p);
  }
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  auto fail = [&](const std::string& message) -> Tensor {
    throw support::UserError(path.string() + ": " + message);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return fail("not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail("truncated header");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
    start = 12;
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  if (bytes.size() < start + header_len) return fail("truncated header");
  const std::string header = bytes.substr(start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) {
    return fail("header without 'descr'");
  }
  const std::string descr = m[1];
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    return fail("Fortran-ordered arrays are not supported (save with C order)");
  }
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    return fail("header without 'shape'");
  }
  Tensor t;
  const std::string dims = m[1];
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    t.shape.push_back(std::stoll(it->str()));
  }
  const NpyType* type = nullptr;
  for (const NpyType& k : kTypes) {
    if (descr == k.descr) type = &k;
  }
  if (!type) return fail("unsupported element type '" + descr + "'");
  t.dtype = type->dtype;
  const auto count = static_cast<std::size_t>(numel(t.shape));
  const std::size_t data = start + header_len;
  if (bytes.size() < data + count * type->size) {
    return fail("has " + std::to_string(bytes.size() - data) + " data bytes, shape needs " +
                std::to_string(count * type->size));
  }
  t.data.resize(count);
  for (std::size_t i = 0; i < count; ++i) t.data[i] = element(&bytes[data + i * type->size], t.dtype);
  return t;
}

}  // namespace kiln::graph
