// The safetensors reader (see safetensors.hpp): a strict JSON reader for the header's subset
// (objects, arrays, strings, integers), then the checks of each tensor against the data section.
#include "model/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>

#include "model/dequantize.hpp"
#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

using support::UserError;

constexpr std::uint64_t kHeaderLengthBytes = 8;
constexpr int kMaxNesting = 16;  // the header needs 3 levels; deeper input is rejected

// One JSON value with the file offset it starts at (for messages). Numbers are integers only:
// the header has no other kind.
struct Json {
  enum class Kind { Object, Array, String, Integer, Other } kind = Kind::Other;
  std::uint64_t at = 0;
  std::string text;                                  // String
  bool negative = false;                             // Integer: sign and magnitude
  std::uint64_t magnitude = 0;
  // An array's items, or an object's values with their keys beside them, in file order (a
  // vector of pairs would hold the still-incomplete Json).
  std::vector<std::string> keys;
  std::vector<Json> items;
};

const char* kind_name(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::Object: return "an object";
    case Json::Kind::Array: return "an array";
    case Json::Kind::String: return "a string";
    case Json::Kind::Integer: return "an integer";
    case Json::Kind::Other: return "true, false or null";
  }
  return "a value";
}

// Reads the header's JSON; `base` is the file offset of its first byte.
class JsonReader {
 public:
  JsonReader(std::string_view text, std::uint64_t base, const std::string& file)
      : text_(text), base_(base), file_(file) {}

  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const {
    throw UserError(file_ + ": byte " + std::to_string(at) + ": " + what);
  }

  Json read_document() {
    Json v = read_value(0);
    skip_space();  // writers pad the header with spaces to 8-byte alignment
    if (pos_ != text_.size()) fail(here(), "header: unexpected text after the JSON object");
    return v;
  }

 private:
  std::uint64_t here() const { return base_ + pos_; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  char peek(const char* expecting) {
    if (pos_ >= text_.size())
      fail(here(), std::string("header: JSON ends where ") + expecting + " was expected");
    return text_[pos_];
  }

  void expect(char c) {
    if (peek((std::string("'") + c + "'").c_str()) != c) {
      fail(here(), std::string("header: expected '") + c + "', got '" + text_[pos_] + "'");
    }
    ++pos_;
  }

  Json read_value(int depth) {
    skip_space();
    Json v;
    v.at = here();
    const char c = peek("a value");
    if (c == '{' || c == '[') {
      if (depth >= kMaxNesting) fail(here(), "header: JSON nested too deeply");
      ++pos_;
      v.kind = c == '{' ? Json::Kind::Object : Json::Kind::Array;
      const char close = c == '{' ? '}' : ']';
      std::set<std::string> keys;
      skip_space();
      if (peek("a value or a closing bracket") == close) {
        ++pos_;
        return v;
      }
      for (;;) {
        if (v.kind == Json::Kind::Object) {
          skip_space();
          const std::uint64_t key_at = here();
          if (peek("a key") != '"') fail(key_at, "header: expected a string key");
          std::string key = read_string();
          if (!keys.insert(key).second) fail(key_at, "header: duplicate key '" + key + "'");
          skip_space();
          expect(':');
          v.keys.push_back(std::move(key));
        }
        v.items.push_back(read_value(depth + 1));
        skip_space();
        if (peek("',' or a closing bracket") == ',') {
          ++pos_;
          continue;
        }
        expect(close);
        return v;
      }
    }
    if (c == '"') {
      v.kind = Json::Kind::String;
      v.text = read_string();
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      read_integer(v);
      return v;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (text_.substr(pos_, std::strlen(word)) == word) {
        pos_ += std::strlen(word);
        return v;  // Kind::Other: valid JSON, never what the header wants
      }
    }
    fail(here(), std::string("header: not JSON at '") + c + "'");
  }

  void read_integer(Json& v) {
    v.kind = Json::Kind::Integer;
    if (text_[pos_] == '-') {
      v.negative = true;
      ++pos_;
    }
    const std::size_t digits = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const auto d = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (v.magnitude > (std::numeric_limits<std::uint64_t>::max() - d) / 10) {
        fail(v.at, "header: integer too large");
      }
      v.magnitude = v.magnitude * 10 + d;
      ++pos_;
    }
    if (pos_ == digits) fail(v.at, "header: '-' without digits");
    if (text_[digits] == '0' && pos_ - digits > 1)
      fail(v.at, "header: integer with a leading zero");
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      fail(v.at, "header: a number with a fraction or exponent (only integers belong here)");
    }
  }

  unsigned hex4() {
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = peek("a hex digit");
      unsigned d;
      if (h >= '0' && h <= '9') d = static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') d = static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') d = static_cast<unsigned>(h - 'A' + 10);
      else fail(here(), "header: bad \\u escape");
      u = u * 16 + d;
      ++pos_;
    }
    return u;
  }

  static void append_utf8(std::string& s, unsigned cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A string at pos_ (which is '"'), escapes decoded. Raw bytes are kept as they are.
  std::string read_string() {
    const std::uint64_t start = here();
    ++pos_;
    std::string s;
    for (;;) {
      if (pos_ >= text_.size()) fail(start, "header: string not closed");
      const char c = text_[pos_++];
      if (c == '"') return s;
      if (static_cast<unsigned char>(c) < 0x20)
        fail(here() - 1, "header: control character in a string");
      if (c != '\\') {
        s += c;
        continue;
      }
      const std::uint64_t escape_at = here() - 1;
      const char e = peek("an escape");
      ++pos_;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate needs its low half
            if (text_.substr(pos_, 2) != "\\u")
              fail(escape_at, "header: unpaired surrogate escape");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail(escape_at, "header: unpaired surrogate escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail(escape_at, "header: unpaired surrogate escape");
          }
          append_utf8(s, cp);
          break;
        }
        default: fail(escape_at, std::string("header: unknown escape '\\") + e + "'");
      }
    }
  }

  std::string_view text_;
  std::uint64_t base_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

