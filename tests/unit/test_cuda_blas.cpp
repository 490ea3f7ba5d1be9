// targets/cuda's gemm op without a GPU: the column-major arguments it hands cuBLAS and cuBLASLt
// (blas_layout.hpp), carried out here by plain loops with the libraries' documented meaning,
// equal the reference gemm for every layout, batch, offset and epilogue; cuBLAS and cuBLASLt
// load and every function the op calls resolves; the calls the op accepts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "targets/cuda/blas.hpp"
#include "targets/cuda/blas_layout.hpp"
#include "targets/gemm_reference.hpp"

using namespace kiln;
using targets::GemmActivation;
using targets::cuda::ColumnMajorGemm;
using targets::cuda::ColumnMajorOperand;

namespace {

// Element (i, j) of op(x): x column-major with leading dimension ld, transposed when asked.
double element(const std::vector<double>& buffer, const ColumnMajorOperand& x, long long batch,
               long long i, long long j) {
  const long long r = x.transposed ? j : i, c = x.transposed ? i : j;
  REQUIRE(r < x.rows);
  REQUIRE(c < x.cols);
  return buffer.at(static_cast<std::size_t>(x.offset + batch * x.stride + r + c * x.ld));
}

// What cublasGemmStridedBatchedEx and cublasLtMatmul compute:
// D[p] = act(op(a)[p] op(b)[p] + beta C[p] + bias (one value per row of D)), column-major.
std::vector<double> column_major_product(const ColumnMajorGemm& g,
                                         const std::vector<std::vector<double>>& inputs,
                                         const std::vector<double>* c, const std::vector<double>* bias,
                                         GemmActivation act, std::size_t size) {
  std::vector<double> d(size, 0.0);
  for (long long p = 0; p < g.batch; ++p) {
    for (long long j = 0; j < g.n; ++j) {
      for (long long i = 0; i < g.m; ++i) {
        double sum = 0;
        for (long long q = 0; q < g.k; ++q) {
          sum += element(inputs[static_cast<std::size_t>(g.a.input)], g.a, p, i, q) *
                 element(inputs[static_cast<std::size_t>(g.b.input)], g.b, p, q, j);
        }
        const auto at = static_cast<std::size_t>(p * g.stride_c + i + j * g.ldc);
        if (c) sum += c->at(at);
        if (bias) sum += bias->at(static_cast<std::size_t>(i));
        if (act == GemmActivation::Relu) sum = std::max(sum, 0.0);
        if (act == GemmActivation::Gelu) sum = targets::gelu_tanh(sum);
        d.at(at) = sum;
      }
    }
  }
  return d;
}

std::vector<double> random_values(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

runtime::LibraryCall gemm_call(long long batch, long long m, long long n, long long k, bool ta,
                               bool tb) {
  // Leading dims with padding and offsets, so that a swapped ld or offset shows.
  const long long lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
  runtime::LibraryCall call;
  call.op = "gemm";
  call.params = {{"batch", graph::Expr(batch)},
                 {"m", graph::Expr(m)},
                 {"n", graph::Expr(n)},
                 {"k", graph::Expr(k)},
                 {"trans_a", graph::Expr(ta ? 1 : 0)},
                 {"trans_b", graph::Expr(tb ? 1 : 0)},
                 {"lda", graph::Expr(lda)},
                 {"ldb", graph::Expr(ldb)},
                 {"ldc", graph::Expr(ldc)},
                 {"offset_a", graph::Expr(5)},
                 {"offset_b", graph::Expr(7)},
                 {"stride_a", graph::Expr((ta ? k : m) * lda + 4)},
                 {"stride_b", graph::Expr(batch > 1 ? (tb ? n : k) * ldb : 0)},  // B shared
                 {"stride_c", graph::Expr(m * ldc)}};
  return call;
}

}  // namespace

TEST_CASE("cuda blas: the column-major arguments compute every layout of the reference gemm",
          "[cuda][gemm]") {
  std::mt19937 rng(7);
  for (long long batch : {1, 3}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CAPTURE(batch, ta, tb);
        const runtime::LibraryCall call = gemm_call(batch, 5, 6, 4, ta, tb);
        const targets::GemmShape s = targets::gemm_shape(call, {});
        const std::vector<double> a = random_values(static_cast<std::size_t>(s.a_elements()), rng);
        const std::vector<double> b = random_values(static_cast<std::size_t>(s.b_elements()), rng);
        const auto size = static_cast<std::size_t>(s.c_elements());
        std::vector<double> want(size, 0.0);
        targets::gemm_reference(call, {}, a, b, want);
        const ColumnMajorGemm g = targets::cuda::column_major_gemm(s);
        CHECK(g.m == 6);  // m and n trade places
        CHECK(g.n == 5);
        const std::vector<double> got =
            column_major_product(g, {a, b}, nullptr, nullptr, GemmActivation::None, size);
        for (std::size_t i = 0; i < size; ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-12));
      }
    }
  }
}

