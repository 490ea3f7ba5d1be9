// Runs a CPU kernel compiled from a BodyCase's Body on the case's inputs, for the CPU code
// generator's tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "graph/native.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/jit.hpp"
#include "tests/unit/body_cases.hpp"

namespace kiln::testing {

// The kernel's output as doubles. An output that aliases an input starts as that input's copy,
// any other as zeros.
inline std::vector<double> run_cpu_kernel(const targets::cpu::CompiledKernel& kernel,
                                          const targets::cpu::KernelSource& source,
                                          const BodyCase& c) {
  std::vector<std::vector<std::byte>> buffers;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    buffers.push_back(graph::to_native(c.inputs[k], c.body.inputs()[k]));
  }
  const auto size = static_cast<std::size_t>(graph::evaluate(c.body.output_size(), c.dims));
  const std::vector<double> initial = c.body.output_aliases()
                                          ? c.inputs[*c.body.output_aliases()]
                                          : std::vector<double>(size, 0.0);
  buffers.push_back(graph::to_native(initial, c.body.dtype()));
  std::vector<void*> pointers;
  for (auto& b : buffers) pointers.push_back(b.data());
  std::vector<long long> dims;
  for (const std::string& d : source.dims) dims.push_back(c.dims.at(d));
  kernel.fn(pointers.data(), dims.data());
  return graph::from_native(buffers.back().data(), size, c.body.dtype());
}

}  // namespace kiln::testing
