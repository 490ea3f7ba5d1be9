// Helpers shared by the tests that build graphs and run them through the interpreter.
#pragma once

#include <cmath>
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

// Values of `dtype` uniform in [lo, hi) (integers: their floor), rounded to the dtype.
inline graph::Tensor random_tensor(std::mt19937& rng, graph::DType dtype,
                                   std::vector<std::int64_t> shape, double lo = -2.0,
                                   double hi = 2.0) {
  graph::Tensor t{dtype, shape, {}};
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::int64_t i = 0; i < graph::numel(shape); ++i) {
    const double v = dist(rng);
    t.data.push_back(graph::round_to_dtype(graph::is_float(dtype) ? v : std::floor(v), dtype));
  }
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

// An HLIR node with the given op, dtype, shape and name (edges are added separately).
inline graph::Node make(graph::Op op, graph::DType dtype, std::vector<graph::Expr> shape,
                        std::string name = "") {
  graph::Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.name = std::move(name);
  return n;
}

// A graph of the indexing and integer ops — Gather, Scatter with a repeated row (the last
// write wins), an integer Mod with a negative divisor, a float-to-int Cast — and its inputs.
inline std::map<std::string, graph::Tensor> build_index_ops(graph::GraphBuilder& gb,
                                                            std::mt19937& rng) {
  using graph::DType;
  graph::GraphTensor table = gb.input("table", {6, 4}, DType::F32);
  graph::GraphTensor ids = gb.input("ids", {3}, DType::I32);
  graph::GraphTensor values = gb.input("values", {3, 4}, DType::F32);
  graph::GraphTensor k = gb.input("k", {3}, DType::I32);
  graph::gather(table, ids).output("gathered");
  graph::scatter(table, ids, values).output("scattered");
  gb.add(make(graph::Op::Mod, DType::I32, {graph::Expr(3)}), {ids + 7.0, k}).output("mod");
  graph::cast(table * 1000.0, DType::I32).output("to_int");
  graph::validate(gb.graph());
  return {{"table", random_tensor(rng, DType::F32, {6, 4})},
          {"ids", graph::Tensor{DType::I32, {3}, {4, 0, 4}}},
          {"values", random_tensor(rng, DType::F32, {3, 4})},
          {"k", graph::Tensor{DType::I32, {3}, {3, -2, 5}}}};
}

// Validates the builder's graph and interprets it; every output by name.
inline std::map<std::string, graph::Tensor> run_all(
    const graph::GraphBuilder& b, const std::map<std::string, graph::Tensor>& inputs,
    const graph::DimValues& dv = {}) {
  graph::validate(b.graph());
  return graph::interpret(b.graph(), dv, inputs);
}

}  // namespace kiln::testing
