// The GGUF reader (see gguf.hpp): a cursor over the bytes that checks every read.
#include "model/gguf.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

using support::UserError;

constexpr std::uint32_t kMaxDims = 4;         // ggml's GGML_MAX_DIMS
constexpr int kMaxArrayNesting = 8;          // arrays of arrays: deep enough for any real file

// The smallest encoding of one value of `type`: bounds an array's count by the bytes left.
std::uint64_t min_size(GgufType type) {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::Bool: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    case GgufType::String: return 8;   // the length
    case GgufType::Array: return 12;   // element type and count
  }
  return 1;
}

bool known_type(std::uint32_t id) { return id <= static_cast<std::uint32_t>(GgufType::F64); }

class Cursor {
 public:
  Cursor(std::span<const std::uint8_t> bytes, const std::string& file)
      : bytes_(bytes), file_(file) {}

  std::uint64_t position() const { return pos_; }
  std::uint64_t left() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const {
    throw UserError(file_ + ": byte " + std::to_string(at) + ": " + what);
  }

  // Little-endian unsigned integer of N bytes.
  template <typename T>
  T read(const char* what) {
    if (left() < sizeof(T)) {
      fail(pos_, std::string("truncated: ") + what + " needs " + std::to_string(sizeof(T)) +
                     " bytes, " + std::to_string(left()) + " left");
    }
    T v{};
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // GGUF is little-endian, as this host
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    const std::uint64_t at = pos_;
    const auto length = read<std::uint64_t>(what);
    if (length > left()) {
      fail(at, std::string(what) + ": length " + std::to_string(length) + " runs past the end (" +
                   std::to_string(left()) + " bytes left)");
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return s;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  const std::string& file_;
  std::uint64_t pos_ = 0;
};

GgufValue read_value(Cursor& c, GgufType type, const std::string& key, int depth) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::U8: v.integer = c.read<std::uint8_t>("a u8"); break;
    case GgufType::I8: v.integer = c.read<std::int8_t>("an i8"); break;
    case GgufType::U16: v.integer = c.read<std::uint16_t>("a u16"); break;
    case GgufType::I16: v.integer = c.read<std::int16_t>("an i16"); break;
    case GgufType::U32: v.integer = c.read<std::uint32_t>("a u32"); break;
    case GgufType::I32: v.integer = c.read<std::int32_t>("an i32"); break;
    case GgufType::I64: v.integer = c.read<std::int64_t>("an i64"); break;
    case GgufType::U64:
      v.unsigned_integer = c.read<std::uint64_t>("a u64");
      v.integer = static_cast<std::int64_t>(v.unsigned_integer);
      return v;
    case GgufType::F32: v.real = c.read<float>("an f32"); break;
    case GgufType::F64: v.real = c.read<double>("an f64"); break;
    case GgufType::Bool: {
      const std::uint64_t at = c.position();
      const auto b = c.read<std::uint8_t>("a bool");
      if (b > 1) c.fail(at, "metadata '" + key + "': a bool must be 0 or 1, got " + std::to_string(b));
      v.integer = b;
      break;
    }
    case GgufType::String: v.text = c.read_string("a string"); break;
    case GgufType::Array: {
      const std::uint64_t at = c.position();
      const auto element = c.read<std::uint32_t>("an array's element type");
      if (!known_type(element)) {
        c.fail(at, "metadata '" + key + "': unknown array element type " + std::to_string(element));
      }
      v.element_type = static_cast<GgufType>(element);
      if (v.element_type == GgufType::Array && depth >= kMaxArrayNesting) {
        c.fail(at, "metadata '" + key + "': arrays nested more than " +
                       std::to_string(kMaxArrayNesting) + " levels deep");
      }
      const std::uint64_t count_at = c.position();
      const auto count = c.read<std::uint64_t>("an array's length");
      if (count > c.left() / min_size(v.element_type)) {
        c.fail(count_at, "metadata '" + key + "': array of " + std::to_string(count) + " " +
                             gguf_type_name(v.element_type) + " runs past the end (" +
                             std::to_string(c.left()) + " bytes left)");
      }
      v.elements.reserve(count);
      for (std::uint64_t i = 0; i < count; ++i) {
        v.elements.push_back(read_value(c, v.element_type, key, depth + 1));
      }
      break;
    }
  }
  v.unsigned_integer = static_cast<std::uint64_t>(v.integer);
  return v;
}

