// safetensors: Hugging Face's model file format, read in place. A file is an 8-byte
// little-endian header length N, N bytes of JSON, then the tensor data. The JSON is an object
// from tensor names to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets
// from the first byte after the header), plus an optional "__metadata__" object of strings.
//
// The reader checks the header against the bytes that are there: well-formed JSON (a strict
// reader for this subset), known dtypes, non-negative shapes, end - begin equal to the tensor's
// size, every tensor inside the data section and no two overlapping. A truncated or malformed
// file is a UserError "FILE: byte N: what is wrong". Tensor data is not copied: a tensor's
// bytes are a span into the mapped file.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/mapped_file.hpp"

namespace kiln::model {

// The element types of the format, with the names it writes ("F32", "BF16", ...).
enum class SafetensorsDtype {
  Bool, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64, F8_E4M3, F8_E5M2,
};

const char* safetensors_dtype_name(SafetensorsDtype dtype);
std::uint64_t safetensors_dtype_size(SafetensorsDtype dtype);  // bytes per element

struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<std::int64_t> shape;  // outermost first; [] is a scalar
  std::uint64_t begin = 0;          // from the start of the data section
  std::uint64_t end = 0;
  std::int64_t elements = 0;

  std::uint64_t bytes() const { return end - begin; }
};

// The parsed header of a safetensors file; it refers to the bytes it was read from by offsets.
struct Safetensors {
  std::vector<std::pair<std::string, std::string>> metadata;  // "__metadata__", in file order
  std::vector<SafetensorsTensorInfo> tensors;                 // in header order
  std::uint64_t data_offset = 0;  // where the data section starts in the file (8 + N)
  std::string file;               // the name used in error messages

  // The tensor called `name`, or null.
  const SafetensorsTensorInfo* find_tensor(const std::string& name) const;

 private:
  std::map<std::string, std::size_t> tensor_index_;
  friend Safetensors parse_safetensors(std::span<const std::uint8_t> bytes,
                                       const std::string& file);
};

// Reads a safetensors file held in `bytes` (named `file` in errors).
Safetensors parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& file);

// The values of an F32, F16 or BF16 tensor as f32 (F16 and BF16 widen exactly); a UserError
// naming the tensor for any other dtype. `data` is the tensor's bytes.
std::vector<float> safetensors_to_f32(const SafetensorsTensorInfo& t,
                                      std::span<const std::uint8_t> data);

// A safetensors file mapped into memory, with its parsed header.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const Safetensors& header() const { return header_; }
  // The bytes of tensor `t` (one of header().tensors), in place.
  std::span<const std::uint8_t> data(const SafetensorsTensorInfo& t) const;
  std::vector<float> to_f32(const SafetensorsTensorInfo& t) const;

 private:
  MappedFile file_;
  Safetensors header_;
};

}  // namespace kiln::model
