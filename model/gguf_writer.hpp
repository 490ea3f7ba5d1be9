// GgufWriter: writes GGUF v3 files (metadata and tensors, data aligned as the reader expects),
// for tools that save models and for tests that make small model files of their own.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.hpp"

namespace kiln::model {

class GgufWriter {
 public:
  // Sets metadata `key` (replacing an earlier value; the order of first setting is kept).
  // `general.alignment`, a u32 power of two, sets the data alignment (default 32).
  void set(const std::string& key, GgufValue value);
  // Adds a tensor of `shape` (outermost first, as GgufTensorInfo) whose data, already in
  // `type`'s layout, is `data` (a UserError if its size does not match).
  void add_tensor(const std::string& name, GgmlType type, std::vector<std::int64_t> shape,
                  std::vector<std::uint8_t> data);

  // The whole file.
  std::vector<std::uint8_t> bytes() const;
  // Writes bytes() to `path`; a UserError if it cannot.
  void write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> data;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
};

}  // namespace kiln::model
