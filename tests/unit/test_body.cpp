// The Body IR: one-op Bodies of HLIR nodes, run by the Body interpreter op by op, agree with the
// HLIR interpreter; printing, hash-consing and keys are deterministic.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_lower.hpp"
#include "graph/interpret.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::random_tensor;
using kiln::testing::user_error_of;

namespace {

// Runs `g` one node at a time through the one-op Bodies (what the runtime will do with one
// kernel per op) and returns the Output values by name.
std::map<std::string, Tensor> run_by_bodies(const Graph& g, const DimValues& dims,
                                            const std::map<std::string, Tensor>& inputs) {
  std::vector<std::vector<double>> values(g.size());
  std::map<std::string, Tensor> outputs;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Input) {
      values[id] = inputs.at(n.name).data;
      continue;
    }
    Body body = one_op_body(g, id);
    std::vector<const std::vector<double>*> ins;
    for (const Graph::Input& in : g.inputs(id)) ins.push_back(&values[in.producer]);
    std::vector<double> out(static_cast<std::size_t>(evaluate(body.output_size(), dims)), 0.0);
    if (body.output_aliases()) out = *ins[*body.output_aliases()];
    interpret_body(body, ins, dims, out);
    if (n.op == Op::Output) {
      std::vector<std::int64_t> shape;
      for (const Expr& d : n.shape) shape.push_back(evaluate(d, dims));
      outputs[n.name] = Tensor{n.dtype, shape, out};
    }
    values[id] = std::move(out);
  }
  return outputs;
}

void check_same(const std::map<std::string, Tensor>& expected,
                const std::map<std::string, Tensor>& actual, double tolerance) {
  REQUIRE(expected.size() == actual.size());
  for (const auto& [name, want] : expected) {
    const Tensor& got = actual.at(name);
    REQUIRE(got.shape == want.shape);
    REQUIRE(got.data.size() == want.data.size());
    for (std::size_t i = 0; i < want.data.size(); ++i) {
      INFO(name << "[" << i << "]");
      CHECK(std::fabs(got.data[i] - want.data[i]) <=
            tolerance * (1.0 + std::fabs(want.data[i])));
    }
  }
}

void check_graph(GraphBuilder& gb, const DimValues& dims,
                 const std::map<std::string, Tensor>& inputs, double tolerance = 1e-6) {
  check_same(interpret(gb.graph(), dims, inputs), run_by_bodies(gb.graph(), dims, inputs),
             tolerance);
}

}  // namespace

TEST_CASE("one-op bodies of elementwise ops read through views", "[body]") {
  std::mt19937 rng(7);
  GraphBuilder gb;
  Expr seq = Expr::dim("seq");
  GraphTensor x = gb.input("x", {seq, 3}, DType::F32);
  GraphTensor y = gb.input("y", {3}, DType::F32);
  GraphTensor t = transpose(x, 0, 1);                        // [3, seq], strided
  (x * y + 1.5).output("affine");                            // broadcast y, a constant
  exp(t).output("exp");
  log(x * x + 1.0).output("log");
  sqrt(x * x).output("sqrt");
  recip(x + 10.0).output("recip");
  sin(t).output("sin");
  relu(x).output("relu");                                    // LessThan, Cast
  GraphTensor padded = x.with_view(x.view().pad(1, 1, 2));   // [seq, 6], zeros around
  (padded + 1.0).output("pad");
  check_graph(gb, {{"seq", 4}}, {{"x", random_tensor(rng, DType::F32, {4, 3})},
                                 {"y", random_tensor(rng, DType::F32, {3})}});
}

TEST_CASE("one-op bodies of reductions, softmax and matmul", "[body]") {
  std::mt19937 rng(11);
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  GraphTensor a = gb.input("a", {n, 5}, DType::F64);
  GraphTensor b = gb.input("b", {5, 4}, DType::F64);
  sum(a, 1).output("sum1");
  sum(a, 0).output("sum0");
  max(a, 0).output("max0");
  softmax(a, 1).output("softmax1");
  softmax(transpose(a, 0, 1), 1).output("softmax_t");
  matmul(a, b).output("matmul");
  mean(a, 0).output("mean_symbolic");                        // Iota, MaxReduce over a dim
  check_graph(gb, {{"n", 3}}, {{"a", random_tensor(rng, DType::F64, {3, 5})},
                               {"b", random_tensor(rng, DType::F64, {5, 4})}},
              1e-12);
}

TEST_CASE("one-op bodies of integer ops, gather and scatter", "[body]") {
  std::mt19937 rng(5);
  GraphBuilder gb;
  const auto feeds = kiln::testing::build_index_ops(gb, rng);
  check_graph(gb, {}, feeds);
}

