// The "gemm-<format>" LibraryCalls: the CPU target's products over quantized blocks equal the
// reference (the blocks dequantized, then multiplied) on random blocks, for every format, one
// row of A (the matrix-vector kernels) and several (dequantized slices through OpenBLAS), odd
// shapes, padded and transposed A, batches, and 1 and 2 threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/quantized.hpp"
#include "graph/native.hpp"
#include "targets/gemm_reference.hpp"
#include "targets/registry.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;
using graph::QuantFormat;

namespace {

std::vector<double> run_call(runtime::Target& target, const runtime::LibraryCall& call,
                             const std::vector<std::pair<const std::vector<double>*, DType>>& ins,
                             std::size_t c_size) {
  runtime::Device& device = target.device();
  std::vector<void*> buffers;
  for (const auto& [values, dtype] : ins) {
    std::vector<std::byte> bytes = graph::to_native(*values, dtype);
    void* p = device.allocate(bytes.size());
    device.upload(p, bytes.data(), bytes.size());
    buffers.push_back(p);
  }
  std::vector<std::byte> c = graph::to_native(std::vector<double>(c_size, -7.0), DType::F32);
  buffers.push_back(device.allocate(c.size()));
  device.upload(buffers.back(), c.data(), c.size());
  device.call(call, buffers, {{"m", 1}});
  device.download(c.data(), buffers.back(), c.size());
  for (void* p : buffers) device.release(p);
  return graph::from_native(c.data(), c_size, DType::F32);
}

}  // namespace

TEST_CASE("quantized gemm: the cpu products over blocks equal dequantize then gemm",
          "[gemm][quantized]") {
  auto cpu = targets::make_target("cpu");
  auto reference = targets::make_target("reference");
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> byte(0, 255);
  struct Shape {
    long long batch, m, n, k;
  };
  // Odd row counts (tails of the 16-row slices), one block and many, above and below the
  // parallel thresholds; m = 1 and 2 take the block kernels, more rows the OpenBLAS path.
  const std::vector<Shape> shapes = {{1, 1, 301, 224}, {1, 1, 7, 32},   {2, 1, 45, 96},
                                     {1, 2, 33, 64},   {1, 5, 67, 160}, {2, 37, 129, 64},
                                     {1, 1, 1153, 64}};
  for (int threads : {1, 2}) {
    cpu->set_threads(threads);
    for (QuantFormat f : {QuantFormat::Q8_0, QuantFormat::Q4_0, QuantFormat::Q4_1}) {
      for (const Shape& sh : shapes) {
        for (int ta = 0; ta < 2; ++ta) {
          const long long blocks = sh.k / graph::kQuantBlock;
          const long long lda = (ta ? sh.m : sh.k) + 3, ldc = sh.n + 1;
          runtime::LibraryCall call;
          call.op = targets::quantized_gemm_op(f);
          call.dtype = DType::F32;
          call.params = {{"m", sh.m == 1 ? Expr::dim("m") : Expr(sh.m)},
                         {"n", Expr(sh.n)},
                         {"k", Expr(sh.k)},
                         {"batch", Expr(sh.batch)},
                         {"trans_a", Expr(ta)},
                         {"lda", Expr(lda)},
                         {"ldc", Expr(ldc)},
                         {"offset_a", Expr(2)},
                         {"stride_a", Expr((ta ? sh.k : sh.m) * lda)},
                         {"stride_c", Expr(sh.m * ldc)}};
          REQUIRE(cpu->supports(call));
          std::vector<double> a(static_cast<std::size_t>(2 + sh.batch * (ta ? sh.k : sh.m) * lda));
          for (double& x : a) x = real(rng);
          std::vector<double> quants(static_cast<std::size_t>(sh.n * blocks * graph::quant_bytes(f)));
          for (double& q : quants) q = byte(rng);
          std::vector<double> scales(
              static_cast<std::size_t>(sh.n * blocks * graph::scales_per_block(f)));
          for (double& s : scales) s = graph::round_to_dtype(real(rng) * 0.1, DType::F16);
          const auto c_size = static_cast<std::size_t>(sh.batch * sh.m * ldc);
          const std::vector<std::pair<const std::vector<double>*, DType>> ins = {
              {&a, DType::F32}, {&quants, DType::U8}, {&scales, DType::F16}};
          const std::vector<double> want = run_call(*reference, call, ins, c_size);
          const std::vector<double> got = run_call(*cpu, call, ins, c_size);
          // One element by hand: the last batch entry, the last row of A, output column n - 1.
          const long long p = sh.batch - 1, i = sh.m - 1, o = sh.n - 1;
          const std::vector<double> w = graph::dequantize_values(f, quants, scales, sh.n, sh.k);
          double sum = 0.0;
          for (long long q = 0; q < sh.k; ++q) {
            const double x = a[static_cast<std::size_t>(2 + p * (ta ? sh.k : sh.m) * lda +
                                                        (ta ? q * lda + i : i * lda + q))];
            sum += x * w[static_cast<std::size_t>(o * sh.k + q)];
          }
          CHECK(want[static_cast<std::size_t>(p * sh.m * ldc + i * ldc + o)] ==
                Approx(sum).epsilon(1e-5).margin(1e-5));
          for (std::size_t e = 0; e < c_size; ++e) {
            INFO(graph::quant_format_name(f) << " batch=" << sh.batch << " m=" << sh.m
                                             << " n=" << sh.n << " k=" << sh.k << " ta=" << ta
                                             << " threads=" << threads << " element " << e);
            const bool padding = static_cast<long long>(e % static_cast<std::size_t>(ldc)) == sh.n;
            if (padding) {
              CHECK(got[e] == -7.0);  // the padding column is never written
            } else {
              CHECK(got[e] == Approx(want[e]).epsilon(1e-4).margin(1e-4));
            }
          }
        }
      }
    }
  }
  cpu->set_threads(0);
}

TEST_CASE("quantized gemm: the dequantization of each format, by hand", "[gemm][quantized]") {
  // One block of each: element 0 and element 17 (the high nibble of byte 1 in q4).
  std::vector<double> q8(32, 0.0), q4(16, 0.0);
  q8[0] = 0xFE;   // int8 -2
  q8[17] = 0x05;  // 5
  q4[0] = 0x3A;   // element 0: 10, element 16: 3
  q4[1] = 0x70;   // element 1: 0, element 17: 7
  const std::vector<double> d{0.5}, dm{0.5, -1.0};
  const auto w8 = graph::dequantize_values(QuantFormat::Q8_0, q8, d, 1, 32);
  CHECK(w8[0] == -1.0);
  CHECK(w8[17] == 2.5);
  const auto w40 = graph::dequantize_values(QuantFormat::Q4_0, q4, d, 1, 32);
  CHECK(w40[0] == 1.0);     // (10 - 8) * 0.5
  CHECK(w40[16] == -2.5);   // (3 - 8) * 0.5
  CHECK(w40[17] == -0.5);   // (7 - 8) * 0.5
  const auto w41 = graph::dequantize_values(QuantFormat::Q4_1, q4, dm, 1, 32);
  CHECK(w41[0] == 4.0);     // 10 * 0.5 - 1
  CHECK(w41[1] == -1.0);    // 0 * 0.5 - 1
  CHECK(w41[17] == 2.5);    // 7 * 0.5 - 1
  CHECK(targets::quantized_gemm_format("gemm-q4_1") == QuantFormat::Q4_1);
  CHECK(!targets::quantized_gemm_format("gemm"));
  CHECK(!targets::quantized_gemm_format("gemm-q5_k"));
}
