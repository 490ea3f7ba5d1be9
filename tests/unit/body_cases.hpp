// The target conformance set: one-op Bodies with their inputs and the interpreter's outputs,
// for every code generator's tests. A small graph per float dtype covering each op family
// (elementwise, transcendental, softmax along either axis, matmul, mean, padding), the index
// ops (Gather, Scatter), and the one-op Bodies of the examples at small dims.
#pragma once

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "examples/graphs.hpp"
#include "graph/body.hpp"
#include "graph/body_lower.hpp"
#include "graph/interpret.hpp"
#include "graph/random_inputs.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"

namespace kiln::testing {

// One kernel to check: its Body, its input buffers (as doubles) and dims.
struct BodyCase {
  std::string label;
  graph::Body body;
  std::vector<std::vector<double>> inputs;
  graph::DimValues dims;
};

// Every non-Input node of `g`, with inputs computed op by op by the Body interpreter.
inline void collect_cases(const graph::Graph& g, const graph::DimValues& dims,
                          const std::map<std::string, graph::Tensor>& feeds,
                          std::vector<BodyCase>& cases, const std::string& prefix = "") {
  using namespace graph;
  std::vector<std::vector<double>> values(g.size());
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Input) {
      values[id] = feeds.at(n.name).data;
      continue;
    }
    BodyCase c{prefix + "%" + std::to_string(id) + " " + std::string(op_name(n.op)),
               one_op_body(g, id), {}, dims};
    std::vector<const std::vector<double>*> ins;
    for (const Graph::Input& in : g.inputs(id)) {
      c.inputs.push_back(values[in.producer]);
      ins.push_back(&values[in.producer]);
    }
    std::vector<double> out(static_cast<std::size_t>(evaluate(c.body.output_size(), dims)));
    if (c.body.output_aliases()) out = *ins[*c.body.output_aliases()];
    interpret_body(c.body, ins, dims, out);
    values[id] = out;
    cases.push_back(std::move(c));
  }
}

// The conformance graphs (see the header comment), with dim seq = `rows`. The Bodies do not
// depend on it, only their inputs and outputs do.
inline std::vector<BodyCase> conformance_cases(std::int64_t rows = 9) {
  using namespace graph;
  std::vector<BodyCase> cases;
  std::mt19937 rng(3);
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    GraphBuilder gb;
    Expr seq = Expr::dim("seq");
    GraphTensor x = gb.input("x", {seq, 7}, dt);
    GraphTensor w = gb.input("w", {7, 5}, dt);
    GraphTensor t = transpose(x, 0, 1);
    (x * 2.0 + 1.0).output("affine");
    exp(t).output("exp");
    log(x * x + 1.0).output("log");
    sqrt(x * x).output("sqrt");
    sin(x).output("sin");
    recip(x + 10.0).output("recip");
    relu(x).output("relu");
    max(x, 1).output("max");
    softmax(x, 1).output("softmax");
    softmax(t, 0).output("softmax_t");
    matmul(x, w).output("matmul");
    mean(x, 0).output("mean");
    (x.with_view(x.view().pad(1, 2, 1)) + 1.0).output("pad");
    collect_cases(gb.graph(), {{"seq", rows}},
                  {{"x", random_tensor(rng, dt, {rows, 7})}, {"w", random_tensor(rng, dt, {7, 5})}},
                  cases, std::string(dtype_name(dt)) + " ");
  }
  {
    GraphBuilder gb;
    const auto feeds = build_index_ops(gb, rng);
    collect_cases(gb.graph(), {}, feeds, cases, "index ");
  }
  return cases;
}

// Every one-op Body of the examples small enough for the interpreter (the full-size language
// models are left out), at small dims.
inline std::vector<BodyCase> example_cases() {
  std::vector<BodyCase> cases;
  const graph::DimValues dims{{"batch", 3}, {"seq", 5}, {"pos", 2}};
  for (const char* name : {"mlp", "attention", "gemma3-tiny"}) {
    const examples::Example* e = examples::find_example(name);
    graph::GraphBuilder gb;
    e->build(gb);
    const graph::Graph& g = gb.graph();
    collect_cases(g, dims, graph::random_inputs(g, dims, 7), cases, std::string(name) + " ");
  }
  return cases;
}

// How far a kernel's element may be from the interpreter's, relative to 1 + |expected|.
inline double case_tolerance(graph::DType t) {
  switch (t) {
    case graph::DType::F16: return 2e-3;
    case graph::DType::BF16: return 2e-2;
    case graph::DType::F32: return 1e-5;
    default: return 1e-12;
  }
}

// The interpreter's output of `c` (its aliased input first, for Scatter).
inline std::vector<double> expected_output(const BodyCase& c) {
  std::vector<double> expected(
      static_cast<std::size_t>(graph::evaluate(c.body.output_size(), c.dims)));
  std::vector<const std::vector<double>*> ins;
  for (const auto& in : c.inputs) ins.push_back(&in);
  if (c.body.output_aliases()) expected = c.inputs[*c.body.output_aliases()];
  graph::interpret_body(c.body, ins, c.dims, expected);
  return expected;
}

}  // namespace kiln::testing
