// Splitting a reduction (graph/body_split_reduce): the partial kernel then the combine compute
// what the Body computed (up to the reassociation's rounding) for the conformance Bodies with
// one outermost reduction (sums, maxes, means, matmuls), split in 2, 3, 4 and 8 parts at seq 1,
// 3, 8 and 17 (empty chunks included), and for the online-softmax monoid over rows whose keys
// are masked to -inf in whole chunks; the partial layout; refusals with the reason.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/compare.hpp"
#include "graph/body_split_reduce.hpp"
#include "graph/monoid_online_softmax.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/schedule_cases.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::BodyCase;
using kiln::testing::contains;
using kiln::testing::user_error_of;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_close(const std::vector<double>& got, const std::vector<double>& want,
                 double tolerance) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("[" << i << "] " << got[i] << " vs " << want[i]);
    if (std::isinf(want[i]) || std::isnan(want[i])) {
      CHECK((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))));
    } else {
      CHECK(std::fabs(got[i] - want[i]) <= tolerance * (1.0 + std::fabs(want[i])));
    }
  }
}

// softmax(x[row, :]) . y[:, col] folded by the online-softmax monoid over n keys: rows x cols.
Body online_softmax_body(std::int64_t rows, std::int64_t cols) {
  BodyBuilder b({DType::F64, DType::F64});
  const Expr n = Expr::dim("n");
  const Expr row = b.output_loop(Expr(rows));
  const Expr col = b.output_loop(Expr(cols));
  const std::size_t m = online_softmax_monoid(b, DType::F64);
  const std::string r = b.reduce_var();
  const ScalarId x = b.load(0, row * n + Expr::dim(r));
  const ScalarId y = b.load(1, Expr::dim(r) * cols + col);
  return b.finish(b.reduce(m, r, n, {x, y}, DType::F64), Expr(rows * cols), row * cols + col);
}

}  // namespace

TEST_CASE("split reduce: partial states and their combine compute the Body's values",
          "[body][split_reduce]") {
  std::size_t checked = 0;
  for (std::int64_t rows : {1, 3, 8, 17}) {
    const std::vector<BodyCase> base = kiln::testing::conformance_cases(rows);
    for (const auto& split : kiln::testing::split_cases(base, {2, 3, 4, 8})) {
      const BodyCase& c = split.combine;
      INFO(c.label << " at seq " << rows << "\n" << to_text(split.partial.body) << "\n"
                   << to_text(c.body));
      const BodyCase* original = nullptr;
      for (const BodyCase& b : base) {
        if (c.label.rfind(b.label + " split", 0) == 0) original = &b;
      }
      REQUIRE(original != nullptr);
      // Chunks folded apart round apart: in f16 and bf16 a sum of 17 elements moves by a few
      // units of its last place.
      const DType t = c.body.dtype();
      const double slack = t == DType::F16 || t == DType::BF16 ? 8.0 : 1.0;
      check_close(kiln::testing::expected_output(c), kiln::testing::expected_output(*original),
                  slack * kiln::testing::case_tolerance(t));
      // A chunk's length (ragged: it names the chunk's loop variable) is at most the whole
      // reduction's: the check tolerance of the partial states comes from it.
      std::int64_t chunk = 0;
      REQUIRE_NOTHROW(chunk = reduction_length(split.partial.body, split.partial.dims));
      CHECK(chunk >= 1);
      CHECK(chunk <= reduction_length(original->body, original->dims));
      // The ragged chunks are proven in bounds where the Body is.
      if (kiln::testing::bounds_proof(*original).empty()) {
        CHECK(kiln::testing::bounds_proof(split.partial) == "");
        CHECK(kiln::testing::bounds_proof(c) == "");
      }
      ++checked;
    }
  }
  CHECK(checked > 60);
}

