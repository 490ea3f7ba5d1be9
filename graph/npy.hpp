// Reading NumPy .npy files (format versions 1-3) into graph::Tensor, for `kiln run --input`.
// Supported element types: little-endian f2 (f16), f4, f8, i4, i8, u1 and b1, in C order.
// Anything else (Fortran order, big-endian, other types, a truncated file) is a UserError
// naming the file and the problem.
#pragma once

#include <filesystem>
#include <string>

#include "graph/interpret.hpp"

namespace kiln::graph {

Tensor read_npy(const std::filesystem::path& path);
// The same from the file's bytes; `name` names it in errors.
Tensor parse_npy(const std::string& bytes, const std::string& name);

}  // namespace kiln::graph
