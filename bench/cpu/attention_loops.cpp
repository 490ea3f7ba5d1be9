// The attention kernel's two hot loop shapes (targets/cpu/row_state.hpp, key products) alone,
// on data in L1, against FMA chains on registers: how close to this core's FMA peak each
// shape can run, whatever surrounds it in the kernel. Prints the median GFLOP/s of 7 passes:
//   fma_chains <n>  n independent FMA chains on registers (the peak once n covers the latency)
//   qk_keys <g>     a tile's 32 rows (two vectors, q set out [t][row]) by g keys a pass over
//                   the head dim 64, one broadcast key element per key feeding two FMAs
//   pv_rows <r>     r rows by 4 vectors of columns (64) of weighted values over 32 keys, each
//                   key's 4 value vectors loaded once for the r rows, a broadcast weight a row
//
//   attention_loops
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

namespace {

typedef float F16 __attribute__((vector_size(64)));

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

alignas(64) float q[64][32];  // [t][row]
alignas(64) float k[32][64];  // [key][t]
alignas(64) float s[32][32];  // [key][row]
alignas(64) float v[32][64];  // [key][column]
alignas(64) float w[32][32];  // [key][row]
alignas(64) float a[32][64];  // [row][column]
float sink;

// Chains start apart and pass through an empty asm, so that the compiler cannot merge them.
template <int N>
__attribute__((noinline)) void fma_chains(long reps) {
  F16 x[N];
  for (int i = 0; i < N; ++i) {
    x[i] = F16{} + 0.001f * static_cast<float>(i);
    __asm__ volatile("" : "+v"(x[i]));
  }
  F16 m = F16{} + 0.999f;
  const F16 c = F16{} + 0.001f;  // x tends to 1
  for (long r = 0; r < reps; ++r) {
#pragma GCC unroll 32
    for (int i = 0; i < N; ++i) x[i] = x[i] * m + c;
    __asm__ volatile("" : "+v"(m));
  }
  F16 total = {};
  for (int i = 0; i < N; ++i) total += x[i];
  sink += total[0];
}

template <int G>
__attribute__((noinline)) void qk_keys(long reps) {
  for (long r = 0; r < reps; ++r) {
    for (int pass = 0; pass < 32; pass += G) {
      const int first = std::min(pass, 32 - G);  // the last pass clamps its keys
      F16 acc[G][2] = {};
      for (int t = 0; t < 64; ++t) {
        F16 q0, q1;
        std::memcpy(&q0, &q[t][0], sizeof q0);
        std::memcpy(&q1, &q[t][16], sizeof q1);
#pragma GCC unroll 16
        for (int j = 0; j < G; ++j) {
          const float key = k[first + j][t];
          acc[j][0] += q0 * key;
          acc[j][1] += q1 * key;
        }
      }
#pragma GCC unroll 16
      for (int j = 0; j < G; ++j) {
        std::memcpy(&s[first + j][0], &acc[j][0], sizeof acc[j][0]);
        std::memcpy(&s[first + j][16], &acc[j][1], sizeof acc[j][1]);
      }
      __asm__ volatile("" ::: "memory");
    }
  }
}

template <int R>
__attribute__((noinline)) void pv_rows(long reps) {
  for (long r = 0; r < reps; ++r) {
    for (int row = 0; row + R <= 32; row += R) {
      F16 y[R][4];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) std::memcpy(&y[i][c], &a[row + i][16 * c], sizeof y[i][c]);
      }
      for (int j = 0; j < 32; ++j) {
        F16 x[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) std::memcpy(&x[c], &v[j][16 * c], sizeof x[c]);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          const float weight = w[j][row + i];
#pragma GCC unroll 4
          for (int c = 0; c < 4; ++c) y[i][c] += x[c] * weight;
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) std::memcpy(&a[row + i][16 * c], &y[i][c], sizeof y[i][c]);
      }
    }
  }
}

// Median GFLOP/s of 7 passes of fn(reps), each doing `flops`.
template <class Fn>
void report(const char* name, int n, long reps, double flops, Fn fn) {
  std::vector<double> rates;
  for (int pass = 0; pass < 7; ++pass) {
    const double start = thread_seconds();
    fn(reps);
    rates.push_back(flops / (thread_seconds() - start) * 1e-9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("%s %d %.1f\n", name, n, rates[rates.size() / 2]);
}

}  // namespace

int main() {
  for (float* p : {&q[0][0], &k[0][0], &v[0][0], &w[0][0]}) {
    for (int i = 0; i < 2048; ++i) p[i] = 0.001f * static_cast<float>(i % 97);
  }
  const long chain_reps = 20000000, reps = 20000;
  const double block = 2.0 * 32 * 32 * 64;  // a tile's 32 rows by a block of 32 keys
  report("fma_chains", 8, chain_reps, 2.0 * 16 * 8 * chain_reps, fma_chains<8>);
  report("fma_chains", 12, chain_reps, 2.0 * 16 * 12 * chain_reps, fma_chains<12>);
  report("fma_chains", 16, chain_reps, 2.0 * 16 * 16 * chain_reps, fma_chains<16>);
  // Flops issued: a clamped last pass recomputes keys.
  report("qk_keys", 8, reps, block * reps, qk_keys<8>);
  report("qk_keys", 12, reps, block * reps * 36 / 32, qk_keys<12>);
  report("qk_keys", 14, reps, block * reps * 42 / 32, qk_keys<14>);
  report("pv_rows", 4, reps, block * reps, pv_rows<4>);
  report("pv_rows", 6, reps, block * reps * 30 / 32, pv_rows<6>);
  report("pv_rows", 8, reps, block * reps, pv_rows<8>);
  std::printf("(checksum %g)\n", static_cast<double>(sink + s[3][5] + a[7][9]));
  return 0;
}
