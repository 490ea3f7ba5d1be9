// GraphTensor math ops (elementwise functions, cast, comparisons, where, reductions, norms):
// graphs run by the reference interpreter, against std:: math and hand-computed values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::user_error_of;

using kiln::testing::random_tensor;
using kiln::testing::tensor;
using kiln::testing::dims;
using kiln::testing::run_all;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("tensor: cos, rsqrt, tanh, sigmoid, silu, gelu match std:: math [graph]") {
  const std::vector<double> xs = {-1000, -40, -2.5, -1, -0.1, 0, 0.3, 1, 2.5, 40, 1000};
  const auto n = static_cast<std::int64_t>(xs.size());
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({n}), DType::F64);
  cos(x).output("cos");
  rsqrt(x * x + 0.25).output("rsqrt");
  tanh(x).output("tanh");
  sigmoid(x).output("sigmoid");
  silu(x).output("silu");
  gelu(x).output("gelu");
  auto out = run_all(b, {{"x", tensor({n}, xs)}});
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    const double sig = 1.0 / (1.0 + std::exp(-v));
    const double c = std::sqrt(2.0 / std::numbers::pi);
    const double gelu_tanh = 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
    INFO("x = " << v);
    CHECK(out.at("cos").data[i] == Approx(std::cos(v)).margin(1e-12));
    CHECK(out.at("rsqrt").data[i] == Approx(1.0 / std::sqrt(v * v + 0.25)).epsilon(1e-12));
    CHECK(out.at("tanh").data[i] == Approx(std::tanh(v)).margin(1e-15));
    CHECK(out.at("sigmoid").data[i] == Approx(sig).margin(1e-15));
    CHECK(out.at("silu").data[i] == Approx(v * sig).margin(1e-12));
    CHECK(out.at("gelu").data[i] == Approx(gelu_tanh).margin(1e-12));
  }
  // Saturation: no NaN from exp overflow.
  CHECK(out.at("sigmoid").data[0] == 0.0);
  CHECK(out.at("tanh").data[0] == -1.0);
  CHECK(out.at("tanh").data[n - 1] == 1.0);
  CHECK(out.at("gelu").data[n - 1] == 1000.0);
}

TEST_CASE("tensor: cast rounds to the target dtype [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({5}), DType::F64);
  GraphTensor i = cast(x, DType::I32);
  CHECK(i.dtype() == DType::I32);
  i.output("i");
  cast(x, DType::Bool).output("p");
  cast(cast(x, DType::Bool), DType::F32).output("f");
  auto out = run_all(b, {{"x", tensor({5}, {1.7, -1.7, 3.0, 0.0, -0.25})}});
  CHECK(out.at("i").data == std::vector<double>{1, -1, 3, 0, 0});
  CHECK(out.at("p").data == std::vector<double>{1, 1, 1, 0, 1});
  CHECK(out.at("f").dtype == DType::F32);
  CHECK(out.at("f").data == std::vector<double>{1, 1, 1, 0, 1});
}

TEST_CASE("tensor: comparisons broadcast and return bool [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}), DType::F64);
  GraphTensor r = b.input("r", dims({3}), DType::F64);
  std::map<std::string, GraphTensor> results = {
      {"lt", less(x, r)},          {"gt", greater(x, r)}, {"le", less_equal(x, r)},
      {"ge", greater_equal(x, r)}, {"eq", equal(x, r)},   {"ne", not_equal(x, r)},
  };
  for (auto& [name, t] : results) {
    CHECK(t.dtype() == DType::Bool);
    CHECK(t.shape() == dims({2, 3}));
    t.output(name);
  }
  const std::vector<double> xs = {1, 2, 3, -1, 5, 0.5};
  const std::vector<double> rs = {1, 4, 0.5};
  auto out = run_all(b, {{"x", tensor({2, 3}, xs)}, {"r", tensor({3}, rs)}});
  for (std::size_t k = 0; k < 6; ++k) {
    const double a = xs[k], c = rs[k % 3];
    INFO("a = " << a << ", b = " << c);
    CHECK(out.at("lt").data[k] == (a < c ? 1 : 0));
    CHECK(out.at("gt").data[k] == (a > c ? 1 : 0));
    CHECK(out.at("le").data[k] == (a <= c ? 1 : 0));
    CHECK(out.at("ge").data[k] == (a >= c ? 1 : 0));
    CHECK(out.at("eq").data[k] == (a == c ? 1 : 0));
    CHECK(out.at("ne").data[k] == (a != c ? 1 : 0));
  }
  // Hand-checked: x row 0 = {1, 2, 3} against {1, 4, 0.5}.
  CHECK(out.at("eq").data[0] == 1);
  CHECK(out.at("le").data[0] == 1);
  CHECK(out.at("lt").data[0] == 0);
}