bool is_power_of_two(std::uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::U8: return "u8";
    case GgufType::I8: return "i8";
    case GgufType::U16: return "u16";
    case GgufType::I16: return "i16";
    case GgufType::U32: return "u32";
    case GgufType::I32: return "i32";
    case GgufType::F32: return "f32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::U64: return "u64";
    case GgufType::I64: return "i64";
    case GgufType::F64: return "f64";
  }
  return "?";
}

GgufValue GgufValue::of_u32(std::uint32_t x) {
  GgufValue v;
  v.type = GgufType::U32;
  v.integer = x;
  v.unsigned_integer = x;
  return v;
}
GgufValue GgufValue::of_i32(std::int32_t x) {
  GgufValue v;
  v.type = GgufType::I32;
  v.integer = x;
  v.unsigned_integer = static_cast<std::uint64_t>(v.integer);
  return v;
}
GgufValue GgufValue::of_u64(std::uint64_t x) {
  GgufValue v;
  v.type = GgufType::U64;
  v.integer = static_cast<std::int64_t>(x);
  v.unsigned_integer = x;
  return v;
}
GgufValue GgufValue::of_f32(float x) {
  GgufValue v;
  v.type = GgufType::F32;
  v.real = x;
  return v;
}
GgufValue GgufValue::of_bool(bool x) {
  GgufValue v;
  v.type = GgufType::Bool;
  v.integer = x ? 1 : 0;
  v.unsigned_integer = v.integer;
  return v;
}
GgufValue GgufValue::of_string(std::string x) {
  GgufValue v;
  v.type = GgufType::String;
  v.text = std::move(x);
  return v;
}
GgufValue GgufValue::of_array(GgufType element_type, std::vector<GgufValue> elements) {
  GgufValue v;
  v.type = GgufType::Array;
  v.element_type = element_type;
  v.elements = std::move(elements);
  return v;
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: return true;
    default: return false;
  }
}

bool GgufValue::is_float() const { return type == GgufType::F32 || type == GgufType::F64; }

bool operator==(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  if (a.is_float()) {
    return std::memcmp(&a.real, &b.real, sizeof(double)) == 0;  // NaN equal to itself
  }
  if (a.type == GgufType::String) return a.text == b.text;
  if (a.type == GgufType::Array) return a.element_type == b.element_type && a.elements == b.elements;
  return a.unsigned_integer == b.unsigned_integer;
}

const GgufValue* Gguf::find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata[it->second].second;
}

const GgufTensorInfo* Gguf::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

const GgufValue& Gguf::require(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) throw UserError(file + ": metadata '" + key + "' is missing");
  return *v;
}

namespace {

std::int64_t as_integer(const GgufValue& v, const std::string& file, const std::string& key) {
  if (!v.is_integer()) {
    throw UserError(file + ": metadata '" + key + "' must be an integer, got " +
                    gguf_type_name(v.type));
  }
  if (v.type == GgufType::U64 && v.unsigned_integer > std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
    throw UserError(file + ": metadata '" + key + "' is too large: " +
                    std::to_string(v.unsigned_integer));
  }
  return v.integer;
}

}  // namespace

std::int64_t Gguf::integer(const std::string& key) const {
  return as_integer(require(key), file, key);
}

std::optional<std::int64_t> Gguf::optional_integer(const std::string& key) const {
  if (!find(key)) return std::nullopt;
  return integer(key);
}

double Gguf::real(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.is_float()) return v.real;
  if (v.is_integer()) return static_cast<double>(as_integer(v, file, key));
  throw UserError(file + ": metadata '" + key + "' must be a number, got " + gguf_type_name(v.type));
}

