// The cost model (compiler/cost_model) orders obviously better candidates first, and the rank
// phase (compiler/rank_candidates) keeps per e-class exactly the best K and the baseline.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/cost_model.hpp"
#include "compiler/rank_candidates.hpp"
#include "graph/body.hpp"

using namespace kiln;
using compiler::Candidate;
using compiler::estimate_cost;
using compiler::MachineRates;
using graph::Body;
using graph::BodyBuilder;
using graph::DimValues;
using graph::DType;
using graph::Expr;
using graph::ScalarOp;

namespace {

// Fixed rates, so the tests do not depend on this machine: 100 GFLOP/s, 10 GB/s.
const MachineRates kRates{100e9, 10e9};

// out[i] = op(in[i], c) over n elements.
Body elementwise(ScalarOp op, double c) {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const graph::ScalarId x = b.load(0, i);
  return b.finish(b.binary(op, x, b.constant(c, DType::F32)), Expr::dim("n"), i);
}

// out[i] = in[i] * 2 + 1: the two kernels above fused.
Body fused_chain() {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const graph::ScalarId x = b.binary(ScalarOp::Mul, b.load(0, i), b.constant(2, DType::F32));
  return b.finish(b.binary(ScalarOp::Add, x, b.constant(1, DType::F32)), Expr::dim("n"), i);
}

// out[i] = sum over r < k of in[i, r] (an m x k matrix), its rows read along r (unit stride) or,
// `transposed`, the matrix stored k x m, so that consecutive r are m elements apart.
Body row_sums(bool transposed) {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr::dim("m"));
  const std::string r = b.reduce_var();
  const Expr position =
      transposed ? Expr::dim(r) * Expr::dim("m") + i : i * Expr::dim("k") + Expr::dim(r);
  const graph::ScalarId x = b.load(0, position);
  const graph::ScalarId sum =
      b.reduce(b.sum_monoid(DType::F32), r, Expr::dim("k"), {x}, DType::F32);
  return b.finish(sum, Expr::dim("m"), i);
}

double seconds(const Body& body, std::int64_t input, const DimValues& dims) {
  return estimate_cost(compiler::body_candidate(body, {input}, dims), dims, kRates).seconds;
}

}  // namespace

TEST_CASE("cost model: a fused elementwise chain costs less than its two kernels", "[cost_model]") {
  for (std::int64_t n : {64, 4096, 1 << 22}) {
    INFO("n = " << n);
    const DimValues dims{{"n", n}};
    const double fused = seconds(fused_chain(), n, dims);
    const double parts = seconds(elementwise(ScalarOp::Mul, 2), n, dims) +
                         seconds(elementwise(ScalarOp::Add, 1), n, dims);
    CHECK(fused < parts);
  }
  // Memory-bound at large n: the fused kernel moves half the bytes.
  const DimValues dims{{"n", 1 << 22}};
  const auto fused =
      estimate_cost(compiler::body_candidate(fused_chain(), {1 << 22}, dims), dims, kRates);
  const auto part = estimate_cost(
      compiler::body_candidate(elementwise(ScalarOp::Mul, 2), {1 << 22}, dims), dims, kRates);
  CHECK(fused.bytes == Approx(part.bytes));
  CHECK(fused.flops == Approx(2 * part.flops));
}

TEST_CASE("cost model: a reduction read with unit stride costs less than the strided one",
          "[cost_model]") {
  for (std::int64_t k : {64, 1024}) {
    INFO("k = " << k);
    const DimValues dims{{"m", 512}, {"k", k}};
    const auto unit =
        estimate_cost(compiler::body_candidate(row_sums(false), {512 * k}, dims), dims, kRates);
    const auto strided =
        estimate_cost(compiler::body_candidate(row_sums(true), {512 * k}, dims), dims, kRates);
    CHECK(unit.penalty == 1);
    CHECK(strided.penalty > 1);
    CHECK(unit.flops == Approx(strided.flops));
    CHECK(unit.seconds < strided.seconds);
  }
}

// out[i, j] = in[i, j] + max over r < n of in[i, r]: the max needs i only.
Body minus_row_max() {
  BodyBuilder b({DType::F32});
  const Expr n = Expr::dim("n");
  const Expr i = b.output_loop(n);
  const Expr j = b.output_loop(n);
  const std::string r = b.reduce_var();
  const graph::ScalarId row = b.load(0, i * n + Expr::dim(r));
  const graph::ScalarId max = b.reduce(b.max_monoid(DType::F32), r, n, {row}, DType::F32);
  return b.finish(b.binary(ScalarOp::Add, b.load(0, i * n + j), max), n * n, i * n + j);
}

