// GGUF writer (see gguf_writer.hpp): the layout parse_gguf reads.
#include "model/gguf_writer.hpp"

#include <cstring>
#include <fstream>

#include "model/dequantize.hpp"
#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

template <typename T>
void put(std::vector<std::uint8_t>& out, T v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));  // little-endian host, as GGUF
}

void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void put_value(std::vector<std::uint8_t>& out, const GgufValue& v) {
  switch (v.type) {
    case GgufType::U8: put<std::uint8_t>(out, static_cast<std::uint8_t>(v.integer)); break;
    case GgufType::I8: put<std::int8_t>(out, static_cast<std::int8_t>(v.integer)); break;
    case GgufType::U16: put<std::uint16_t>(out, static_cast<std::uint16_t>(v.integer)); break;
    case GgufType::I16: put<std::int16_t>(out, static_cast<std::int16_t>(v.integer)); break;
    case GgufType::U32: put<std::uint32_t>(out, static_cast<std::uint32_t>(v.integer)); break;
    case GgufType::I32: put<std::int32_t>(out, static_cast<std::int32_t>(v.integer)); break;
    case GgufType::U64: put<std::uint64_t>(out, v.unsigned_integer); break;
    case GgufType::I64: put<std::int64_t>(out, v.integer); break;
    case GgufType::F32: put<float>(out, static_cast<float>(v.real)); break;
    case GgufType::F64: put<double>(out, v.real); break;
    case GgufType::Bool: put<std::uint8_t>(out, v.integer ? 1 : 0); break;
    case GgufType::String: put_string(out, v.text); break;
    case GgufType::Array:
      put<std::uint32_t>(out, static_cast<std::uint32_t>(v.element_type));
      put<std::uint64_t>(out, v.elements.size());
      for (const GgufValue& e : v.elements) {
        KILN_ASSERT(e.type == v.element_type, "GgufWriter: an array element of another type");
        put_value(out, e);
      }
      break;
  }
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type,
                            std::vector<std::int64_t> shape, std::vector<std::uint8_t> data) {
  std::int64_t count = 1;
  for (std::int64_t n : shape) count *= n;
  if (data.size() != data_bytes(type, count)) {
    throw support::UserError("GgufWriter: tensor '" + name + "' has " + std::to_string(data.size()) +
                             " bytes, its shape and type need " +
                             std::to_string(data_bytes(type, count)));
  }
  tensors_.push_back({name, type, std::move(shape), std::move(data)});
}

std::vector<std::uint8_t> GgufWriter::bytes() const {
  std::uint64_t alignment = 32;
  for (const auto& [k, v] : metadata_) {
    if (k == "general.alignment") alignment = v.unsigned_integer;
  }
  KILN_ASSERT(alignment != 0 && (alignment & (alignment - 1)) == 0,
              "GgufWriter: general.alignment must be a power of two");
  auto aligned = [&](std::uint64_t n) { return (n + alignment - 1) / alignment * alignment; };

  std::vector<std::uint8_t> out;
  std::uint32_t magic;
  std::memcpy(&magic, "GGUF", 4);
  put<std::uint32_t>(out, magic);
  put<std::uint32_t>(out, 3);
  put<std::uint64_t>(out, tensors_.size());
  put<std::uint64_t>(out, metadata_.size());
  for (const auto& [k, v] : metadata_) {
    put_string(out, k);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(v.type));
    put_value(out, v);
  }
  std::uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      put<std::uint64_t>(out, static_cast<std::uint64_t>(*it));  // ne[0], the innermost, first
    }
    put<std::uint32_t>(out, static_cast<std::uint32_t>(t.type));
    put<std::uint64_t>(out, offset);
    offset = aligned(offset + t.data.size());
  }
  out.resize(aligned(out.size()), 0);
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize(aligned(out.size()), 0);
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const std::vector<std::uint8_t> b = bytes();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) throw support::UserError(path + ": cannot write the GGUF file");
}

}  // namespace kiln::model