TEST_CASE("cuda blas: cuBLASLt's epilogues (bias, ReLU, GELU, beta = 1) equal the reference",
          "[cuda][gemm]") {
  std::mt19937 rng(11);
  for (int act = 0; act <= 2; ++act) {
    for (bool bias : {false, true}) {
      for (bool accumulate : {false, true}) {
        CAPTURE(act, bias, accumulate);
        runtime::LibraryCall call = gemm_call(2, 4, 7, 3, true, false);
        call.params["activation"] = graph::Expr(act);
        call.params["bias"] = graph::Expr(bias ? 1 : 0);
        call.params["accumulate"] = graph::Expr(accumulate ? 1 : 0);
        const targets::GemmShape s = targets::gemm_shape(call, {});
        REQUIRE(s.inputs() == 2u + bias + accumulate);
        std::vector<std::vector<double>> inputs = {
            random_values(static_cast<std::size_t>(s.a_elements()), rng),
            random_values(static_cast<std::size_t>(s.b_elements()), rng)};
        const auto size = static_cast<std::size_t>(s.c_elements());
        if (bias) inputs.push_back(random_values(static_cast<std::size_t>(s.n), rng));
        if (accumulate) inputs.push_back(random_values(size, rng));
        std::vector<double> want(size, 0.0);
        targets::gemm_reference(call, {}, inputs, want);
        const std::vector<double> got = column_major_product(
            targets::cuda::column_major_gemm(s), inputs, accumulate ? &inputs.back() : nullptr,
            bias ? &inputs[2] : nullptr, static_cast<GemmActivation>(act), size);
        for (std::size_t i = 0; i < size; ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-12));
        if (act == 1) {  // ReLU clamps: some output is exactly zero in this draw
          CHECK(std::count(want.begin(), want.end(), 0.0) > 0);
        }
      }
    }
  }
}

TEST_CASE("cuda blas: cuBLAS and cuBLASLt load and every function of the gemm op resolves",
          "[cuda][gemm]") {
  CHECK(targets::cuda::load_blas() == "");
}

TEST_CASE("cuda blas: the gemm op takes f32, f64, f16 and bf16 and the epilogues cuBLASLt has",
          "[cuda][gemm]") {
  runtime::LibraryCall call = gemm_call(1, 2, 2, 2, false, false);
  for (graph::DType t : {graph::DType::F32, graph::DType::F64, graph::DType::F16,
                         graph::DType::BF16}) {
    call.dtype = t;
    CHECK(targets::cuda::blas_supports(call));
  }
  call.dtype = graph::DType::I32;
  CHECK_FALSE(targets::cuda::blas_supports(call));
  call.dtype = graph::DType::F64;
  call.params["activation"] = graph::Expr(2);
  CHECK_FALSE(targets::cuda::blas_supports(call));  // no f64 GELU in cuBLASLt
  call.dtype = graph::DType::F32;
  CHECK(targets::cuda::blas_supports(call));
  call.params["library"] = graph::Expr(1);
  CHECK_FALSE(targets::cuda::blas_supports(call));  // epilogues are cuBLASLt's
  call.params.erase("activation");
  CHECK(targets::cuda::blas_supports(call));
  call.params["library"] = graph::Expr(3);
  CHECK_FALSE(targets::cuda::blas_supports(call));
  call.op = "conv";
  CHECK_FALSE(targets::cuda::blas_supports(call));
}
