// The reference interpreter: primops against hand-computed values and identities.
#include <catch2/catch.hpp>

#include "tests/unit/test_util.hpp"

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/graph_fixtures.hpp"
#include "graph/dtype.hpp"
#include "graph/hlir.hpp"
#include "graph/interpret.hpp"
#include "support/diagnostic.hpp"

using namespace kiln::graph;
using kiln::support::UserError;

using kiln::testing::make;

namespace {


NodeId input(Graph& g, const std::string& name, std::vector<Expr> shape,
             DType dtype = DType::F32) {
  return g.add_node(make(Op::Input, dtype, std::move(shape), name));
}

// A node reading `ins` contiguously in the output shape (elementwise ops).
NodeId unary(Graph& g, Op op, NodeId in, DType dtype, std::vector<Expr> shape) {
  NodeId id = g.add_node(make(op, dtype, shape));
  g.add_edge(in, id, 0, View::contiguous(shape));
  return id;
}

NodeId binary(Graph& g, Op op, NodeId a, NodeId b, DType dtype, std::vector<Expr> shape) {
  NodeId id = g.add_node(make(op, dtype, shape));
  g.add_edge(a, id, 0, View::contiguous(shape));
  g.add_edge(b, id, 1, View::contiguous(shape));
  return id;
}

void output(Graph& g, const std::string& name, NodeId in, View view) {
  NodeId id = g.add_node(make(Op::Output, g.node(in).dtype, view.shape(), name));
  g.add_edge(in, id, 0, std::move(view));
}

void output(Graph& g, const std::string& name, NodeId in) {
  output(g, name, in, View::contiguous(g.node(in).shape));
}

std::string error_of(const Graph& g, const DimValues& dims,
                     const std::map<std::string, Tensor>& inputs) {
  return kiln::testing::user_error_of([&] { interpret(g, dims, inputs); });
}

using kiln::testing::contains;

}  // namespace