std::optional<double> Gguf::optional_real(const std::string& key) const {
  if (!find(key)) return std::nullopt;
  return real(key);
}

std::string Gguf::string(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::String) {
    throw UserError(file + ": metadata '" + key + "' must be a string, got " + gguf_type_name(v.type));
  }
  return v.text;
}

std::optional<bool> Gguf::optional_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->type != GgufType::Bool) {
    throw UserError(file + ": metadata '" + key + "' must be a bool, got " + gguf_type_name(v->type));
  }
  return v->integer != 0;
}

std::vector<std::string> Gguf::strings(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::Array || v.element_type != GgufType::String) {
    throw UserError(file + ": metadata '" + key + "' must be an array of strings");
  }
  std::vector<std::string> out;
  out.reserve(v.elements.size());
  for (const GgufValue& e : v.elements) out.push_back(e.text);
  return out;
}

std::vector<std::int64_t> Gguf::integers(const std::string& key) const {
  const GgufValue& v = require(key);
  GgufValue element;
  element.type = v.element_type;
  if (v.type != GgufType::Array || !element.is_integer()) {
    throw UserError(file + ": metadata '" + key + "' must be an array of integers");
  }
  std::vector<std::int64_t> out;
  out.reserve(v.elements.size());
  for (const GgufValue& e : v.elements) out.push_back(as_integer(e, file, key));
  return out;
}

