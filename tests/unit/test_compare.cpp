// graph/compare: the per-element agreement rule with the interpreter (sizes, NaN, infinities,
// tolerance edges, the softmax case) and the reduction lengths that scale it.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "graph/body.hpp"
#include "graph/compare.hpp"
#include "graph/tensor.hpp"
#include "test_util.hpp"

using namespace kiln;
using namespace kiln::graph;
using kiln::testing::contains;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("mismatch: a size difference is a mismatch, never a partial comparison") {
  const std::vector<double> want{1.0, 2.0, 3.0};
  CHECK(graph::mismatch({1.0, 2.0, 3.0}, want, DType::F32) == "");
  CHECK(contains(graph::mismatch({1.0, 2.0}, want, DType::F32), "has 2 elements, expected 3"));
  CHECK(contains(graph::mismatch({1.0, 2.0, 3.0, 4.0}, want, DType::F32), "has 4 elements, expected 3"));
  CHECK(contains(graph::mismatch({}, want, DType::F32), "has 0 elements"));
}

TEST_CASE("mismatch: NaN agrees only with NaN") {
  CHECK(graph::mismatch({kNaN, 1.0}, {kNaN, 1.0}, DType::F32) == "");
  CHECK(contains(graph::mismatch({kNaN}, {1.0}, DType::F32), "element 0 is nan"));
  CHECK(contains(graph::mismatch({1.0, 0.0}, {1.0, kNaN}, DType::F32), "element 1 is 0"));
  // A NaN where an integer result was expected is a mismatch too.
  CHECK(graph::mismatch({kNaN}, {3.0}, DType::I32) != "");
}

TEST_CASE("mismatch: an infinity agrees only with the same infinity") {
  CHECK(graph::mismatch({kInf, -kInf}, {kInf, -kInf}, DType::F32) == "");
  CHECK(graph::mismatch({-kInf}, {kInf}, DType::F32) != "");
  CHECK(graph::mismatch({3.4e38}, {kInf}, DType::F32) != "");
  CHECK(graph::mismatch({kInf}, {3.4e38}, DType::F32) != "");
  CHECK(graph::mismatch({kNaN}, {kInf}, DType::F32) != "");
}

TEST_CASE("mismatch: the tolerance is absolute plus relative to each element") {
  const Tolerance t{1e-3, 1e-2};
  // Exactly at the limit passes, just beyond fails (limits chosen exactly representable).
  CHECK(graph::mismatch({1.0 + 0.0078125}, {1.0}, Tolerance{0.0, 0.0078125}) == "");
  CHECK(graph::mismatch({1.0 + 2 * 0.0078125}, {1.0}, Tolerance{0.0, 0.0078125}) != "");
  CHECK(graph::mismatch({0.5}, {0.0}, Tolerance{0.5, 0.0}) == "");
  CHECK(graph::mismatch({0.625}, {0.0}, Tolerance{0.5, 0.0}) != "");
  // Large elements get a proportionally larger slack; small ones do not inherit it.
  CHECK(graph::mismatch({1000.0 + 10.0}, {1000.0}, t) == "");
  CHECK(graph::mismatch({0.0 + 0.002}, {0.0}, t) != "");
  // Elements are compared one by one: the first bad one is named.
  CHECK(contains(graph::mismatch({1.0, 2.0, 5.0, 9.0}, {1.0, 2.0, 3.0, 4.0}, t),
                 "element 2 is 5, the interpreter says 3"));
}

TEST_CASE("mismatch: per-element slack from the reference's rounding spread") {
  // The reference rounded at every node, the same computed in double: an ill-conditioned
  // element (1.0 vs 1.01) gets twice that distance as room; every finite element gets at least
  // twice the tensor's root-mean-square distance (0.01 / sqrt(3): one element's distance is one
  // draw of the rounding noise); the non-finite one none.
  const std::vector<double> rounded{1.0, 0.5, kInf, 2.0};
  const std::vector<double> in_double{1.01, 0.5, 1e300, 2.0};
  const std::vector<double> spread = rounding_spread(rounded, in_double);
  const double floor = 2 * 0.01 / std::sqrt(3.0);
  CHECK(spread[0] == Approx(2 * 0.01));
  CHECK(spread[1] == Approx(floor));
  CHECK(spread[2] == 0.0);  // not finite: compared exactly
  CHECK(spread[3] == Approx(floor));
  const Tolerance tol = tolerance(DType::F32);
  CHECK(mismatch({1.015, 0.51, kInf, 2.0}, rounded, tol, spread) == "");
  CHECK(contains(mismatch({1.03, 0.5, kInf, 2.0}, rounded, tol, spread), "element 0"));
  CHECK(contains(mismatch({1.0, 0.52, kInf, 2.0}, rounded, tol, spread), "element 1"));
  CHECK(contains(mismatch({1.0, 0.5, 1e300, 2.0}, rounded, tol, spread), "element 2"));
  // Without slack the first is out.
  CHECK(contains(mismatch({1.015, 0.5, kInf, 2.0}, rounded, tol), "element 0"));
  // A value the roundings do not move gets no room at all.
  for (double s : rounding_spread({1.0, 0.5}, {1.0, 0.5})) CHECK(s == 0.0);
}