TEST_CASE("split reduce: the online softmax splits, -inf chunks included",
          "[body][split_reduce][online_softmax]") {
  const std::int64_t rows = 3, cols = 4;
  const Body body = online_softmax_body(rows, cols);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-8.0, 8.0);
  for (std::int64_t n : {1, 2, 5, 16, 23}) {
    for (std::int64_t parts : {2, 4, 8}) {
      const SplitReduce split = split_reduce(body, parts);
      REQUIRE(split.partial.loops().size() == 4);  // rows, cols, chunks, 3 state components
      std::vector<double> x(static_cast<std::size_t>(rows * n)), y(static_cast<std::size_t>(n * cols));
      for (double& v : y) v = value(rng);
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          // Row 0: keys past the first masked (whole chunks of -inf); row 1: all but the last;
          // row 2: none.
          const bool masked = (i == 0 && j > 0) || (i == 1 && j + 1 < n);
          x[static_cast<std::size_t>(i * n + j)] = masked ? -kInf : value(rng);
        }
      }
      const DimValues dims{{"n", n}};
      std::vector<double> want(static_cast<std::size_t>(rows * cols));
      interpret_body(body, {&x, &y}, dims, want);
      std::vector<double> partial(static_cast<std::size_t>(rows * cols * parts * 3));
      interpret_body(split.partial, {&x, &y}, dims, partial);
      std::vector<double> got(want.size());
      interpret_body(split.combine, {&x, &y, &partial}, dims, got);
      INFO("n = " << n << ", parts = " << parts);
      check_close(got, want, 1e-12);
      // An empty chunk (parts > n) holds the identity.
      if (parts > n) {
        CHECK(partial[static_cast<std::size_t>((parts - 1) * 3)] == -kInf);
        CHECK(partial[static_cast<std::size_t>((parts - 1) * 3 + 1)] == 0.0);
      }
    }
  }
}

TEST_CASE("split reduce: the partial layout and the monoids of both kernels", "[body][split_reduce]") {
  BodyBuilder b({DType::F32});
  const Expr row = b.output_loop(Expr(2));
  const std::string r = b.reduce_var();
  const Expr n = Expr::dim("n");
  const Body body = b.finish(
      b.reduce(b.max_monoid(DType::F32), r, n, {b.load(0, row * n + Expr::dim(r))}, DType::F32),
      Expr(2), row);
  const SplitReduce split = split_reduce(body, 4);
  CHECK(split.partial.output_size() == Expr(8));
  CHECK(split.partial.store_index() == Expr::dim("o0") * 4 + Expr::dim("o1"));
  CHECK(split.partial.monoids().size() == 1);
  CHECK(split.partial.monoids()[0].name == "max");  // its state is its value
  CHECK(split.combine.inputs() == std::vector<DType>{DType::F32, DType::F32});
  CHECK(split.combine.monoids()[0].name == "max");
  const Body online = online_softmax_body(1, 1);
  const SplitReduce s = split_reduce(online, 2);
  CHECK(s.combine.monoids().back().name == "online_softmax_states");
  CHECK(s.combine.monoids().back().elements == 3);
}

TEST_CASE("split reduce: what cannot be split is refused with the reason", "[body][split_reduce]") {
  const Body online = online_softmax_body(1, 1);
  CHECK(contains(user_error_of([&] { split_reduce(online, 1); }), "1 parts"));
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr(4));
  const Body plain = b.finish(b.load(0, i), Expr(4), i);
  CHECK(contains(user_error_of([&] { split_reduce(plain, 2); }), "0 outermost reductions"));
  BodyBuilder s({DType::F32});
  const Expr j = s.output_loop(Expr(1));
  const std::string r = s.reduce_var();
  const Body short_sum = s.finish(
      s.reduce(s.sum_monoid(DType::F32), r, Expr(5), {s.load(0, Expr::dim(r))}, DType::F32),
      Expr(1), j);
  CHECK(contains(user_error_of([&] { split_reduce(short_sum, 4); }), "too short"));
  CHECK(user_error_of([&] { split_reduce(short_sum, 2); }).empty());
  for (const BodyCase& c : kiln::testing::conformance_cases()) {
    if (c.label.find("softmax") == std::string::npos) continue;
    CHECK(contains(user_error_of([&] { split_reduce(c.body, 2); }), "2 outermost reductions"));
  }
}
