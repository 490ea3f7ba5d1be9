// The CPU code generator's tiled product (targets/cpu/tiled_product.hpp) on [N, N] x [N, N] in
// f32 against OpenBLAS through kiln's gemm call (targets/cpu/gemm.hpp), alternating in one run
// on the same thread pool. The product is the Body the search fuses for a matmul (a sum over k
// of a[i, k] * b[k, j]), rendered, compiled and called directly, without the search's check
// against the interpreter (whose broadcast product needs 8 GiB at N = 1024); a sample of both
// outputs is checked against sums in double instead. Prints one line per N: medians of the wall
// times, their ratio (OpenBLAS / tiled: > 1, the tiled product is faster), and the same for the
// calling thread's CPU time (on one thread, the time without what other processes held of the
// core: the steadier number on a loaded machine):
//   tiled_product N <n> tiled_ms <t> openblas_ms <t> ratio <r> tiled_cpu_ms <t> openblas_cpu_ms
//     <t> cpu_ratio <r> max_rel_err <e>
//   tiled_product [threads (0: every core)] [runs (5)] [nn|nt[-cold] (nn)] [N ...] (512 1024 2048)
// nt: b stored [N, k] (a Linear layer's weights), the gemm call's trans_b; -cold: 8 sets of
// operands, one per run in turn (as the search measures).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <time.h>
#include <vector>

#include "graph/body.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/gemm.hpp"
#include "targets/cpu/jit.hpp"
#include "targets/cpu/threads.hpp"

using namespace kiln;

