// The kernel primitives (compiler/kernel_primitives.cpp): one-op-body builds, from an op's
// attributes and input views, the same Body as graph::one_op_body on the graph node itself;
// invalid calls fail; dtype-join, shape-drop, shape-merge and view-has-mask.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/sorts.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "graph/body_lower.hpp"
#include "graph/hlir.hpp"
#include "tests/unit/graph_program.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;
using graph::Node;
using graph::Op;
using graph::View;

using kiln::testing::GraphProgram;

using kiln::testing::make;

namespace {



std::string lit(const View& v) { return "(view \"" + graph::to_string(v) + "\")"; }

}  // namespace

TEST_CASE("kernel primitives: one-op-body equals graph::one_op_body", "[compiler]") {
  // y = softmax(exp2(cast(x @ w)), axis 1), plus a gather and a scatter, in one graph.
  graph::Graph g;
  const Expr seq = Expr::dim("seq");
  const graph::NodeId x = g.add_node(make(Op::Input, DType::F32, {seq, 8}, "x"));
  const graph::NodeId w = g.add_node(make(Op::Input, DType::F32, {8, 4}, "w"));
  const View va = View::contiguous({seq, 8}).reshape({seq, 8, 1})->expand(2, 4);
  const View vb = View::contiguous({8, 4}).reshape({1, 8, 4})->expand(0, seq);
  const graph::NodeId mul = g.add_node(make(Op::Mul, DType::F32, {seq, 8, 4}));
  g.add_edge(x, mul, 0, va);
  g.add_edge(w, mul, 1, vb);
  Node reduce = make(Op::SumReduce, DType::F32, {seq, 4});
  reduce.axis = 1;
  const graph::NodeId sum = g.add_node(reduce);
  g.add_edge(mul, sum, 0, View::contiguous({seq, 8, 4}));
  const graph::NodeId cast = g.add_node(make(Op::Cast, DType::F64, {4, seq}));
  const View transposed = View::contiguous({seq, 4}).permute({1, 0});
  g.add_edge(sum, cast, 0, transposed);
  Node soft = make(Op::Softmax, DType::F64, {4, seq});
  soft.axis = 1;
  const graph::NodeId softmax = g.add_node(soft);
  g.add_edge(cast, softmax, 0, View::contiguous({4, seq}));
  Node constant = make(Op::Constant, DType::F32, {3, 2});
  constant.value = 0.25;
  const graph::NodeId c = g.add_node(constant);
  const graph::NodeId idx = g.add_node(make(Op::Input, DType::I32, {2}, "idx"));
  const graph::NodeId gather = g.add_node(make(Op::Gather, DType::F32, {2, 8}));
  g.add_edge(x, gather, 0, View::contiguous({seq, 8}));
  g.add_edge(idx, gather, 1, View::contiguous({2}));
  const graph::NodeId scatter = g.add_node(make(Op::Scatter, DType::F32, {seq, 8}));
  g.add_edge(x, scatter, 0, View::contiguous({seq, 8}));
  g.add_edge(idx, scatter, 1, View::contiguous({2}));
  g.add_edge(gather, scatter, 2, View::contiguous({2, 8}));
  graph::validate(g);

  GraphProgram p;
  const compiler::BodySort& bodies = *p.sorts().body_sort;
  auto expected = [&](graph::NodeId id) { return bodies.make(graph::one_op_body(g, id)); };
  p.run("(let mul (one-op-body \"Mul\" \"f32\" " + lit(va) + " \"f32\" " + lit(vb) +
        " \"f32\"))\n" +
        "(let sum (one-op-body \"SumReduce\" \"f32\" 1 " + lit(View::contiguous({seq, 8, 4})) +
        " \"f32\"))\n" + "(let cast (one-op-body \"Cast\" \"f64\" 0 " + lit(transposed) +
        " \"f32\"))\n" + "(let softmax (one-op-body \"Softmax\" \"f64\" 1 " +
        lit(View::contiguous({4, seq})) + " \"f64\"))\n" +
        "(let c (one-op-body \"Constant\" \"f32\" (shape \"[3, 2]\") 0.25))\n" +
        "(let gather (one-op-body \"Gather\" \"f32\" (view-contiguous \"[seq, 8]\") \"f32\" "
        "(view-contiguous \"[2]\") \"i32\"))\n" +
        "(let scatter (one-op-body \"Scatter\" \"f32\" (view-contiguous \"[seq, 8]\") \"f32\" "
        "(view-contiguous \"[2]\") \"i32\" (view-contiguous \"[2, 8]\") \"f32\"))\n");
  CHECK(p.value_of("mul") == expected(mul));
  CHECK(p.value_of("sum") == expected(sum));
  CHECK(p.value_of("cast") == expected(cast));
  CHECK(p.value_of("softmax") == expected(softmax));
  CHECK(p.value_of("c") == expected(c));
  CHECK(p.value_of("gather") == expected(gather));
  CHECK(p.value_of("scatter") == expected(scatter));
  // Different ops give different Bodies (the comparison above can fail).
  CHECK(p.value_of("sum") != p.value_of("mul"));
  CHECK(bodies.get(p.value_of("softmax")).key() == graph::one_op_body(g, softmax).key());
}