constexpr SafetensorsDtype kAllDtypes[] = {
    SafetensorsDtype::Bool, SafetensorsDtype::U8,  SafetensorsDtype::I8,  SafetensorsDtype::U16,
    SafetensorsDtype::I16,  SafetensorsDtype::F16, SafetensorsDtype::BF16, SafetensorsDtype::U32,
    SafetensorsDtype::I32,  SafetensorsDtype::F32, SafetensorsDtype::U64, SafetensorsDtype::I64,
    SafetensorsDtype::F64,  SafetensorsDtype::F8_E4M3, SafetensorsDtype::F8_E5M2,
};

// Reads one tensor's entry; `limit` is the size of the data section.
SafetensorsTensorInfo read_tensor(const JsonReader& r, const std::string& name, const Json& v,
                                  std::uint64_t limit) {
  const std::string where = "tensor '" + name + "': ";
  if (v.kind != Json::Kind::Object)
    r.fail(v.at, where + "expected an object, got " + kind_name(v.kind));
  const Json* dtype = nullptr;
  const Json* shape = nullptr;
  const Json* offsets = nullptr;
  for (std::size_t i = 0; i < v.keys.size(); ++i) {
    const std::string& key = v.keys[i];
    const Json& member = v.items[i];
    if (key == "dtype") dtype = &member;
    else if (key == "shape") shape = &member;
    else if (key == "data_offsets") offsets = &member;
    else r.fail(member.at, where + "unknown field '" + key + "'");
  }
  if (!dtype || !shape || !offsets) {
    r.fail(v.at, where + "missing '" +
                     (!dtype   ? "dtype"
                      : !shape ? "shape"
                               : "data_offsets") +
                     "'");
  }
  SafetensorsTensorInfo t;
  t.name = name;

  if (dtype->kind != Json::Kind::String) r.fail(dtype->at, where + "dtype must be a string");
  bool known = false;
  for (SafetensorsDtype d : kAllDtypes) {
    if (dtype->text == safetensors_dtype_name(d)) {
      t.dtype = d;
      known = true;
    }
  }
  if (!known) r.fail(dtype->at, where + "unknown dtype '" + dtype->text + "'");

  if (shape->kind != Json::Kind::Array) r.fail(shape->at, where + "shape must be an array");
  std::uint64_t elements = 1;
  for (const Json& dim : shape->items) {
    if (dim.kind != Json::Kind::Integer)
      r.fail(dim.at, where + "shape: expected an integer, got " + kind_name(dim.kind));
    if (dim.negative && dim.magnitude != 0) r.fail(dim.at, where + "shape: negative dimension");
    if (dim.magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      r.fail(dim.at, where + "shape: dimension too large");
    }
    t.shape.push_back(static_cast<std::int64_t>(dim.magnitude));
  }
  // The element count, checked against overflow once no dimension is zero.
  const bool empty =
      std::any_of(t.shape.begin(), t.shape.end(), [](std::int64_t d) { return d == 0; });
  if (empty) {
    elements = 0;
  } else {
    for (std::int64_t d : t.shape) {
      const auto u = static_cast<std::uint64_t>(d);
      if (elements > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / u) {
        r.fail(shape->at, where + "shape: element count overflows");
      }
      elements *= u;
    }
  }
  t.elements = static_cast<std::int64_t>(elements);

  if (offsets->kind != Json::Kind::Array || offsets->items.size() != 2) {
    r.fail(offsets->at, where + "data_offsets must be an array of two integers");
  }
  for (const Json& o : offsets->items) {
    if (o.kind != Json::Kind::Integer || (o.negative && o.magnitude != 0)) {
      r.fail(o.at, where + "data_offsets: expected a non-negative integer");
    }
  }
  t.begin = offsets->items[0].magnitude;
  t.end = offsets->items[1].magnitude;
  if (t.end < t.begin) {
    r.fail(offsets->at, where + "data_offsets: end " + std::to_string(t.end) + " before begin " +
                            std::to_string(t.begin));
  }
  if (t.end > limit) {
    r.fail(offsets->at, where + "data_offsets: end " + std::to_string(t.end) +
                            " runs past the data section (" + std::to_string(limit) + " bytes)");
  }
  const std::uint64_t size = safetensors_dtype_size(t.dtype);
  if (elements > std::numeric_limits<std::uint64_t>::max() / size ||
      t.end - t.begin != elements * size) {
    r.fail(offsets->at, where + "data_offsets span " + std::to_string(t.end - t.begin) +
                            " bytes, but " + std::to_string(elements) + " " +
                            safetensors_dtype_name(t.dtype) + " elements take " +
                            (elements > std::numeric_limits<std::uint64_t>::max() / size
                                 ? std::string("more")
                                 : std::to_string(elements * size)));
  }
  return t;
}

}  // namespace

