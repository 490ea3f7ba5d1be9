// The gemm LibraryCall: OpenBLAS on the cpu target and the loops of the reference target agree,
// for every layout variant (trans flags), batched, with padded leading dims, in f32 and f64.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "graph/native.hpp"
#include "targets/registry.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;

namespace {

// Runs `call` on `target` with `inputs` (A, B, then the bias where the call has one) and a C
// of `c_size` elements filled with -7 (so untouched padding shows).
std::vector<double> run_gemm(runtime::Target& target, const runtime::LibraryCall& call,
                             const std::vector<const std::vector<double>*>& inputs,
                             std::size_t c_size) {
  runtime::Device& device = target.device();
  std::vector<void*> buffers;
  for (const std::vector<double>* v : inputs) {
    std::vector<std::byte> bytes = graph::to_native(*v, call.dtype);
    void* p = device.allocate(bytes.size());
    device.upload(p, bytes.data(), bytes.size());
    buffers.push_back(p);
  }
  std::vector<std::byte> c = graph::to_native(std::vector<double>(c_size, -7.0), call.dtype);
  buffers.push_back(device.allocate(c.size()));
  device.upload(buffers.back(), c.data(), c.size());
  device.call(call, buffers, {{"m", 5}});
  device.download(c.data(), buffers.back(), c.size());
  for (void* p : buffers) device.release(p);
  return graph::from_native(c.data(), c_size, call.dtype);
}

std::vector<double> run_gemm(runtime::Target& target, const runtime::LibraryCall& call,
                             const std::vector<double>& a, const std::vector<double>& b,
                             std::size_t c_size) {
  return run_gemm(target, call, {&a, &b}, c_size);
}

}  // namespace

TEST_CASE("gemm on OpenBLAS equals the reference for every layout", "[gemm]") {
  auto cpu = targets::make_target("cpu");
  auto reference = targets::make_target("reference");
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (DType dtype : {DType::F32, DType::F64}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        // m is symbolic (5), n = 3, k = 4, batch 2, leading dims padded by 1.
        const long long m = 5, n = 3, k = 4, batch = 2;
        const long long lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 1, ldc = n + 2;
        runtime::LibraryCall call;
        call.op = "gemm";
        call.dtype = dtype;
        call.params = {{"m", Expr::dim("m")},
                       {"n", Expr(n)},
                       {"k", Expr(k)},
                       {"batch", Expr(batch)},
                       {"trans_a", Expr(ta)},
                       {"trans_b", Expr(tb)},
                       {"lda", Expr(lda)},
                       {"ldb", Expr(ldb)},
                       {"ldc", Expr(ldc)},
                       {"stride_a", Expr((ta ? k : m) * lda)},
                       {"stride_b", Expr((tb ? n : k) * ldb)},
                       {"stride_c", Expr(m * ldc)}};
        CHECK(cpu->supports(call));
        std::vector<double> a(static_cast<std::size_t>(batch * (ta ? k : m) * lda));
        std::vector<double> b(static_cast<std::size_t>(batch * (tb ? n : k) * ldb));
        for (double& x : a) x = dist(rng);
        for (double& x : b) x = dist(rng);
        const auto c_size = static_cast<std::size_t>(batch * m * ldc);
        std::vector<double> want = run_gemm(*reference, call, a, b, c_size);
        std::vector<double> got = run_gemm(*cpu, call, a, b, c_size);
        // Check one element by hand: batch 1, row 2, column 1.
        double sum = 0.0;
        for (long long q = 0; q < k; ++q) {
          double x =
              a[static_cast<std::size_t>((ta ? k : m) * lda + (ta ? q * lda + 2 : 2 * lda + q))];
          double y =
              b[static_cast<std::size_t>((tb ? n : k) * ldb + (tb ? 1 * ldb + q : q * ldb + 1))];
          sum += x * y;
        }
        CHECK(want[static_cast<std::size_t>(m * ldc + 2 * ldc + 1)] == Approx(sum).epsilon(1e-6));
        for (std::size_t i = 0; i < c_size; ++i) {
          INFO("ta=" << ta << " tb=" << tb << " i=" << i);
          CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
        }
      }
    }
  }
  CHECK(kiln::testing::contains(kiln::testing::user_error_of([] { targets::make_target("tpu"); }),
                                "unknown target 'tpu' (known: cpu, cuda, opencl, reference)"));
}

