// The GraphTensor API: graphs built with it, run by the reference interpreter, against direct
// computations.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"
#include "support/diagnostic.hpp"

using namespace kiln::graph;
using kiln::support::UserError;

using kiln::testing::random_tensor;
using kiln::testing::user_error_of;
using kiln::testing::dims;

namespace {

Tensor run(const GraphBuilder& b, const std::map<std::string, Tensor>& inputs,
           const std::string& out = "y", const DimValues& dv = {}) {
  validate(b.graph());
  return interpret(b.graph(), dv, inputs).at(out);
}


}  // namespace

TEST_CASE("tensor: elementwise ops broadcast size-1 dims and scalars [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}), DType::F64);
  GraphTensor r = b.input("r", dims({3}), DType::F64);     // a row, broadcast over dim 0
  GraphTensor c = b.input("c", dims({2, 1}), DType::F64);  // a column, broadcast over dim 1
  ((x + r) * c - x / (r * r + 1.0) + 2.0 * exp(sin(x)) - log(sqrt(c * c + 1.0)) + relu(x))
      .output("y");
  CHECK(b.graph().node(b.graph().size() - 1).shape == dims({2, 3}));
  Tensor tx = random_tensor({2, 3}, 1), tr = random_tensor({3}, 2), tc = random_tensor({2, 1}, 3);
  Tensor y = run(b, {{"x", tx}, {"r", tr}, {"c", tc}});
  REQUIRE(y.shape == std::vector<std::int64_t>{2, 3});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      double xv = tx.data[i * 3 + j], rv = tr.data[j], cv = tc.data[i];
      double want = (xv + rv) * cv - xv / (rv * rv + 1.0) + 2.0 * std::exp(std::sin(xv)) -
                    std::log(std::sqrt(cv * cv + 1.0)) + (xv > 0 ? xv : 0.0);
      CHECK(y.data[i * 3 + j] == Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("tensor: matmul matches a triple loop [graph]") {
  GraphBuilder b;
  GraphTensor a = b.input("a", dims({3, 4}), DType::F64);
  GraphTensor w = b.input("w", dims({4, 5}), DType::F64);
  matmul(a, w).output("y");
  Tensor ta = random_tensor({3, 4}, 4), tw = random_tensor({4, 5}, 5);
  Tensor y = run(b, {{"a", ta}, {"w", tw}});
  REQUIRE(y.shape == std::vector<std::int64_t>{3, 5});
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      double want = 0;
      for (int k = 0; k < 4; ++k) want += ta.data[i * 4 + k] * tw.data[k * 5 + j];
      CHECK(y.data[i * 5 + j] == Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("tensor: batched matmul matches a loop, also with a shared 2-D rhs [graph]") {
  GraphBuilder b;
  GraphTensor a = b.input("a", dims({2, 3, 4}), DType::F64);
  GraphTensor w = b.input("w", dims({2, 4, 5}), DType::F64);
  GraphTensor v = b.input("v", dims({4, 5}), DType::F64);
  matmul(a, w).output("y");
  matmul(a, v).output("z");
  Tensor ta = random_tensor({2, 3, 4}, 6), tw = random_tensor({2, 4, 5}, 7),
         tv = random_tensor({4, 5}, 8);
  validate(b.graph());
  auto outs = interpret(b.graph(), {}, {{"a", ta}, {"w", tw}, {"v", tv}});
  REQUIRE(outs.at("y").shape == std::vector<std::int64_t>{2, 3, 5});
  REQUIRE(outs.at("z").shape == std::vector<std::int64_t>{2, 3, 5});
  for (int n = 0; n < 2; ++n) {
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 5; ++j) {
        double want_y = 0, want_z = 0;
        for (int k = 0; k < 4; ++k) {
          want_y += ta.data[n * 12 + i * 4 + k] * tw.data[n * 20 + k * 5 + j];
          want_z += ta.data[n * 12 + i * 4 + k] * tv.data[k * 5 + j];
        }
        CHECK(outs.at("y").data[n * 15 + i * 5 + j] == Approx(want_y).epsilon(1e-12));
        CHECK(outs.at("z").data[n * 15 + i * 5 + j] == Approx(want_z).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("tensor: softmax rows sum to 1 and max reduces [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({4, 6}), DType::F64);
  softmax(x, 1).output("y");
  max(x, 1).output("m");
  Tensor tx = random_tensor({4, 6}, 9);
  validate(b.graph());
  auto outs = interpret(b.graph(), {}, {{"x", tx}});
  for (int i = 0; i < 4; ++i) {
    double total = 0, biggest = -INFINITY;
    for (int j = 0; j < 6; ++j) {
      total += outs.at("y").data[i * 6 + j];
      biggest = std::max(biggest, tx.data[i * 6 + j]);
    }
    CHECK(total == Approx(1.0).epsilon(1e-12));
    CHECK(outs.at("m").data[i] == biggest);
  }
}

TEST_CASE("tensor: mean over constant and symbolic dims [graph]") {
  GraphBuilder b;
  Expr seq = Expr::dim("seq");
  GraphTensor x = b.input("x", {Expr(3), seq}, DType::F64);
  mean(x, 1).output("y");
  mean(x, 0).output("z");
  Tensor tx = random_tensor({3, 5}, 10);
  validate(b.graph());
  auto outs = interpret(b.graph(), {{"seq", 5}}, {{"x", tx}});
  for (int i = 0; i < 3; ++i) {
    double want = 0;
    for (int j = 0; j < 5; ++j) want += tx.data[i * 5 + j];
    CHECK(outs.at("y").data[i] == Approx(want / 5).epsilon(1e-12));
  }
  for (int j = 0; j < 5; ++j) {
    double want = 0;
    for (int i = 0; i < 3; ++i) want += tx.data[i * 5 + j];
    CHECK(outs.at("z").data[j] == Approx(want / 3).epsilon(1e-12));
  }
}

TEST_CASE("tensor: movement ops only change views, transpose + reshape forces a copy [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3, 4}), DType::F64);
  std::size_t before = b.graph().size();
  GraphTensor t = transpose(x, 0, 2);  // [4, 3, 2]
  GraphTensor u = unsqueeze(reshape(x, dims({6, 4})), 0);
  CHECK(b.graph().size() == before);  // no nodes for view-only moves
  CHECK(t.shape() == dims({4, 3, 2}));
  CHECK(u.shape() == dims({1, 6, 4}));
  GraphTensor flat = reshape(t, dims({24}));  // needs a contiguous copy
  CHECK(b.graph().size() == before + 1);
  CHECK(b.graph().node(flat.node()).op == Op::Cast);
  flat.output("y");
  Tensor tx = random_tensor({2, 3, 4}, 11);
  Tensor y = run(b, {{"x", tx}});
  REQUIRE(y.data.size() == 24);
  int n = 0;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) CHECK(y.data[n++] == tx.data[i * 12 + j * 4 + k]);
}

TEST_CASE("tensor: shape and dtype misuse is a UserError naming the op and shapes [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}));
  GraphTensor y = b.input("y", dims({4, 3}));
  GraphTensor w = b.input("w", dims({4, 5}));
  GraphTensor i = b.input("i", dims({2, 3}), DType::I32);
  CHECK_THAT(user_error_of([&] { x + y; }), Catch::Contains("add") && Catch::Contains("[2, 3]") &&
                                           Catch::Contains("[4, 3]"));
  CHECK_THAT(user_error_of([&] { x - y; }), Catch::Contains("sub"));
  CHECK_THAT(user_error_of([&] { x + i; }), Catch::Contains("dtypes differ"));
  CHECK_THAT(user_error_of([&] { matmul(x, w); }),
             Catch::Contains("matmul") && Catch::Contains("[2, 3] and [4, 5]"));
  CHECK_THAT(user_error_of([&] { reshape(x, dims({5})); }),
             Catch::Contains("reshape") && Catch::Contains("[2, 3]"));
  CHECK_THAT(user_error_of([&] { sum(x, 2); }), Catch::Contains("sum: axis 2"));
  CHECK_THAT(user_error_of([&] { exp(i); }), Catch::Contains("exp") && Catch::Contains("i32"));
  CHECK_THAT(user_error_of([&] { expand(x, 0, 5); }), Catch::Contains("expand"));
  CHECK_THAT(user_error_of([&] { permute(x, {0, 0}); }), Catch::Contains("permute"));
  GraphBuilder other;
  GraphTensor z = other.input("z", dims({2, 3}));
  CHECK_THAT(user_error_of([&] { x * z; }), Catch::Contains("two different builders"));
}
