// The memory read bandwidth of one core, in GB/s: the floor a decode step (which reads every
// weight and the KV cache once) is measured against by bench/cpu/run.py. Sums a buffer larger
// than the last-level cache (default 2 GiB, or argv[1] MiB) with independent vector
// accumulators, several passes, and prints the best pass.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

typedef float F8 __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
float sum_all(const float* p, long long n) {
  F8 a = {}, b = {}, c = {}, d = {};
  for (long long i = 0; i + 32 <= n; i += 32) {
    F8 x, y, z, w;
    std::memcpy(&x, p + i, 32);
    std::memcpy(&y, p + i + 8, 32);
    std::memcpy(&z, p + i + 16, 32);
    std::memcpy(&w, p + i + 24, 32);
    a += x;
    b += y;
    c += z;
    d += w;
  }
  const F8 s = (a + b) + (c + d);
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

}  // namespace

int main(int argc, char** argv) {
  const long long mib = argc > 1 ? std::atoll(argv[1]) : 2048;
  const long long floats = mib * 1024 * 1024 / 4;
  std::vector<float> buffer(static_cast<std::size_t>(floats), 1.0f);
  double best = 0.0;
  float total = 0.0f;
  for (int pass = 0; pass < 5; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    total += sum_all(buffer.data(), floats);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double gbs = static_cast<double>(floats) * 4.0 / s / 1e9;
    if (gbs > best) best = gbs;
  }
  std::printf("%.2f\n", best);
  return total > 0.0f ? 0 : 1;  // the sums are used, so the reads happen
}