// Products split across threads (by batch entry, rows or columns of C) and matrix-vector
// products (a few rows or columns of C, in f32: the streaming kernels) agree with the
// reference for every layout, with strided vectors and padded leading dims, on 1 and 2 threads,
// plain and with the bias and ReLU epilogue (targets/rules/gemm_epilogue.egg), which each
// block applies on its own thread; products of both signs, so that ReLU cuts some.
TEST_CASE("gemm: split and matrix-vector products equal the reference", "[gemm][threads]") {
  auto cpu = targets::make_target("cpu");
  auto reference = targets::make_target("reference");
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  struct Shape {
    long long batch, m, n, k;
  };
  // Sizes above the parallel thresholds (gemm.hpp), and odd so that slices have tails.
  // A few rows or columns of C (7, 16, 6: a batch of vectors streamed over the weights,
  // every tile of 4 and its remainder), and one more than the streaming kernels take (17).
  const std::vector<Shape> shapes = {{1, 1, 301, 203}, {3, 1, 77, 45},   {1, 257, 1, 201},
                                     {2, 45, 1, 39},   {1, 67, 203, 61}, {2, 203, 37, 61},
                                     {1, 1, 1, 5},     {1, 7, 301, 203}, {2, 16, 67, 33},
                                     {1, 203, 6, 61},  {1, 17, 91, 37}};
  for (int threads : {1, 2}) {
    cpu->set_threads(threads);
    for (DType dtype : {DType::F32, DType::F64}) {
      for (const Shape& sh : shapes) {
        for (int ta = 0; ta < 2; ++ta) {
          for (int tb = 0; tb < 2; ++tb) {
            for (int epilogue = 0; epilogue < 3; ++epilogue) {  // none, bias, bias and ReLU
              const long long lda = (ta ? sh.m : sh.k) + 3, ldb = (tb ? sh.k : sh.n) + 2;
              const long long ldc = sh.n + 1;
              runtime::LibraryCall call;
              call.op = "gemm";
              call.dtype = dtype;
              call.params = {{"m", Expr(sh.m)},
                             {"n", Expr(sh.n)},
                             {"k", Expr(sh.k)},
                             {"batch", Expr(sh.batch)},
                             {"trans_a", Expr(ta)},
                             {"trans_b", Expr(tb)},
                             {"lda", Expr(lda)},
                             {"ldb", Expr(ldb)},
                             {"ldc", Expr(ldc)},
                             {"stride_a", Expr((ta ? sh.k : sh.m) * lda)},
                             {"stride_b", Expr((tb ? sh.n : sh.k) * ldb)},
                             {"stride_c", Expr(sh.m * ldc)},
                             {"offset_a", Expr(1)},
                             {"offset_b", Expr(2)}};
              if (epilogue > 0) call.params["bias"] = Expr(1);
              if (epilogue == 2) call.params["activation"] = Expr(1);
              REQUIRE(cpu->supports(call));
              std::vector<double> a(
                  static_cast<std::size_t>(1 + sh.batch * (ta ? sh.k : sh.m) * lda));
              std::vector<double> b(
                  static_cast<std::size_t>(2 + sh.batch * (tb ? sh.n : sh.k) * ldb));
              std::vector<double> bias(static_cast<std::size_t>(sh.n));
              for (double& x : a) x = dist(rng);
              for (double& x : b) x = dist(rng);
              for (double& x : bias) x = dist(rng);
              std::vector<const std::vector<double>*> inputs = {&a, &b};
              if (epilogue > 0) inputs.push_back(&bias);
              const auto c_size = static_cast<std::size_t>(sh.batch * sh.m * ldc);
              const std::vector<double> want = run_gemm(*reference, call, inputs, c_size);
              const std::vector<double> got = run_gemm(*cpu, call, inputs, c_size);
              std::size_t cut = 0;  // outputs ReLU set to zero
              for (std::size_t i = 0; i < c_size; ++i) {
                INFO("threads " << threads << " m " << sh.m << " n " << sh.n << " k " << sh.k
                                << " ta " << ta << " tb " << tb << " epilogue " << epilogue << " i "
                                << i);
                REQUIRE(got[i] == Approx(want[i]).epsilon(1e-4).margin(1e-4));
                cut += (epilogue == 2 && want[i] == 0.0) ? 1 : 0;
              }
              if (epilogue == 2 && sh.m * sh.n > 20) CHECK(cut > 0);
            }
          }
        }
      }
    }
  }
  cpu->set_threads(0);
}

// The CPU's gemm takes the bias and ReLU epilogue (tested with the splits above) and refuses
// the others: GELU and beta = 1 accumulation.
TEST_CASE("gemm: the cpu refuses GELU and accumulating epilogues", "[gemm]") {
  auto cpu = targets::make_target("cpu");
  runtime::LibraryCall gelu;
  gelu.op = "gemm";
  gelu.dtype = DType::F32;
  gelu.params = {
      {"m", Expr(2)}, {"n", Expr(2)}, {"k", Expr(2)}, {"bias", Expr(1)}, {"activation", Expr(2)}};
  CHECK_FALSE(cpu->supports(gelu));
  runtime::LibraryCall accumulate = gelu;
  accumulate.params = {{"m", Expr(2)}, {"n", Expr(2)}, {"k", Expr(2)}, {"accumulate", Expr(1)}};
  CHECK_FALSE(cpu->supports(accumulate));
}
