// Products with a few rows (a short prefill's projections, SmolLM2-135M's shapes, f32, weights
// stored [outputs, inputs]) on one thread: the streaming kernel (targets/cpu/gemv.hpp), which
// reads the weights once for every row, against OpenBLAS's cblas_sgemm on the same operands.
// Each call reads the next of several copies of the weight, so that it comes from memory as in
// a prefill; times are the best of `calls` in thread CPU time (other processes on a busy
// machine do not count). The ratio column is sgemm / streaming: above 1 the streaming kernel
// is faster; kStreamingVectors (targets/cpu/gemm.hpp) is the largest row count that wins.
//   small_batch_gemm [calls (default 30)]
#include <cblas.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "targets/cpu/gemv.hpp"

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <class F>
double best_of(int calls, int copies, F&& call) {
  double best = 1e30;
  for (int i = 0; i < calls; ++i) {
    const double start = thread_seconds();
    call(i % copies);
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 30;
  openblas_set_num_threads(1);
  struct Shape {
    const char* what;
    long long n, k;
  };
  const Shape shapes[] = {{"q, o", 576, 576},
                          {"k, v", 192, 576},
                          {"gate, up", 1536, 576},
                          {"down", 576, 1536},
                          {"output head", 49152, 576}};
  std::printf("%-12s %6s %6s %4s %12s %9s %12s %9s %8s\n", "matrix", "n", "k", "rows",
              "stream ms", "GFLOP/s", "sgemm ms", "GFLOP/s", "ratio");
  for (const Shape& s : shapes) {
    const std::size_t elements = static_cast<std::size_t>(s.n * s.k);
    // Copies enough to fill 512 MiB (more than the last-level cache).
    const int copies =
        static_cast<int>(std::max<std::size_t>(2, (std::size_t{512} << 20) / (elements * 4)));
    std::vector<float> w(elements * static_cast<std::size_t>(copies));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.01f;
    for (long long rows : {1, 2, 3, 4, 6, 8, 12, 16}) {
      std::vector<float> x(static_cast<std::size_t>(rows * s.k), 0.5f);
      std::vector<float> y(static_cast<std::size_t>(rows * s.n));
      const double stream = best_of(calls, copies, [&](int copy) {
        kiln::targets::cpu::GemvOperands op;
        op.x = x.data();
        op.vectors = rows;
        op.ldx = s.k;
        op.w = w.data() + static_cast<std::size_t>(copy) * elements;
        op.ldw = s.k;
        op.inputs = s.k;
        op.y = y.data();
        op.ldy = s.n;
        kiln::targets::cpu::gemv_range(op, 0, s.n);
      });
      const double sgemm = best_of(calls, copies, [&](int copy) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows),
                    static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, x.data(),
                    static_cast<int>(s.k), w.data() + static_cast<std::size_t>(copy) * elements,
                    static_cast<int>(s.k), 0.0f, y.data(), static_cast<int>(s.n));
      });
      const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(elements);
      std::printf("%-12s %6lld %6lld %4lld %12.4f %9.1f %12.4f %9.1f %8.2f\n", s.what, s.n, s.k,
                  rows, stream * 1e3, flops / stream * 1e-9, sgemm * 1e3, flops / sgemm * 1e-9,
                  sgemm / stream);
    }
  }
  return 0;
}