TEST_CASE("Body text is deterministic and nodes are hash-consed", "[body]") {
  BodyBuilder b({DType::F32});
  Expr i = b.output_loop(Expr::dim("n"));
  ScalarId x1 = b.load(0, i);
  ScalarId x2 = b.load(0, i);
  CHECK(x1 == x2);
  ScalarId sq = b.binary(ScalarOp::Mul, x1, x2);
  b.constant(3.0, DType::F32);  // unused: not printed
  Body body = b.finish(sq, Expr::dim("n"), i);
  const std::string text = to_text(body);
  CHECK(text ==
        "body f32 (in0 f32)\n"
        "  %0 = load f32 in0[o0]\n"
        "  %1 = mul f32 %0 %0\n"
        "  loop o0 < n\n"
        "  store [o0] of n = %1\n");

  BodyBuilder c({DType::F32});
  Expr j = c.output_loop(Expr::dim("n"));
  ScalarId y = c.load(0, j);
  Body same = c.finish(c.binary(ScalarOp::Mul, y, y), Expr::dim("n"), j);
  CHECK(same == body);
  CHECK(same.key() == body.key());

  BodyBuilder d({DType::F32});
  Expr k = d.output_loop(Expr::dim("n"));
  ScalarId z = d.load(0, k);
  Body other = d.finish(d.binary(ScalarOp::Add, z, z), Expr::dim("n"), k);
  CHECK_FALSE(other.key() == body.key());
}

TEST_CASE("a user-defined monoid: the online softmax triple", "[body]") {
  // state (m, l): running max and running sum of exp(x - m); finalize l. Must equal
  // sum(exp(x - max(x))) computed in two passes.
  const DType f = DType::F64;
  BodyBuilder b({f});
  Expr row = b.output_loop(Expr(2));
  auto e = [&](ScalarId v) {
    return b.unary(ScalarOp::Exp2, b.binary(ScalarOp::Mul, v, b.constant(1.0 / std::log(2.0), f)));
  };
  auto minus = [&](ScalarId a, ScalarId c) {
    return b.binary(ScalarOp::Add, a, b.binary(ScalarOp::Mul, c, b.constant(-1.0, f)));
  };
  Monoid online;
  online.name = "online_sum_exp";
  online.elements = 1;
  online.identity = {-INFINITY, 0.0};
  online.lift = {b.param(0, f), b.constant(1.0, f)};
  ScalarId m1 = b.param(0, f), l1 = b.param(1, f), m2 = b.param(2, f), l2 = b.param(3, f);
  ScalarId m = b.binary(ScalarOp::Max, m1, m2);
  // exp(-inf - -inf) is NaN: guard the identity by selecting 0 when a side's sum is 0.
  auto scaled = [&](ScalarId l, ScalarId mk) {
    ScalarId zero = b.constant(0.0, f);
    return b.select(b.less_than(zero, l, f), b.binary(ScalarOp::Mul, l, e(minus(mk, m))), zero);
  };
  online.combine = {m, b.binary(ScalarOp::Add, scaled(l1, m1), scaled(l2, m2))};
  online.finalize = l1;
  std::size_t id = b.add_monoid(online);
  std::string r = b.reduce_var();
  ScalarId total = b.reduce(id, r, Expr(5), {b.load(0, row * 5 + Expr::dim(r))}, f);
  Body body = b.finish(total, Expr(2), row);
  CHECK(contains(to_text(body), "m0 online_sum_exp 1: identity -inf 0;"));

  std::vector<double> x = {0.5, -1.0, 3.0, 2.0, 0.25, 10.0, 9.5, -3.0, 0.0, 1.0};
  std::vector<double> out(2);
  interpret_body(body, {&x}, {}, out);
  for (int rrow = 0; rrow < 2; ++rrow) {
    double mx = -INFINITY, s = 0.0;
    for (int i = 0; i < 5; ++i) mx = std::max(mx, x[static_cast<std::size_t>(rrow * 5 + i)]);
    for (int i = 0; i < 5; ++i) s += std::exp(x[static_cast<std::size_t>(rrow * 5 + i)] - mx);
    CHECK(out[static_cast<std::size_t>(rrow)] == Approx(s).epsilon(1e-12));
  }
}

TEST_CASE("one_op_body rejects ops without a kernel and bad rows", "[body]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr(2)});
  CHECK(contains(user_error_of([&] { one_op_body(gb.graph(), x.node()); }),
                 "%0 (Input): has no kernel of its own"));
  GraphTensor table = gb.input("table", {Expr(2), Expr(2)});
  GraphTensor ids = gb.input("ids", {Expr(1)}, DType::I32);
  Node gather;
  gather.op = Op::Gather;
  gather.shape = {Expr(1), Expr(2)};
  GraphTensor out = gb.add(gather, {table, ids});
  Body body = one_op_body(gb.graph(), out.node());
  std::vector<double> t = {1, 2, 3, 4}, bad = {2};
  std::vector<double> result(2);
  CHECK(contains(user_error_of([&] { interpret_body(body, {&t, &bad}, {}, result); }),
                 "row 2.000000 is out of range for 2 rows"));
}