TEST_CASE("kernel primitives: one-op-body fails on what is not a valid node", "[compiler]") {
  GraphProgram p;
  const std::string v = "(view-contiguous \"[4, 8]\")";
  // An unknown op, an unknown dtype, a wrong arity for the op, Input (no Body).
  CHECK_FALSE(p.holds("(= b (one-op-body \"Frob\" \"f32\" 0 " + v + " \"f32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"Exp2\" \"f17\" 0 " + v + " \"f32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"Add\" \"f32\" 0 " + v + " \"f32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"Input\" \"f32\" 0 " + v + " \"f32\"))"));
  // Dtypes or shapes the op contract rejects; an axis out of range.
  CHECK_FALSE(p.holds("(= b (one-op-body \"Exp2\" \"f32\" 0 " + v + " \"i32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"Add\" \"f32\" " + v + " \"f32\" " +
                      "(view-contiguous \"[4, 9]\") \"f32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"SumReduce\" \"f32\" 2 " + v + " \"f32\"))"));
  CHECK_FALSE(p.holds("(= b (one-op-body \"Softmax\" \"f32\" -1 " + v + " \"f32\"))"));
  // What graph::one_op_body does not support: a Scatter into a transposed destination.
  CHECK_FALSE(p.holds("(= b (one-op-body \"Scatter\" \"f32\" (view-permute " + v +
                      " 1 0) \"f32\" (view-contiguous \"[2]\") \"i32\" (view-contiguous "
                      "\"[2, 4]\") \"f32\"))"));
  // In an action a failure is a located run-time error.
  CHECK_THROWS_AS(p.run("(let b (one-op-body \"Frob\" \"f32\" (shape \"[2]\") 1.0))"),
                  support::RuntimeFailure);
  // The valid forms of the same calls succeed.
  CHECK(p.holds("(= (body-inputs (one-op-body \"Exp2\" \"f32\" 0 " + v + " \"f32\")) 1)"));
  CHECK(p.holds("(= (body-loops (one-op-body \"SumReduce\" \"f32\" 1 " + v + " \"f32\")) 1)"));
  CHECK(p.holds("(= (body-inputs (one-op-body \"Iota\" \"i32\" (shape \"[4]\") 0.0)) 0)"));
}

TEST_CASE("kernel primitives: dtype-join, shape-drop, shape-merge, view-has-mask",
          "[compiler]") {
  GraphProgram p;
  CHECK(p.holds("(= (dtype-join \"f32\" \"f32\") \"f32\")"));
  CHECK_FALSE(p.holds("(= (dtype-join \"f32\" \"f16\") x)"));
  CHECK(p.holds("(= (shape-drop (shape \"[1, seq, 4]\") 0) (shape \"[seq, 4]\"))"));
  CHECK(p.holds("(= (shape-drop (shape \"[1, seq, 4]\") 2) (shape \"[1, seq]\"))"));
  CHECK_FALSE(p.holds("(= (shape-drop (shape \"[1, seq, 4]\") 3) s)"));
  CHECK(p.holds("(= (shape-merge (shape \"[2, seq, 4]\") 0) (shape \"[2*seq, 4]\"))"));
  CHECK(p.holds("(= (shape-merge (shape \"[2, seq, 4]\") 1) (shape \"[2, 4*seq]\"))"));
  CHECK_FALSE(p.holds("(= (shape-merge (shape \"[2, seq, 4]\") 2) s)"));
  CHECK_FALSE(p.holds("(= (shape-merge (shape \"[2, seq, 4]\") -1) s)"));
  CHECK(p.holds("(= (view-has-mask (view-contiguous \"[4]\")) false)"));
  CHECK(p.holds("(= (view-has-mask (view-pad (view-contiguous \"[4]\") 0 (expr 1) (expr 0))) "
                "true)"));
}
