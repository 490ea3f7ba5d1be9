// A decode step's products with quantized weights on the cpu target (1 thread): SmolLM2-135M's
// shapes, Q4_1 layer matrices and the Q8_0 output head, each timed in thread CPU time (so
// that other processes on a busy machine do not count) and printed as ms per call and GB/s of
// weight bytes read, beside the f32 matrix-vector product of the same shape.
//   quantized_gemv [calls (default 50)]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "graph/quantized.hpp"
#include "runtime/target.hpp"
#include "targets/gemm_reference.hpp"
#include "targets/registry.hpp"

using namespace kiln;

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The best of `calls` calls, in seconds of this thread's CPU time. Each call reads the next
// of several copies of the weight (buffer index, bytes between copies), so that, as in a
// decode step, the weight comes from memory and not from a cache.
double best_of(runtime::Device& device, const runtime::LibraryCall& call,
               std::vector<void*> buffers,
               const std::vector<std::pair<std::size_t, std::size_t>>& weights, int copies,
               int calls) {
  double best = 1e30;
  const std::vector<void*> first = buffers;
  for (int i = 0; i < calls; ++i) {
    for (const auto& [w, copy_bytes] : weights) {
      buffers[w] = static_cast<char*>(first[w]) + static_cast<std::size_t>(i % copies) * copy_bytes;
    }
    const double start = thread_seconds();
    device.call(call, buffers, {});
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 50;
  auto target = targets::make_target("cpu");
  target->set_threads(1);
  runtime::Device& device = target->device();
  struct Shape {
    const char* what;
    graph::QuantFormat format;
    long long n, k;
  };
  const Shape shapes[] = {{"q, o", graph::QuantFormat::Q4_1, 576, 576},
                          {"k, v", graph::QuantFormat::Q4_1, 192, 576},
                          {"gate, up", graph::QuantFormat::Q4_1, 1536, 576},
                          {"down", graph::QuantFormat::Q4_1, 576, 1536},
                          {"output head", graph::QuantFormat::Q8_0, 49152, 576}};
  std::printf("%-12s %-5s %7s %6s %10s %8s %10s %8s\n", "matrix", "type", "n", "k", "blocks ms",
              "GB/s", "f32 ms", "GB/s");
  for (const Shape& s : shapes) {
    const long long blocks = s.n * s.k / graph::kQuantBlock;
    const std::size_t quant_bytes = static_cast<std::size_t>(blocks * graph::quant_bytes(s.format));
    const std::size_t scale_bytes =
        static_cast<std::size_t>(blocks * graph::scales_per_block(s.format) * 2);
    // Copies enough to fill 256 MiB (more than any last-level cache) in f32.
    const std::size_t f32_bytes = static_cast<std::size_t>(s.n * s.k) * 4;
    const int copies = static_cast<int>(std::max<std::size_t>(2, (std::size_t{256} << 20) / f32_bytes));
    std::vector<std::uint8_t> quants(quant_bytes * copies, 0x5A);
    std::vector<std::uint16_t> scales(scale_bytes / 2 * copies, 0x2E66);  // f16 0.1
    std::vector<float> x(static_cast<std::size_t>(s.k), 0.5f), y(static_cast<std::size_t>(s.n));
    std::vector<float> w(static_cast<std::size_t>(s.n * s.k) * copies, 0.25f);
    runtime::LibraryCall call;
    call.op = targets::quantized_gemm_op(s.format);
    call.params = {{"m", graph::Expr(1)}, {"n", graph::Expr(s.n)}, {"k", graph::Expr(s.k)}};
    const double q = best_of(device, call, {x.data(), quants.data(), scales.data(), y.data()},
                             {{1, quant_bytes}, {2, scale_bytes}}, copies, calls);
    runtime::LibraryCall plain;
    plain.op = "gemm";
    plain.params = {{"m", graph::Expr(1)},  {"n", graph::Expr(s.n)}, {"k", graph::Expr(s.k)},
                    {"trans_b", graph::Expr(1)}, {"ldb", graph::Expr(s.k)}};
    const double f = best_of(device, plain, {x.data(), w.data(), y.data()}, {{1, f32_bytes}},
                             copies, calls);
    const double q_bytes = static_cast<double>(quant_bytes + scale_bytes);
    const double f_bytes = static_cast<double>(f32_bytes);
    std::printf("%-12s %-5s %7lld %6lld %10.4f %8.2f %10.4f %8.2f\n", s.what,
                std::string(graph::quant_format_name(s.format)).c_str(), s.n, s.k, q * 1e3,
                q_bytes / q * 1e-9, f * 1e3, f_bytes / f * 1e-9);
  }
  return 0;
}
