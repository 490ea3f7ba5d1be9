// STREAM's triad, a[i] = b[i] + s * c[i], on N floats with T OpenMP threads: the memory
// bandwidth an elementwise kernel that reads two arrays and writes one can reach here.
// Prints the median of 20 passes in GB/s (the statistic kiln's run report uses), counting 12
// bytes per element as STREAM does.
//
//   triad ELEMENTS THREADS
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: triad ELEMENTS THREADS\n");
    return 2;
  }
  const long long n = std::atoll(argv[1]);
  const int threads = std::atoi(argv[2]);
  if (n <= 0 || threads <= 0) {
    std::fprintf(stderr, "triad: ELEMENTS and THREADS must be positive\n");
    return 2;
  }
  omp_set_num_threads(threads);
  std::unique_ptr<float[]> a(new float[static_cast<std::size_t>(n)]);
  std::unique_ptr<float[]> b(new float[static_cast<std::size_t>(n)]);
  std::unique_ptr<float[]> c(new float[static_cast<std::size_t>(n)]);
  float* pa = a.get();
  float* pb = b.get();
  float* pc = c.get();
  // First touch by the threads that will use each page, as in STREAM.
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) {
    pa[i] = 0.0f;
    pb[i] = 1.0f;
    pc[i] = 2.0f;
  }
  const float s = 3.0f;
  std::vector<double> rates;
  for (int pass = 0; pass < 20; ++pass) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(12.0 * static_cast<double>(n) / seconds / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("%.2f\n", rates[rates.size() / 2]);
  return pa[n - 1] == 7.0f ? 0 : 1;  // the result is used, so the stores happen
}