TEST_CASE("tensor: comparisons of integer tensors [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({4}), DType::I32);
  GraphTensor y = b.input("y", dims({4}), DType::I32);
  equal(x, y).output("eq");
  greater_equal(x, y).output("ge");
  auto out = run_all(b, {{"x", tensor({4}, {1, 2, 3, -7}, DType::I32)},
                         {"y", tensor({4}, {1, 3, 2, -7}, DType::I32)}});
  CHECK(out.at("eq").data == std::vector<double>{1, 0, 0, 1});
  CHECK(out.at("ge").data == std::vector<double>{1, 0, 1, 1});
}

TEST_CASE(
    "tensor: where selects either branch, and inf or NaN in the other does not leak "
    "[graph]") {
  GraphBuilder b;
  GraphTensor c = b.input("c", dims({2, 3}), DType::Bool);
  GraphTensor x = b.input("x", dims({2, 3}), DType::F64);
  GraphTensor y = b.input("y", dims({3}), DType::F64);  // broadcast over rows
  where(c, x, y).output("w");
  where(c, x, b.constant(-kInf, DType::F64)).output("masked");
  const std::vector<double> cs = {1, 0, 1, 0, 0, 1};
  const std::vector<double> xs = {1.5, kInf, -2, NAN, 4, 0.25};
  const std::vector<double> ys = {kInf, -3, NAN};
  auto out = run_all(
      b,
      {{"c", tensor({2, 3}, cs, DType::Bool)}, {"x", tensor({2, 3}, xs)}, {"y", tensor({3}, ys)}});
  const std::vector<double>& w = out.at("w").data;
  REQUIRE(out.at("w").shape == std::vector<std::int64_t>{2, 3});
  CHECK(w[0] == 1.5);
  CHECK(w[1] == -3);  // x's inf not taken
  CHECK(w[2] == -2);  // y's NaN not taken
  CHECK(w[3] == kInf);
  CHECK(w[4] == -3);
  CHECK(w[5] == 0.25);
  const std::vector<double>& m = out.at("masked").data;
  CHECK(m[0] == 1.5);
  CHECK(m[1] == -kInf);
  CHECK(m[2] == -2);
  CHECK(m[5] == 0.25);
}

TEST_CASE("tensor: where over a symbolic dim [graph]") {
  GraphBuilder b;
  Expr seq = Expr::dim("seq");
  GraphTensor x = b.input("x", {seq, Expr(2)}, DType::F64);
  GraphTensor zero = b.constant(0.0, DType::F64);
  where(greater(x, zero), x, zero).output("y");  // relu by selection
  Tensor tx = random_tensor({4, 2}, 21);
  auto out = run_all(b, {{"x", tx}}, {{"seq", 4}});
  for (std::size_t i = 0; i < 8; ++i) CHECK(out.at("y").data[i] == std::max(tx.data[i], 0.0));
}

TEST_CASE("tensor: min and variance reduce along an axis [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({3, 4}), DType::F64);
  GraphTensor n = b.input("n", dims({4}), DType::U8);
  min(x, 1).output("min1");
  min(x, 0).output("min0");
  variance(x, 1).output("var");
  min(n, 0).output("minu8");
  Tensor tx = random_tensor({3, 4}, 12);
  auto out = run_all(b, {{"x", tx}, {"n", tensor({4}, {7, 200, 3, 9}, DType::U8)}});
  for (int i = 0; i < 3; ++i) {
    double lo = kInf, total = 0;
    for (int j = 0; j < 4; ++j) {
      lo = std::min(lo, tx.data[i * 4 + j]);
      total += tx.data[i * 4 + j];
    }
    const double mu = total / 4;
    double var = 0;
    for (int j = 0; j < 4; ++j) var += (tx.data[i * 4 + j] - mu) * (tx.data[i * 4 + j] - mu);
    CHECK(out.at("min1").data[i] == lo);
    CHECK(out.at("var").data[i] == Approx(var / 4).epsilon(1e-12));
  }
  for (int j = 0; j < 4; ++j) {
    CHECK(out.at("min0").data[j] == std::min({tx.data[j], tx.data[4 + j], tx.data[8 + j]}));
  }
  CHECK(out.at("minu8").dtype == DType::U8);
  CHECK(out.at("minu8").data == std::vector<double>{3});
}

TEST_CASE("tensor: variance by hand [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({4}), DType::F64);
  variance(x, 0).output("v");
  // mean 5, deviations -3 -1 1 3: (9 + 1 + 1 + 9) / 4 = 5.
  CHECK(run_all(b, {{"x", tensor({4}, {2, 4, 6, 8})}}).at("v").data == std::vector<double>{5});
}