TEST_CASE("cost model: a reduction counts once per iteration of the loops it needs",
          "[cost_model]") {
  // The code generator hoists the row's max out of the loop over j: n^2 folds and n^2 adds,
  // not n^3 folds.
  const std::int64_t n = 256;
  const DimValues dims{{"n", n}};
  const auto e =
      estimate_cost(compiler::body_candidate(minus_row_max(), {n * n}, dims), dims, kRates);
  CHECK(e.flops < 4.0 * n * n);
  CHECK(e.flops >= 2.0 * n * n);
}

TEST_CASE("cost model: a library product is priced by its flops", "[cost_model]") {
  runtime::LibraryCall call;
  call.op = "gemm";
  call.dtype = DType::F32;
  call.params = {{"batch", Expr(1)},    {"m", Expr(256)},      {"n", Expr(256)},
                 {"k", Expr(256)},      {"trans_a", Expr(0)},  {"trans_b", Expr(0)},
                 {"lda", Expr(256)},    {"ldb", Expr(256)},    {"offset_a", Expr(0)},
                 {"offset_b", Expr(0)}, {"stride_a", Expr(0)}, {"stride_b", Expr(0)},
                 {"ldc", Expr(256)},    {"stride_c", Expr(0)}};
  const auto e = estimate_cost(compiler::gemm_candidate(call, {}), {}, kRates);
  CHECK(e.flops == Approx(2.0 * 256 * 256 * 256));
  CHECK(e.bytes == Approx(3.0 * 256 * 256 * 4));
  CHECK(e.seconds > e.flops / kRates.flops_per_second);
}

TEST_CASE("cost model: this machine's rates are measured once and read back", "[cost_model]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kiln-test-cost-model-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::filesystem::path file = dir / "rates.txt";
  const MachineRates first = compiler::machine_rates(file);
  CHECK(first.flops_per_second > 1e8);
  CHECK(first.bytes_per_second > 1e8);
  REQUIRE(std::filesystem::exists(file));
  // Read back, not measured again: equal to the last digit.
  const MachineRates again = compiler::machine_rates(file);
  CHECK(again.flops_per_second == first.flops_per_second);
  CHECK(again.bytes_per_second == first.bytes_per_second);
  // A file that does not hold two positive rates is measured over.
  std::ofstream(file) << "not rates\n";
  const MachineRates remeasured = compiler::machine_rates(file);
  CHECK(remeasured.flops_per_second > 1e8);
  std::filesystem::remove_all(dir);
}

TEST_CASE("rank: each e-class keeps its best K and its baseline, in any input order",
          "[cost_model]") {
  using compiler::Ranked;
  // Two e-classes: c1 with five candidates (the worst is its baseline, kept besides the best
  // K), all reading e-class 7, and c2 with two.
  std::vector<Ranked> items = {
      {1, 5.0, 5.0, "e", true, {7}},  {1, 1.0, 1.0, "a", false, {7}},
      {1, 3.0, 3.0, "c", false, {7}}, {1, 2.0, 2.0, "b", false, {7}},
      {1, 4.0, 4.0, "d", false, {7}}, {2, 9.0, 9.0, "y", false, {7}},
      {2, 8.0, 8.0, "x", false, {7}},
  };
  auto kept_names = [](const std::vector<Ranked>& in, std::size_t top) {
    const std::vector<bool> keep = compiler::keep_best(in, top);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (keep[i]) names.push_back(in[i].tie);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  CHECK(kept_names(items, 2) == std::vector<std::string>{"a", "b", "e", "x", "y"});
  CHECK(kept_names(items, 3) == std::vector<std::string>{"a", "b", "c", "e", "x", "y"});
  CHECK(kept_names(items, 1) == std::vector<std::string>{"a", "e", "x"});
  CHECK(kept_names(items, 0).size() == items.size());
  std::reverse(items.begin(), items.end());
  CHECK(kept_names(items, 1) == std::vector<std::string>{"a", "e", "x"});
  // The best of another fusion choice (reading other e-classes) is kept beyond the best K.
  items.push_back({1, 6.0, 6.0, "f", false, {8, 9}});
  items.push_back({1, 7.0, 7.0, "g", false, {8, 9}});
  CHECK(kept_names(items, 1) == std::vector<std::string>{"a", "e", "f", "x"});
  // Equal totals and estimates: the tie text decides, whatever the order.
  std::vector<Ranked> ties = {{1, 1.0, 1.0, "q", false, {7}}, {1, 1.0, 1.0, "p", false, {7}}};
  CHECK(kept_names(ties, 1) == std::vector<std::string>{"p"});
  std::reverse(ties.begin(), ties.end());
  CHECK(kept_names(ties, 1) == std::vector<std::string>{"p"});
}
