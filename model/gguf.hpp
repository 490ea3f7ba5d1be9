// GGUF: llama.cpp's model file format (version 3, and 2 which has the same layout), read in
// place. A file is a header ("GGUF", version, tensor count, metadata count), typed metadata
// (key -> value), tensor infos (name, dims, ggml type, offset) and, at the next multiple of
// `general.alignment` (32 by default), the tensor data. All numbers are little-endian.
//
// The reader checks every length, count and offset against the bytes that are there; a
// truncated or malformed file is a UserError "FILE: byte N: what is wrong". Tensor data is not
// copied: a tensor's bytes are a span into the mapped file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/ggml_type.hpp"
#include "model/mapped_file.hpp"

namespace kiln::model {

// The metadata value types, with GGUF's ids.
enum class GgufType : std::uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8,
  Array = 9, U64 = 10, I64 = 11, F64 = 12,
};

// "u32", "string", "array", ...
const char* gguf_type_name(GgufType type);

// One metadata value. Integers are held in `integer` (u64 values above INT64_MAX are kept in
// `unsigned_integer` too), floats in `real`, bools in `integer` (0 or 1), strings in `text`, and
// an array's elements (all of `element_type`) in `elements`.
struct GgufValue {
  GgufType type = GgufType::U8;
  std::int64_t integer = 0;
  std::uint64_t unsigned_integer = 0;
  double real = 0.0;
  std::string text;
  GgufType element_type = GgufType::U8;  // arrays only
  std::vector<GgufValue> elements;       // arrays only

  static GgufValue of_u32(std::uint32_t v);
  static GgufValue of_i32(std::int32_t v);
  static GgufValue of_u64(std::uint64_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_array(GgufType element_type, std::vector<GgufValue> elements);

  bool is_integer() const;  // any of the eight integer types
  bool is_float() const;    // F32 or F64
};

bool operator==(const GgufValue& a, const GgufValue& b);

struct GgufTensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;  // outermost first (GGUF stores ne[0], the innermost, first)
  GgmlType type = GgmlType::F32;
  std::uint64_t offset = 0;         // from the start of the data section
  std::int64_t elements = 0;
  std::uint64_t bytes = 0;
};

// The parsed header of a GGUF file; it refers to the bytes it was read from by offsets only.
struct Gguf {
  std::uint32_t version = 3;
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensorInfo> tensors;                      // in file order
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // where the data section starts in the file

  // The value of `key`, or null.
  const GgufValue* find(const std::string& key) const;
  // The tensor called `name`, or null.
  const GgufTensorInfo* find_tensor(const std::string& name) const;

  // Typed reads of a metadata value; a UserError naming the key (and `file`) if it is missing
  // or of another type. Integers of any width are accepted where they fit.
  std::int64_t integer(const std::string& key) const;
  std::optional<std::int64_t> optional_integer(const std::string& key) const;
  double real(const std::string& key) const;  // F32/F64
  std::optional<double> optional_real(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::optional<bool> optional_bool(const std::string& key) const;
  // An array of strings (or of integers, as int64).
  std::vector<std::string> strings(const std::string& key) const;
  std::vector<std::int64_t> integers(const std::string& key) const;

  std::string file;  // the name used in error messages

 private:
  const GgufValue& require(const std::string& key) const;
  std::map<std::string, std::size_t> metadata_index_;
  std::map<std::string, std::size_t> tensor_index_;
  friend Gguf parse_gguf(std::span<const std::uint8_t> bytes, const std::string& file);
};

// Reads a GGUF file held in `bytes` (named `file` in errors). Checks that every tensor's data
// lies inside `bytes`, at an aligned offset, and that tensors do not overlap.
Gguf parse_gguf(std::span<const std::uint8_t> bytes, const std::string& file);

// A GGUF file mapped into memory, with its parsed header.
class GgufFile {
 public:
  explicit GgufFile(const std::string& path);

  const Gguf& gguf() const { return gguf_; }
  // The bytes of tensor `t` (one of gguf().tensors), in place.
  std::span<const std::uint8_t> data(const GgufTensorInfo& t) const;

 private:
  MappedFile file_;
  Gguf gguf_;
};

}  // namespace kiln::model