TEST_CASE("interpret: elementwise ops match hand-computed values [graph]", "[graph]") {
  Graph g;
  std::vector<Expr> s{4};
  NodeId a = input(g, "a", s);
  NodeId b = input(g, "b", s);
  output(g, "exp2", unary(g, Op::Exp2, a, DType::F32, s));
  output(g, "log2", unary(g, Op::Log2, b, DType::F32, s));
  output(g, "sin", unary(g, Op::Sin, a, DType::F32, s));
  output(g, "recip", unary(g, Op::Recip, b, DType::F32, s));
  output(g, "sqrt", unary(g, Op::Sqrt, b, DType::F32, s));
  output(g, "add", binary(g, Op::Add, a, b, DType::F32, s));
  output(g, "mul", binary(g, Op::Mul, a, b, DType::F32, s));
  output(g, "mod", binary(g, Op::Mod, a, b, DType::F32, s));
  output(g, "lt", binary(g, Op::LessThan, a, b, DType::Bool, s));
  output(g, "cast", unary(g, Op::Cast, a, DType::I32, s));
  Node c = make(Op::Constant, DType::F32, s);
  c.value = 0.1;
  output(g, "const", g.add_node(c));
  output(g, "iota", g.add_node(make(Op::Iota, DType::I32, {2, 3})));

  std::map<std::string, Tensor> in{{"a", {DType::F32, {4}, {0, 1, -2.5, 3}}},
                                   {"b", {DType::F32, {4}, {1, 4, 0.5, 2}}}};
  auto r = interpret(g, {}, in);
  CHECK(r.at("exp2").data == std::vector<double>{1, 2, static_cast<float>(0.25 * std::sqrt(0.5)), 8});
  CHECK(r.at("log2").data == std::vector<double>{0, 2, -1, 1});
  CHECK(r.at("sin").data[1] == static_cast<float>(std::sin(1.0)));
  CHECK(r.at("recip").data == std::vector<double>{1, 0.25, 2, 0.5});
  CHECK(r.at("sqrt").data == std::vector<double>{1, 2, static_cast<float>(std::sqrt(0.5)),
                                                 static_cast<float>(std::sqrt(2.0))});
  CHECK(r.at("add").data == std::vector<double>{1, 5, -2, 5});
  CHECK(r.at("mul").data == std::vector<double>{0, 4, -1.25, 6});
  CHECK(r.at("mod").data == std::vector<double>{0, 1, -0.0, 1});  // fmod: sign of dividend
  CHECK(r.at("lt").dtype == DType::Bool);
  CHECK(r.at("lt").data == std::vector<double>{1, 1, 1, 0});
  CHECK(r.at("cast").data == std::vector<double>{0, 1, -2, 3});  // truncated toward zero
  CHECK(r.at("const").data[0] == static_cast<double>(0.1f));     // rounded to f32
  CHECK(r.at("iota").shape == std::vector<std::int64_t>{2, 3});
  CHECK(r.at("iota").data == std::vector<double>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("interpret: floats in double skip the per-node rounding, integers still round",
          "[graph]") {
  Graph g;
  std::vector<Expr> s{2};
  NodeId a = input(g, "a", s);
  Node c = make(Op::Constant, DType::F32, s);
  c.value = 0.1;
  const NodeId tenth = g.add_node(c);
  const NodeId sum = binary(g, Op::Add, a, tenth, DType::F32, s);
  const NodeId cast = unary(g, Op::Cast, sum, DType::I32, s);
  output(g, "sum", sum);
  output(g, "cast", cast);
  const std::map<std::string, Tensor> in{{"a", {DType::F32, {2}, {1.0, 2.9}}}};
  const auto rounded = interpret_all(g, {}, in);
  const auto exact = interpret_all(g, {}, in, Rounding::FloatsInDouble);
  CHECK(rounded[tenth][0] == static_cast<double>(0.1f));
  CHECK(exact[tenth][0] == 0.1);
  CHECK(exact[sum][0] == 1.0 + 0.1);
  CHECK(rounded[sum][0] == static_cast<double>(static_cast<float>(1.0 + static_cast<double>(0.1f))));
  CHECK(exact[cast] == std::vector<double>{1, 3});  // truncated as an i32 either way
  CHECK(rounded[cast] == std::vector<double>{1, 3});
}

TEST_CASE("interpret: integer Mod is a floor modulus [graph]", "[graph]") {
  Graph g;
  NodeId a = input(g, "a", {4}, DType::I32);
  NodeId b = input(g, "b", {4}, DType::I32);
  output(g, "m", binary(g, Op::Mod, a, b, DType::I32, {4}));
  auto r = interpret(g, {}, {{"a", {DType::I32, {4}, {7, -7, 7, -7}}},
                             {"b", {DType::I32, {4}, {3, 3, -3, -3}}}});
  CHECK(r.at("m").data == std::vector<double>{1, 2, -2, -1});
  CHECK(contains(error_of(g, {}, {{"a", {DType::I32, {4}, {1, 1, 1, 1}}},
                                  {"b", {DType::I32, {4}, {1, 0, 1, 1}}}}),
                 "modulus by zero"));
}

TEST_CASE("interpret: results are rounded to the node's dtype [graph]", "[graph]") {
  CHECK(round_to_dtype(1.0 + std::ldexp(1.0, -11), DType::F16) == 1.0);  // a tie, to even
  CHECK(round_to_dtype(1.0 + std::ldexp(3.0, -11), DType::F16) == 1.0 + std::ldexp(1.0, -9));
  CHECK(round_to_dtype(65504.0, DType::F16) == 65504.0);
  CHECK(std::isinf(round_to_dtype(70000.0, DType::F16)));
  CHECK(round_to_dtype(std::ldexp(1.0, -24), DType::F16) == std::ldexp(1.0, -24));  // subnormal
  CHECK(round_to_dtype(1.0 + std::ldexp(1.0, -9), DType::BF16) == 1.0);
  CHECK(round_to_dtype(3.0 + 1.0 / 128, DType::BF16) == 3.0);  // a tie, to even
  CHECK(round_to_dtype(3.0 + 1.0 / 64, DType::BF16) == 3.0 + 1.0 / 64);
  CHECK(round_to_dtype(-2.7, DType::I64) == -2.0);
  CHECK(round_to_dtype(300.0, DType::U8) == 255.0);
  CHECK(round_to_dtype(-0.5, DType::Bool) == 1.0);
  CHECK(round_to_dtype(0.1, DType::F64) == 0.1);
}

TEST_CASE("interpret: a matmul of broadcast Mul and SumReduce matches a triple loop [graph]",
          "[graph]") {
  const std::int64_t m = 5, k = 7, n = 3;
  Graph g;
  NodeId x = input(g, "x", {m, k}, DType::F64);
  NodeId w = input(g, "w", {k, n}, DType::F64);
  NodeId mul = g.add_node(make(Op::Mul, DType::F64, {m, k, n}));
  g.add_edge(x, mul, 0, View::contiguous({m, k}).reshape({m, k, 1})->expand(2, n));
  g.add_edge(w, mul, 1, View::contiguous({k, n}).reshape({1, k, n})->expand(0, m));
  Node reduce = make(Op::SumReduce, DType::F64, {m, n});
  reduce.axis = 1;
  NodeId sum = g.add_node(reduce);
  g.add_edge(mul, sum, 0, View::contiguous({m, k, n}));
  output(g, "y", sum);

  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor tx{DType::F64, {m, k}, {}}, tw{DType::F64, {k, n}, {}};
  for (std::int64_t i = 0; i < m * k; ++i) tx.data.push_back(dist(rng));
  for (std::int64_t i = 0; i < k * n; ++i) tw.data.push_back(dist(rng));
  Tensor y = interpret(g, {}, {{"x", tx}, {"w", tw}}).at("y");
  REQUIRE(y.shape == std::vector<std::int64_t>{m, n});
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double expected = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        expected += tx.data[static_cast<std::size_t>(i * k + p)] *
                    tw.data[static_cast<std::size_t>(p * n + j)];
      }
      CHECK(y.data[static_cast<std::size_t>(i * n + j)] == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("interpret: MaxReduce takes the maximum along its axis [graph]", "[graph]") {
  Graph g;
  NodeId x = input(g, "x", {2, 3});
  Node reduce = make(Op::MaxReduce, DType::F32, {3});
  reduce.axis = 0;
  NodeId mx = g.add_node(reduce);
  g.add_edge(x, mx, 0, View::contiguous({2, 3}));
  output(g, "y", mx);
  auto r = interpret(g, {}, {{"x", {DType::F32, {2, 3}, {1, -5, 3, 0, -2, 4}}}});
  CHECK(r.at("y").data == std::vector<double>{1, -2, 4});
}

TEST_CASE("interpret: softmax rows sum to 1 and match the formula [graph]", "[graph]") {
  Graph g;
  NodeId x = input(g, "x", {3, 4}, DType::F64);
  Node sm = make(Op::Softmax, DType::F64, {3, 4});
  sm.axis = 1;
  NodeId s = g.add_node(sm);
  g.add_edge(x, s, 0, View::contiguous({3, 4}));
  output(g, "y", s);
  std::vector<double> data{1, 2, 3, 4, -1, 0, 1, 1000, 0.5, 0.5, 0.5, 0.5};
  Tensor y = interpret(g, {}, {{"x", {DType::F64, {3, 4}, data}}}).at("y");
  for (std::size_t row = 0; row < 3; ++row) {
    double total = 0.0, denom = 0.0, mx = data[row * 4];
    for (std::size_t c = 0; c < 4; ++c) mx = std::max(mx, data[row * 4 + c]);
    for (std::size_t c = 0; c < 4; ++c) denom += std::exp(data[row * 4 + c] - mx);
    for (std::size_t c = 0; c < 4; ++c) {
      total += y.data[row * 4 + c];
      CHECK(y.data[row * 4 + c] == Approx(std::exp(data[row * 4 + c] - mx) / denom));
    }
    CHECK(total == Approx(1.0));
  }
  CHECK(y.data[7] == Approx(1.0));  // no overflow for a large logit
  CHECK(y.data[8] == Approx(0.25));
}

TEST_CASE("interpret: a permuted view reads the transpose [graph]", "[graph]") {
  Graph g;
  NodeId x = input(g, "x", {2, 3});
  output(g, "t", x, View::contiguous({2, 3}).permute({1, 0}));
  Tensor t = interpret(g, {}, {{"x", {DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}}}}).at("t");
  CHECK(t.shape == std::vector<std::int64_t>{3, 2});
  CHECK(t.data == std::vector<double>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("interpret: a padded view reads zeros outside its data [graph]", "[graph]") {
  Graph g;
  NodeId x = input(g, "x", {2, 2});
  output(g, "p", x, View::contiguous({2, 2}).pad(1, 1, 2).pad(0, 0, 1));
  Tensor p = interpret(g, {}, {{"x", {DType::F32, {2, 2}, {1, 2, 3, 4}}}}).at("p");
  CHECK(p.shape == std::vector<std::int64_t>{3, 5});
  CHECK(p.data == std::vector<double>{0, 1, 2, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0});
  // A slice of the padded view takes real data and padding alike.
  Graph h;
  NodeId hx = input(h, "x", {2, 2});
  output(h, "s", hx, View::contiguous({2, 2}).pad(1, 1, 0).slice(1, 1, 3));
  CHECK(interpret(h, {}, {{"x", {DType::F32, {2, 2}, {1, 2, 3, 4}}}}).at("s").data ==
        std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("interpret: gather looks up embedding rows [graph]", "[graph]") {
  Graph g;
  NodeId table = input(g, "table", {4, 2});
  NodeId ids = input(g, "ids", {3}, DType::I32);
  NodeId gather = g.add_node(make(Op::Gather, DType::F32, {3, 2}));
  g.add_edge(table, gather, 0, View::contiguous({4, 2}));
  g.add_edge(ids, gather, 1, View::contiguous({3}));
  output(g, "e", gather);
  Tensor t{DType::F32, {4, 2}, {0, 1, 10, 11, 20, 21, 30, 31}};
  auto r = interpret(g, {}, {{"table", t}, {"ids", {DType::I32, {3}, {2, 0, 2}}}});
  CHECK(r.at("e").shape == std::vector<std::int64_t>{3, 2});
  CHECK(r.at("e").data == std::vector<double>{20, 21, 0, 1, 20, 21});
  CHECK(contains(error_of(g, {}, {{"table", t}, {"ids", {DType::I32, {3}, {0, 4, 1}}}}),
                 "index 4 is out of range for 4 rows"));
}

TEST_CASE("interpret: scatter replaces rows of its destination [graph]", "[graph]") {
  Graph g;
  NodeId cache = input(g, "cache", {4, 2});
  NodeId pos = input(g, "pos", {2}, DType::I64);
  NodeId vals = input(g, "vals", {2, 2});
  NodeId scatter = g.add_node(make(Op::Scatter, DType::F32, {4, 2}));
  g.add_edge(cache, scatter, 0, View::contiguous({4, 2}));
  g.add_edge(pos, scatter, 1, View::contiguous({2}));
  g.add_edge(vals, scatter, 2, View::contiguous({2, 2}));
  output(g, "c", scatter);
  auto r = interpret(g, {}, {{"cache", {DType::F32, {4, 2}, {0, 0, 0, 0, 0, 0, 0, 0}}},
                             {"pos", {DType::I64, {2}, {3, 1}}},
                             {"vals", {DType::F32, {2, 2}, {5, 6, 7, 8}}}});
  CHECK(r.at("c").data == std::vector<double>{0, 0, 7, 8, 0, 0, 5, 6});
}

TEST_CASE("interpret: a symbolic dim is bound at run time [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  Graph g;
  NodeId x = input(g, "x", {seq, 2});
  NodeId b = input(g, "b", {2});
  NodeId add = g.add_node(make(Op::Add, DType::F32, {seq, 2}));
  g.add_edge(x, add, 0, View::contiguous({seq, 2}));
  g.add_edge(b, add, 1, View::contiguous({2}).reshape({1, 2})->expand(0, seq));
  output(g, "y", add);
  Tensor bias{DType::F32, {2}, {10, 20}};

  auto r1 = interpret(g, {{"seq", 1}}, {{"x", {DType::F32, {1, 2}, {1, 2}}}, {"b", bias}});
  CHECK(r1.at("y").shape == std::vector<std::int64_t>{1, 2});
  CHECK(r1.at("y").data == std::vector<double>{11, 22});
  auto r3 = interpret(g, {{"seq", 3}},
                      {{"x", {DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6}}}, {"b", bias}});
  CHECK(r3.at("y").shape == std::vector<std::int64_t>{3, 2});
  CHECK(r3.at("y").data == std::vector<double>{11, 22, 13, 24, 15, 26});

  CHECK(contains(error_of(g, {}, {{"x", {DType::F32, {1, 2}, {1, 2}}}, {"b", bias}}), "seq"));
  CHECK(contains(error_of(g, {{"seq", 2}}, {{"x", {DType::F32, {1, 2}, {1, 2}}}, {"b", bias}}),
                 "input \"x\" has shape [1, 2], expected [2, 2]"));
}

TEST_CASE("interpret: a missing input and a CustomOp are errors [graph]", "[graph]") {
  Graph g;
  NodeId x = input(g, "x", {2});
  output(g, "y", unary(g, Op::Exp2, x, DType::F32, {2}));
  CHECK(contains(error_of(g, {}, {}), "missing input \"x\""));
  CHECK(contains(error_of(g, {}, {{"x", {DType::F64, {2}, {1, 2}}}}), "dtype f64"));

  Graph h;
  NodeId hx = input(h, "x", {2});
  NodeId custom = h.add_node(make(Op::CustomOp, DType::F32, {2}, "my_kernel"));
  h.add_edge(hx, custom, 0, View::contiguous({2}));
  output(h, "y", custom);
  std::string err = error_of(h, {}, {{"x", {DType::F32, {2}, {1, 2}}}});
  CHECK(contains(err, "my_kernel"));
  CHECK(contains(err, "not supported by the interpreter"));
}

TEST_CASE("binary16 bits and values round-trip for every pattern", "[dtype]") {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const double v = half_value(bits);
    INFO("bits " << b);
    if (std::isnan(v)) {
      CHECK(half_bits(v) == 0x7e00);
      continue;
    }
    CHECK(half_bits(v) == bits);
    CHECK(round_to_dtype(v, DType::F16) == v);  // every half value is one the interpreter keeps
  }
  CHECK(half_value(half_bits(1.0 + 1.0 / 4096)) == 1.0);          // ties to even
  CHECK(half_value(half_bits(65520.0)) == std::numeric_limits<double>::infinity());
  CHECK(half_bits(std::ldexp(1.0, -25)) == 0);                     // half of the least subnormal
}