Gguf parse_gguf(std::span<const std::uint8_t> bytes, const std::string& file) {
  Gguf g;
  g.file = file;
  Cursor c(bytes, file);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0) {
    c.fail(0, "not a GGUF file (it does not start with \"GGUF\")");
  }
  c.read<std::uint32_t>("the magic");
  const std::uint64_t version_at = c.position();
  g.version = c.read<std::uint32_t>("the version");
  if (g.version != 2 && g.version != 3) {
    c.fail(version_at, "GGUF version " + std::to_string(g.version) + " is not supported (2 or 3)");
  }
  const auto tensor_count = c.read<std::uint64_t>("the tensor count");
  const std::uint64_t kv_at = c.position();
  const auto kv_count = c.read<std::uint64_t>("the metadata count");
  // Each entry takes at least a key length and a type: a count past that is malformed.
  if (kv_count > c.left() / 12) {
    c.fail(kv_at, "metadata count " + std::to_string(kv_count) + " runs past the end");
  }
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::uint64_t at = c.position();
    std::string key = c.read_string("a metadata key");
    if (g.metadata_index_.count(key)) c.fail(at, "metadata key '" + key + "' appears twice");
    const std::uint64_t type_at = c.position();
    const auto type = c.read<std::uint32_t>("a metadata value type");
    if (!known_type(type)) {
      c.fail(type_at, "metadata '" + key + "': unknown value type " + std::to_string(type));
    }
    GgufValue v = read_value(c, static_cast<GgufType>(type), key, 0);
    g.metadata_index_[key] = g.metadata.size();
    g.metadata.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = g.find("general.alignment")) {
    if (a->type != GgufType::U32 || !is_power_of_two(a->unsigned_integer)) {
      throw UserError(file + ": metadata 'general.alignment' must be a u32 power of two");
    }
    g.alignment = a->unsigned_integer;
  }

  // A tensor info takes at least a name length, a dim count, a type and an offset.
  if (tensor_count > c.left() / 24) {  // the count is at byte 8
    c.fail(8, "tensor count " + std::to_string(tensor_count) + " runs past the end");
  }
  std::vector<std::uint64_t> info_at;
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    const std::uint64_t at = c.position();
    info_at.push_back(at);
    GgufTensorInfo t;
    t.name = c.read_string("a tensor name");
    if (g.tensor_index_.count(t.name)) c.fail(at, "tensor '" + t.name + "' appears twice");
    const std::uint64_t dims_at = c.position();
    const auto dims = c.read<std::uint32_t>("a tensor's dim count");
    if (dims > kMaxDims) {
      c.fail(dims_at, "tensor '" + t.name + "': " + std::to_string(dims) +
                          " dims (at most " + std::to_string(kMaxDims) + ")");
    }
    std::vector<std::int64_t> ne;
    std::int64_t elements = 1;
    for (std::uint32_t d = 0; d < dims; ++d) {
      const std::uint64_t ne_at = c.position();
      const auto n = c.read<std::uint64_t>("a tensor dim");
      if (n > std::uint64_t(std::numeric_limits<std::int64_t>::max()) ||
          (n != 0 && elements > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(n))) {
        c.fail(ne_at, "tensor '" + t.name + "': dim " + std::to_string(n) + " is too large");
      }
      ne.push_back(static_cast<std::int64_t>(n));
      elements *= static_cast<std::int64_t>(n);
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    t.elements = elements;
    const std::uint64_t type_at = c.position();
    const auto type = c.read<std::uint32_t>("a tensor type");
    std::optional<GgmlTypeInfo> info = ggml_type_info(type);
    if (!info) c.fail(type_at, "tensor '" + t.name + "': unknown ggml type " + std::to_string(type));
    t.type = static_cast<GgmlType>(type);
    const std::int64_t row = ne.empty() ? 1 : ne[0];  // a scalar is one row of one element
    if (row % info->block_elems != 0) {
      c.fail(dims_at, "tensor '" + t.name + "': its rows of " + std::to_string(row) +
                          " elements are not whole blocks of " + std::to_string(info->block_elems) +
                          " (" + std::string(info->name) + ")");
    }
    t.bytes = static_cast<std::uint64_t>(elements / info->block_elems) *
              static_cast<std::uint64_t>(info->block_bytes);
    const std::uint64_t offset_at = c.position();
    t.offset = c.read<std::uint64_t>("a tensor offset");
    if (t.offset % g.alignment != 0) {
      c.fail(offset_at, "tensor '" + t.name + "': offset " + std::to_string(t.offset) +
                            " is not a multiple of the alignment " + std::to_string(g.alignment));
    }
    g.tensor_index_[t.name] = g.tensors.size();
    g.tensors.push_back(std::move(t));
  }

  const std::uint64_t end_of_infos = c.position();
  g.data_offset = (end_of_infos + g.alignment - 1) / g.alignment * g.alignment;
  if (tensor_count > 0 && g.data_offset > bytes.size()) {
    c.fail(end_of_infos, "truncated: the data section would start at byte " +
                             std::to_string(g.data_offset) + ", past the end");
  }
  const std::uint64_t data_size = tensor_count > 0 ? bytes.size() - g.data_offset : 0;
  std::vector<std::size_t> order(g.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const GgufTensorInfo& t = g.tensors[i];
    if (t.offset > data_size || t.bytes > data_size - t.offset) {
      c.fail(info_at[i], "truncated: tensor '" + t.name + "' (" + std::to_string(t.bytes) +
                             " bytes at data offset " + std::to_string(t.offset) +
                             ") runs past the end of the file (data section of " +
                             std::to_string(data_size) + " bytes at byte " +
                             std::to_string(g.data_offset) + ")");
    }
    order[i] = i;
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return g.tensors[a].offset != g.tensors[b].offset ? g.tensors[a].offset < g.tensors[b].offset
                                                      : a < b;
  });
  for (std::size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& prev = g.tensors[order[i - 1]];
    const GgufTensorInfo& next = g.tensors[order[i]];
    if (prev.bytes > 0 && next.bytes > 0 && prev.offset + prev.bytes > next.offset) {
      c.fail(info_at[order[i]], "tensor '" + next.name + "' overlaps tensor '" + prev.name + "'");
    }
  }
  return g;
}

GgufFile::GgufFile(const std::string& path) : file_(path), gguf_(parse_gguf(file_.bytes(), path)) {}

std::span<const std::uint8_t> GgufFile::data(const GgufTensorInfo& t) const {
  return file_.bytes().subspan(gguf_.data_offset + t.offset, t.bytes);
}

}  // namespace kiln::model