TEST_CASE("tensor: log_softmax equals log(softmax) and is stable for large inputs [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({3, 5}), DType::F64);
  log_softmax(x, 1).output("ls");
  log(softmax(x, 1)).output("ref");
  log_softmax(x, 0).output("ls0");
  log_softmax(x * 1000.0, 1).output("big");
  Tensor tx = random_tensor({3, 5}, 13);
  auto out = run_all(b, {{"x", tx}});
  for (std::size_t k = 0; k < 15; ++k) {
    CHECK(out.at("ls").data[k] == Approx(out.at("ref").data[k]).epsilon(1e-12));
    CHECK(std::isfinite(out.at("big").data[k]));
  }
  for (int j = 0; j < 5; ++j) {  // along axis 0: exp sums to 1 over each column
    double total = 0;
    for (int i = 0; i < 3; ++i) total += std::exp(out.at("ls0").data[i * 5 + j]);
    CHECK(total == Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("tensor: layer_norm and rms_norm match their definitions [graph]") {
  GraphBuilder b;
  Expr seq = Expr::dim("seq");
  GraphTensor x = b.input("x", {seq, Expr(6)}, DType::F64);
  layer_norm(x, 1e-5).output("ln");
  rms_norm(x, 1e-6).output("rms");
  Tensor tx = random_tensor({3, 6}, 14);
  auto out = run_all(b, {{"x", tx}}, {{"seq", 3}});
  REQUIRE(out.at("ln").shape == std::vector<std::int64_t>{3, 6});
  for (int i = 0; i < 3; ++i) {
    double mu = 0, sq = 0;
    for (int j = 0; j < 6; ++j) {
      mu += tx.data[i * 6 + j] / 6;
      sq += tx.data[i * 6 + j] * tx.data[i * 6 + j] / 6;
    }
    double var = 0;
    for (int j = 0; j < 6; ++j) var += (tx.data[i * 6 + j] - mu) * (tx.data[i * 6 + j] - mu) / 6;
    double ln_mean = 0;
    for (int j = 0; j < 6; ++j) {
      const double v = tx.data[i * 6 + j];
      const double want = (v - mu) / std::sqrt(var + 1e-5);
      CHECK(out.at("ln").data[i * 6 + j] == Approx(want).epsilon(1e-12));
      CHECK(out.at("rms").data[i * 6 + j] == Approx(v / std::sqrt(sq + 1e-6)).epsilon(1e-12));
      ln_mean += out.at("ln").data[i * 6 + j] / 6;
    }
    CHECK(ln_mean == Approx(0.0).margin(1e-12));
  }
}

TEST_CASE("tensor: misuse of math ops is a UserError naming the op [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}));
  GraphTensor i = b.input("i", dims({2, 3}), DType::I32);
  GraphTensor p = b.input("p", dims({2, 3}), DType::Bool);
  GraphTensor y = b.input("y", dims({4, 3}));
  for (auto [name, op] : std::vector<std::pair<std::string, GraphTensor (*)(const GraphTensor&)>>{
           {"cos", cos},
           {"rsqrt", rsqrt},
           {"tanh", tanh},
           {"sigmoid", sigmoid},
           {"silu", silu},
           {"gelu", gelu}}) {
    std::string e = user_error_of([&] { op(i); });
    CHECK(contains(e, name + ": needs a float tensor, got i32 [2, 3]"));
  }
  CHECK(contains(user_error_of([&] { less(x, y); }), "less: shapes [2, 3] and [4, 3]"));
  CHECK(contains(user_error_of([&] { equal(x, i); }), "equal: dtypes differ: f32 [2, 3]"));
  CHECK(contains(user_error_of([&] { where(x, x, x); }),
                 "where: the condition must be bool, got f32 [2, 3]"));
  CHECK(contains(user_error_of([&] { where(p, x, i); }), "where: dtypes differ"));
  CHECK(contains(user_error_of([&] { where(p, y, y); }), "where: shapes [2, 3] and [4, 3]"));
  CHECK(contains(user_error_of([&] { min(x, 2); }), "min: axis 2 is out of range for shape"));
  CHECK(contains(user_error_of([&] { variance(i, 0); }), "variance: needs a float tensor"));
  CHECK(contains(user_error_of([&] { log_softmax(x, 5); }), "log_softmax: axis 5"));
  CHECK(contains(user_error_of([&] { rms_norm(b.constant(1.0)); }),
                 "rms_norm: needs at least one dim, got f32 []"));
  CHECK(contains(user_error_of([&] { layer_norm(i); }), "layer_norm: needs a float tensor"));
}
