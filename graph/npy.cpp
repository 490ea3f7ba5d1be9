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
    case DType::F16: { std::uint16_t v; std::memcpy(&v, p, 2); return half_value(v); }
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::I32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::I64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: return static_cast<unsigned char>(*p);
  }
}

}  // namespace

Tensor read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::UserError(path.string() + ": cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path.string());
}

Tensor parse_npy(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& message) -> Tensor {
    throw support::UserError(name + ": " + message);
  };
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
  // The element count, refusing sizes beyond the file before anything overflows or is allocated.
  std::uint64_t count = 1;
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    const std::string digits = it->str();
    if (digits.size() > 12) return fail("dimension " + digits + " is too large");
    const auto d = static_cast<std::uint64_t>(std::stoll(digits));
    if (d != 0 && count > bytes.size() / d) count = bytes.size() + 1;  // already too large
    else count *= d;
    t.shape.push_back(static_cast<std::int64_t>(d));
  }
  const NpyType* type = nullptr;
  for (const NpyType& k : kTypes) {
    if (descr == k.descr) type = &k;
  }
  if (!type) return fail("unsupported element type '" + descr + "'");
  t.dtype = type->dtype;
  const std::size_t data = start + header_len;
  if (count > bytes.size() || bytes.size() < data + count * type->size) {
    return fail("has " + std::to_string(bytes.size() - data) + " data bytes, shape needs " +
                (count > bytes.size() ? std::string("more") : std::to_string(count * type->size)));
  }
  t.data.resize(count);
  for (std::size_t i = 0; i < count; ++i) t.data[i] = element(&bytes[data + i * type->size], t.dtype);
  return t;
}

}  // namespace kiln::graph
