// targets/cuda on a GPU: every one-op Body of the examples and every schedule choice of the
// conformance set, of its tiled, reordered and split Bodies, and of attention-shaped Bodies with
// a multi-component reduction state runs on the device and agrees with the interpreter; kernels prepared once run
// at changing dims; the examples run end to end through the executor, and through CUDA graphs
// replayed at changing dims; the gemm library op on
// cuBLAS and on cuBLASLt (every layout, a batch, f32 / f64 / f16 / bf16, the epilogues) agrees
// with the reference gemm. Exits 77 (CTest's skip) when cudart finds no device, saying why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>

#include "graph/native.hpp"
#include "targets/gemm_reference.hpp"
#include "targets/cuda/cuda_target.hpp"
#include "tests/unit/device_cases.hpp"

using namespace kiln;

namespace {

targets::cuda::CudaTarget& target() {
  static targets::cuda::CudaTarget t;
  return t;
}

std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies,
                                       const std::vector<targets::gpu::Schedule>& schedules) {
  return target().prepare(bodies, schedules);
}

}  // namespace

TEST_CASE("cuda device: every one-op Body of the examples agrees with the interpreter", "[gpu]") {
  kiln::testing::check_example_cases(target().device(), prepare);
}

TEST_CASE("cuda device: every schedule choice of the conformance set agrees with the interpreter",
          "[gpu]") {
  kiln::testing::check_conformance_choices(target().device(), prepare);
}

TEST_CASE("cuda device: tiled, reordered and split Bodies agree with the interpreter under "
          "every schedule", "[gpu]") {
  kiln::testing::check_scheduled_choices(target().device(), prepare);
}

TEST_CASE("cuda device: multi-component reductions agree with the interpreter under every "
          "schedule", "[gpu]") {
  kiln::testing::check_multi_component_choices(target().device(), prepare);
}

TEST_CASE("cuda device: the examples end to end agree with the interpreter", "[gpu]") {
  kiln::testing::check_examples_end_to_end(target());
}

TEST_CASE("cuda device: replayed recordings at changing dims agree with the interpreter", "[gpu]") {
  kiln::testing::check_replay_changing_dims(target());
}

TEST_CASE("cuda device: kernels prepared once run at changing dims", "[gpu]") {
  kiln::testing::check_changing_dims(target().device(), prepare);
}

namespace {

// Runs `call` on the device with random inputs; checks C against the reference gemm.
void check_gemm(runtime::LibraryCall call, std::mt19937& rng) {
  const targets::GemmShape s = targets::gemm_shape(call, {});
  std::vector<long long> sizes = {s.a_elements(), s.b_elements()};
  if (s.bias) sizes.push_back(s.n);
  if (s.accumulate) sizes.push_back(s.c_elements());
  runtime::Device& device = target().device();
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<std::vector<double>> inputs;
  std::vector<void*> buffers;
  for (long long n : sizes) {
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = u(rng);
    // Values the dtype holds exactly, so that the reference reads what the device reads.
    v = graph::from_native(graph::to_native(v, call.dtype).data(), v.size(), call.dtype);
    std::vector<std::byte> bytes = graph::to_native(v, call.dtype);
    buffers.push_back(device.allocate(bytes.size()));
    device.upload(buffers.back(), bytes.data(), bytes.size());
    inputs.push_back(std::move(v));
  }
  const auto size = static_cast<std::size_t>(s.c_elements());
  std::vector<double> want(size, 0.0);
  targets::gemm_reference(call, {}, inputs, want);
  std::vector<std::byte> out = graph::to_native(want, call.dtype);
  std::fill(out.begin(), out.end(), std::byte{0});
  buffers.push_back(device.allocate(out.size()));
  device.upload(buffers.back(), out.data(), out.size());
  device.call(call, buffers, {});
  device.synchronize();
  device.download(out.data(), buffers.back(), out.size());
  for (void* b : buffers) device.release(b);
  const std::vector<double> got = graph::from_native(out.data(), size, call.dtype);
  // The output's rounding (f16: 2^-11, bf16: 2^-8 relative) and a sum of k = 29 products in
  // another order. cuBLASLt does not document which GELU it computes; its tanh and erf forms
  // differ by at most ~1e-3, within which a GELU result is accepted.
  double tol = 1e-12;
  if (call.dtype == graph::DType::F32) tol = 1e-5;
  if (call.dtype == graph::DType::F16) tol = 4e-3;
  if (call.dtype == graph::DType::BF16) tol = 2e-2;
  if (s.activation == targets::GemmActivation::Gelu) tol = std::max(tol, 2e-3);
  for (std::size_t i = 0; i < size; ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1.0 + std::fabs(want[i])));
  }
}

runtime::LibraryCall gemm_call(graph::DType dtype, long long batch, bool ta, bool tb) {
  const long long m = 37, n = 45, k = 29;
  const long long lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1;
  runtime::LibraryCall call;
  call.op = "gemm";
  call.dtype = dtype;
  call.params = {{"batch", graph::Expr(batch)},  {"m", graph::Expr(m)},
                 {"n", graph::Expr(n)},          {"k", graph::Expr(k)},
                 {"trans_a", graph::Expr(ta ? 1 : 0)}, {"trans_b", graph::Expr(tb ? 1 : 0)},
                 {"lda", graph::Expr(lda)},      {"ldb", graph::Expr(ldb)},
                 {"ldc", graph::Expr(n)},        {"offset_a", graph::Expr(2)},
                 {"stride_a", graph::Expr((ta ? k : m) * lda)},
                 {"stride_b", graph::Expr(0)},   {"stride_c", graph::Expr(m * n)}};
  return call;
}

}  // namespace

TEST_CASE("cuda device: the gemm op on cuBLAS and on cuBLASLt agrees with the reference",
          "[gpu][gemm]") {
  std::mt19937 rng(3);
  for (graph::DType t : {graph::DType::F32, graph::DType::F64, graph::DType::F16,
                         graph::DType::BF16}) {
    for (long long batch : {1, 4}) {
      for (int layout = 0; layout < 4; ++layout) {
        for (long long library : {0, 1, 2}) {  // measured choice, cuBLAS, cuBLASLt
          CAPTURE(graph::dtype_name(t), batch, layout, library);
          runtime::LibraryCall call = gemm_call(t, batch, layout & 1, layout & 2);
          if (library) call.params["library"] = graph::Expr(library);
          check_gemm(call, rng);
        }
      }
    }
  }
}

TEST_CASE("cuda device: cuBLASLt's bias, ReLU, GELU and beta = 1 epilogues agree with the "
          "reference", "[gpu][gemm]") {
  std::mt19937 rng(5);
  for (graph::DType t : {graph::DType::F32, graph::DType::F16, graph::DType::BF16}) {
    for (int act = 0; act <= 2; ++act) {
      for (int extras = 1; extras < 4; ++extras) {  // bias, accumulate, both
        CAPTURE(graph::dtype_name(t), act, extras);
        runtime::LibraryCall call = gemm_call(t, 2, false, true);
        call.params["activation"] = graph::Expr(act);
        call.params["bias"] = graph::Expr(extras & 1);
        call.params["accumulate"] = graph::Expr((extras & 2) >> 1);
        REQUIRE(target().supports(call));
        check_gemm(call, rng);
      }
    }
  }
}

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && !target().unavailable().empty()) {
    std::cout << "skipped: " << target().unavailable() << "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