const char* safetensors_dtype_name(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::Bool: return "BOOL";
    case SafetensorsDtype::U8: return "U8";
    case SafetensorsDtype::I8: return "I8";
    case SafetensorsDtype::U16: return "U16";
    case SafetensorsDtype::I16: return "I16";
    case SafetensorsDtype::F16: return "F16";
    case SafetensorsDtype::BF16: return "BF16";
    case SafetensorsDtype::U32: return "U32";
    case SafetensorsDtype::I32: return "I32";
    case SafetensorsDtype::F32: return "F32";
    case SafetensorsDtype::U64: return "U64";
    case SafetensorsDtype::I64: return "I64";
    case SafetensorsDtype::F64: return "F64";
    case SafetensorsDtype::F8_E4M3: return "F8_E4M3";
    case SafetensorsDtype::F8_E5M2: return "F8_E5M2";
  }
  return "?";
}

std::uint64_t safetensors_dtype_size(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::Bool: case SafetensorsDtype::U8: case SafetensorsDtype::I8:
    case SafetensorsDtype::F8_E4M3: case SafetensorsDtype::F8_E5M2: return 1;
    case SafetensorsDtype::U16: case SafetensorsDtype::I16: case SafetensorsDtype::F16:
    case SafetensorsDtype::BF16: return 2;
    case SafetensorsDtype::U32: case SafetensorsDtype::I32: case SafetensorsDtype::F32: return 4;
    case SafetensorsDtype::U64: case SafetensorsDtype::I64: case SafetensorsDtype::F64: return 8;
  }
  return 1;
}