TEST_CASE("mismatch: the softmax case, bad small elements next to large ones") {
  // A softmax row: one large probability and a tail of small ones. The tail is wrong by 2x.
  // The old rule (2e-4 times the largest |want|) accepted this; per element it is caught.
  std::vector<double> want(16, 5e-5), got(16, 1e-4);
  want[0] = got[0] = 1.0 - 15 * 5e-5;
  CHECK(contains(graph::mismatch(got, want, DType::F32, 16), "element 1 is"));
  // The same row computed in another summation order (errors of a few ulps) agrees.
  std::vector<double> close = want;
  for (double& v : close) v *= 1.0 + 4 * dtype_epsilon(DType::F32);
  CHECK(graph::mismatch(close, want, DType::F32, 16) == "");
}

TEST_CASE("tolerance: from the dtype's epsilon, growing as the square root of the reduction") {
  CHECK(dtype_epsilon(DType::F32) == std::ldexp(1.0, -23));
  CHECK(dtype_epsilon(DType::BF16) == std::ldexp(1.0, -7));
  CHECK(tolerance(DType::I64).absolute == 0.0);
  CHECK(tolerance(DType::Bool).relative == 0.0);
  const Tolerance one = tolerance(DType::F32, 1), many = tolerance(DType::F32, 1024);
  CHECK(many.relative == one.relative * 32);
  CHECK(many.absolute == one.absolute * 32);
  CHECK(tolerance(DType::F32, 0).relative == one.relative);  // no reduction is length 1
  CHECK(tolerance(DType::F16).relative > tolerance(DType::F32).relative);
  // In bf16 an ulp is 0.8%: 8 of them pass; 20% (beyond 8 relative plus 8 absolute) does not.
  CHECK(tolerance(DType::BF16).relative == 8 * std::ldexp(1.0, -7));
  CHECK(graph::mismatch({1.0 + 8 * std::ldexp(1.0, -7)}, {1.0}, DType::BF16) == "");
  CHECK(graph::mismatch({1.2}, {1.0}, DType::BF16) != "");
  // An error a long reduction may make is rejected for an elementwise result.
  const double error = 8 * one.relative;
  CHECK(graph::mismatch({1.0 + error}, {1.0}, DType::F32, 1) != "");
  CHECK(graph::mismatch({1.0 + error}, {1.0}, DType::F32, 1024) == "");
  // Integers are exact whatever the reduction.
  CHECK(graph::mismatch({4.0}, {3.0}, DType::I32, 1 << 20) != "");
  CHECK(graph::mismatch({3.0}, {3.0}, DType::I32) == "");
}

TEST_CASE("reduction_length: nested Reduce extents multiply, sequential ones do not") {
  const Expr n = Expr::dim("n"), m = Expr::dim("m");
  const DimValues dims{{"n", 6}, {"m", 5}};
  {
    // Two reductions one after the other (softmax's max and sum): n, not n * n.
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(3);
    std::string r0 = b.reduce_var(), r1 = b.reduce_var();
    ScalarId mx = b.reduce(b.max_monoid(DType::F32), r0, n,
                           {b.load(0, o * n + Expr::dim(r0))}, DType::F32);
    ScalarId sm = b.reduce(b.sum_monoid(DType::F32), r1, n,
                           {b.load(0, o * n + Expr::dim(r1))}, DType::F32);
    Body body = b.finish(b.binary(ScalarOp::Add, mx, sm), 3, o);
    CHECK(reduction_length(body, dims) == 6);
  }
  {
    // A reduction of a reduction: n * m elements behind each output.
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(2);
    std::string r0 = b.reduce_var(), r1 = b.reduce_var();
    ScalarId inner = b.reduce(b.sum_monoid(DType::F32), r1, m,
                              {b.load(0, o * n * m + Expr::dim(r0) * m + Expr::dim(r1))},
                              DType::F32);
    ScalarId outer = b.reduce(b.sum_monoid(DType::F32), r0, n, {inner}, DType::F32);
    Body body = b.finish(outer, 2, o);
    CHECK(reduction_length(body, dims) == 30);
  }
  {
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(4);
    CHECK(reduction_length(b.finish(b.load(0, o), 4, o), dims) == 1);
  }
}

TEST_CASE("reduction_length: of a graph node, summed along the path from the inputs") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr::dim("seq"), 8});
  GraphTensor rows = sum(x, 1);            // 8 per element
  GraphTensor total = sum(exp(rows), 0);   // then seq more
  const DimValues dims{{"seq", 4}};
  CHECK(reduction_length(b.graph(), x.node(), dims) == 1);
  CHECK(reduction_length(b.graph(), rows.node(), dims) == 8);
  CHECK(reduction_length(b.graph(), total.node(), dims) == 12);
}
