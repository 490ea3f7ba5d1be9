// Helpers shared by the tests that build graphs and run them through the interpreter.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/tensor.hpp"

namespace kiln::testing {

// f64 values uniform in [-2, 2), reproducible from `seed`.
inline graph::Tensor random_tensor(std::vector<std::int64_t> shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  graph::Tensor t;
  t.dtype = graph::DType::F64;
  t.shape = std::move(shape);
  for (std::int64_t i = 0; i < graph::numel(t.shape); ++i) t.data.push_back(dist(rng));
  return t;
}

inline graph::Tensor tensor(std::vector<std::int64_t> shape, std::vector<double> data,
                            graph::DType dtype = graph::DType::F64) {
  return graph::Tensor{dtype, std::move(shape), std::move(data)};
}

// Constant sizes as a shape.
inline std::vector<graph::Expr> dims(std::vector<std::int64_t> sizes) {
  return std::vector<graph::Expr>(sizes.begin(), sizes.end());
}

// Validates the builder's graph and interprets it; every output by name.
inline std::map<std::string, graph::Tensor> run_all(
    const graph::GraphBuilder& b, const std::map<std::string, graph::Tensor>& inputs,
    const graph::DimValues& dv = {}) {
  graph::validate(b.graph());
  return graph::interpret(b.graph(), dv, inputs);
}

}  // namespace kiln::testing