const SafetensorsTensorInfo* Safetensors::find_tensor(const std::string& name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

Safetensors parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& file) {
  Safetensors s;
  s.file = file;
  const auto fail = [&](std::uint64_t at, const std::string& what) -> void {
    throw UserError(file + ": byte " + std::to_string(at) + ": " + what);
  };
  if (bytes.size() < kHeaderLengthBytes) {
    fail(0,
         "truncated: the header length needs 8 bytes, " + std::to_string(bytes.size()) + " left");
  }
  std::uint64_t length = 0;
  std::memcpy(&length, bytes.data(), kHeaderLengthBytes);  // little-endian, as this host
  const std::uint64_t left = bytes.size() - kHeaderLengthBytes;
  if (length > left) {
    fail(0, "truncated: header length " + std::to_string(length) + " runs past the end (" +
                std::to_string(left) + " bytes left)");
  }
  s.data_offset = kHeaderLengthBytes + length;
  const std::uint64_t limit = bytes.size() - s.data_offset;

  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + kHeaderLengthBytes),
                              length);
  JsonReader reader(text, kHeaderLengthBytes, file);
  const Json root = reader.read_document();
  if (root.kind != Json::Kind::Object) {
    reader.fail(root.at, std::string("header: expected an object, got ") + kind_name(root.kind));
  }
  for (std::size_t i = 0; i < root.keys.size(); ++i) {
    const std::string& name = root.keys[i];
    const Json& value = root.items[i];
    if (name == "__metadata__") {
      if (value.kind != Json::Kind::Object) reader.fail(value.at, "__metadata__ must be an object");
      for (std::size_t j = 0; j < value.keys.size(); ++j) {
        const std::string& key = value.keys[j];
        const Json& entry = value.items[j];
        if (entry.kind != Json::Kind::String) {
          reader.fail(entry.at, "__metadata__ '" + key + "': expected a string, got " +
                                    kind_name(entry.kind));
        }
        s.metadata.emplace_back(key, entry.text);
      }
      continue;
    }
    s.tensor_index_.emplace(name, s.tensors.size());
    s.tensors.push_back(read_tensor(reader, name, value, limit));
  }

  // No two tensors share a byte (empty ones hold none).
  std::vector<std::size_t> order(s.tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(s.tensors[a].begin, a) < std::pair(s.tensors[b].begin, b);
  });
  const SafetensorsTensorInfo* previous = nullptr;
  for (std::size_t i : order) {
    const SafetensorsTensorInfo& t = s.tensors[i];
    if (t.bytes() == 0) continue;
    if (previous && t.begin < previous->end) {
      fail(s.data_offset + t.begin, "tensor '" + t.name + "' [" + std::to_string(t.begin) + ", " +
                                        std::to_string(t.end) + ") overlaps tensor '" +
                                        previous->name + "' [" + std::to_string(previous->begin) +
                                        ", " + std::to_string(previous->end) + ")");
    }
    previous = &t;
  }
  return s;
}

std::vector<float> safetensors_to_f32(const SafetensorsTensorInfo& t,
                                      std::span<const std::uint8_t> data) {
  switch (t.dtype) {
    case SafetensorsDtype::F32: return dequantize(GgmlType::F32, data, t.elements);
    case SafetensorsDtype::F16: return dequantize(GgmlType::F16, data, t.elements);
    case SafetensorsDtype::BF16: return dequantize(GgmlType::BF16, data, t.elements);
    default:
      throw UserError("tensor '" + t.name + "': " + safetensors_dtype_name(t.dtype) +
                      " does not convert to f32 (F32, F16 and BF16 do)");
  }
}

SafetensorsFile::SafetensorsFile(const std::string& path)
    : file_(path), header_(parse_safetensors(file_.bytes(), path)) {}

std::span<const std::uint8_t> SafetensorsFile::data(const SafetensorsTensorInfo& t) const {
  return file_.bytes().subspan(header_.data_offset + t.begin, t.bytes());
}

std::vector<float> SafetensorsFile::to_f32(const SafetensorsTensorInfo& t) const {
  return safetensors_to_f32(t, data(t));
}

}  // namespace kiln::model