namespace {

// The fused matmul's Body at a constant size, as the search renders it.
graph::Body product_body(long long n, bool transposed_b) {
  using graph::Expr;
  const graph::DType f = graph::DType::F32;
  graph::BodyBuilder b({f, f});
  const Expr i = b.output_loop(n), j = b.output_loop(n);
  const std::string r = b.reduce_var();
  const Expr k = Expr::dim(r);
  const graph::ScalarId product =
      b.binary(graph::ScalarOp::Mul, b.load(0, i * n + k), b.load(1, transposed_b ? j * n + k : k * n + j));
  return b.finish(b.reduce(b.sum_monoid(f), r, n, {product}, f), n * n, i * n + j);
}

// The calling thread's CPU time: on one thread, the kernel's time without the time other
// processes held the core (a loaded machine).
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Timed {
  double seconds = 0.0;
  double cpu_seconds = 0.0;
};

template <class F>
Timed timed(F&& f) {
  const double cpu_start = thread_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          thread_cpu_seconds() - cpu_start};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

// argv[i] as a whole decimal integer, or `fallback` where absent; -1 where it is not one
// (every valid argument is at least 0, so -1 fails the checks below).
long long integer_arg(int argc, char** argv, int i, long long fallback) {
  if (i >= argc) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(argv[i], &end, 10);
  return end != argv[i] && *end == '\0' ? v : -1;
}

int main(int argc, char** argv) {
  const auto threads = static_cast<int>(integer_arg(argc, argv, 1, 0));
  const auto runs = static_cast<int>(integer_arg(argc, argv, 2, 5));
  const std::string layout = argc > 3 ? argv[3] : "nn";
  const bool transposed_b = layout.rfind("nt", 0) == 0;
  // -cold: 8 sets of inputs and outputs, one per run in turn, as the search's measurements
  // rotate them (each run then reads its operands from L3 or memory).
  const bool cold = layout.size() > 2 && layout.substr(2) == "-cold";
  std::vector<long long> sizes;
  for (int a = 4; a < argc; ++a) sizes.push_back(integer_arg(argc, argv, a, 0));
  if (sizes.empty()) sizes = {512, 1024, 2048};
  if (threads < 0 || runs < 1 ||
      (layout.substr(0, 2) != "nn" && layout.substr(0, 2) != "nt") ||
      (layout.size() > 2 && !cold) ||
      std::any_of(sizes.begin(), sizes.end(), [](long long s) { return s < 1; })) {
    std::fprintf(stderr, "usage: tiled_product [threads >= 0] [runs >= 1] [nn|nt[-cold]] [N >= 1 ...]\n");
    return 2;
  }
  std::vector<targets::cpu::KernelSource> sources;
  for (long long n : sizes) sources.push_back(targets::cpu::render_kernel(product_body(n, transposed_b)));
  targets::cpu::JitCompiler jit;
  targets::cpu::load_thread_pool(jit);
  targets::cpu::set_threads(threads);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    if (!kernels[s].fn) {
      std::fprintf(stderr, "%s\n", kernels[s].error.c_str());
      return 1;
    }
    const long long n = sizes[s];
    const auto elements = static_cast<std::size_t>(n * n);
    const std::size_t sets = cold ? 8 : 1;
    std::vector<std::vector<float>> a(sets, std::vector<float>(elements)), b = a, c = a, peer = a;
    for (std::size_t q = 0; q < sets; ++q) {
      for (float& e : a[q]) e = value(rng);
      for (float& e : b[q]) e = value(rng);
    }
    std::vector<std::vector<void*>> buffers, peer_buffers;
    for (std::size_t q = 0; q < sets; ++q) {
      buffers.push_back({a[q].data(), b[q].data(), c[q].data()});
      peer_buffers.push_back({a[q].data(), b[q].data(), peer[q].data()});
    }
    runtime::LibraryCall call;
    call.op = "gemm";
    call.dtype = graph::DType::F32;
    call.params = {{"m", graph::Expr(n)}, {"n", graph::Expr(n)}, {"k", graph::Expr(n)},
                   {"trans_b", graph::Expr(transposed_b ? 1 : 0)}};
    // Alternating, so that both see the same machine; the first round warms up.
    std::vector<double> times, cpu_times, peer_times, peer_cpu_times;
    for (int run = 0; run <= runs; ++run) {
      const std::size_t q = static_cast<std::size_t>(run) % sets;
      const Timed tiled = timed([&] { kernels[s].fn(buffers[q].data(), nullptr); });
      const Timed blas = timed([&] { targets::cpu::gemm_cpu(call, peer_buffers[q], {}); });
      if (run == 0) continue;
      times.push_back(tiled.seconds);
      cpu_times.push_back(tiled.cpu_seconds);
      peer_times.push_back(blas.seconds);
      peer_cpu_times.push_back(blas.cpu_seconds);
    }
    double worst = 0.0;
    std::uniform_int_distribution<long long> at(0, n - 1);
    for (int sample = 0; sample < 256; ++sample) {
      const long long i = at(rng), j = at(rng);
      double sum = 0.0, magnitude = 0.0;
      for (long long k = 0; k < n; ++k) {
        const double term = double(a[0][std::size_t(i * n + k)]) *
                            double(b[0][std::size_t(transposed_b ? j * n + k : k * n + j)]);
        sum += term;
        magnitude += std::fabs(term);
      }
      const std::size_t e = static_cast<std::size_t>(i * n + j);
      worst = std::max({worst, std::fabs(c[0][e] - sum) / (1.0 + magnitude),
                        std::fabs(peer[0][e] - sum) / (1.0 + magnitude)});
    }
    std::printf("tiled_product N %lld tiled_ms %.4f openblas_ms %.4f ratio %.3f "
                "tiled_cpu_ms %.4f openblas_cpu_ms %.4f cpu_ratio %.3f max_rel_err %.3g\n",
                n, median(times) * 1e3, median(peer_times) * 1e3,
                median(peer_times) / median(times), median(cpu_times) * 1e3,
                median(peer_cpu_times) * 1e3, median(peer_cpu_times) / median(cpu_times), worst);
    std::fflush(stdout);
    if (worst > 1e-5) {
      std::fprintf(stderr, "tiled_product: N %lld disagrees with the double sums\n", n);
      return 1;
    }
  }
  return 0;
}
