// Row-state code generation (targets/cpu/row_state.hpp) on an attention-shaped Body: the
// online-softmax reduction over keys, its scores an inner reduction over the head dim, causal
// through a select on j <= i, loops (head, i, c) with c the head dim. The same Body is rendered
// three ways -- row state folded in blocks of keys (what the code generator chooses), row state
// key by key, and plain (scores once per key and column) -- compiled, checked against each
// other and timed side by side, alternating, on the given thread count; prints one line per
// seq (the plain form only up to plain_max: it does 64 times the score work, seconds a run at
// seq 1024):
//   seq <n> row_state_ms <median> keywise_ms <median> [plain_ms <median>] max_abs_diff <d>
//   row_state_attention [--cpu-time] [threads (1)] [runs (5)] [plain_max (1024)] [seq ...]
//                       (seqs 512 1024 2048)
// Heads 8, head dim 64; buffers 64-byte aligned. --cpu-time (one thread only) times with this
// thread's CPU time instead of wall time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "targets/cpu/codegen.hpp"
#include "targets/cpu/jit.hpp"
#include "targets/cpu/threads.hpp"
#include "tests/unit/row_state_bodies.hpp"

using namespace kiln;

namespace {

constexpr long long kHeads = 8;
constexpr long long kHeadDim = 64;

// Wall time, or with `cpu_time` (one thread: the kernel runs on this thread) this thread's CPU
// time, which other processes on a loaded machine do not add to.
double seconds_of(const targets::cpu::CompiledKernel& kernel, std::vector<void*>& buffers,
                  const std::vector<long long>& dims, bool cpu_time) {
  timespec start{}, end{};
  const clockid_t clock = cpu_time ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  clock_gettime(clock, &start);
  kernel.fn(buffers.data(), dims.data());
  clock_gettime(clock, &end);
  return static_cast<double>(end.tv_sec - start.tv_sec) + 1e-9 * static_cast<double>(end.tv_nsec - start.tv_nsec);
}

// Elements on 64-byte boundaries.
template <class T>
struct Aligned {
  using value_type = T;
  Aligned() = default;
  template <class U>
  Aligned(const Aligned<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const Aligned<U>&) const { return true; }
};
using AlignedFloats = std::vector<float, Aligned<float>>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool cpu_time = argc > 1 && std::string(argv[1]) == "--cpu-time";
  if (cpu_time) {
    --argc;
    ++argv;
  }
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 5;
  const long long plain_max = argc > 3 ? std::atoll(argv[3]) : 1024;
  std::vector<long long> seqs;
  for (int a = 4; a < argc; ++a) seqs.push_back(std::atoll(argv[a]));
  if (seqs.empty()) seqs = {512, 1024, 2048};
  if (threads < 1 || runs < 1 || (cpu_time && threads != 1) ||
      std::any_of(seqs.begin(), seqs.end(), [](long long s) { return s < 1; })) {
    std::fprintf(stderr, "usage: row_state_attention [--cpu-time (1 thread)] [threads >= 1] [runs >= 1] [plain_max] [seq >= 1 ...]\n");
    return 2;
  }

  const testing::AttentionShape shape{kHeadDim, kHeadDim, testing::ScoreMask::Causal, true};
  const graph::Body body = testing::attention_body(shape);
  const std::vector<targets::cpu::KernelSource> sources = {
      targets::cpu::render_kernel(body), targets::cpu::render_kernel(body, {.key_blocks = false}),
      targets::cpu::render_kernel(body, {.row_state = false})};
  targets::cpu::JitCompiler jit;
  targets::cpu::load_thread_pool(jit);
  targets::cpu::set_threads(threads);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  for (const auto& k : kernels) {
    if (!k.fn) {
      std::fprintf(stderr, "%s\n", k.error.c_str());
      return 1;
    }
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (long long seq : seqs) {
    const auto n = static_cast<std::size_t>(kHeads * seq * kHeadDim);
    // 64-byte aligned, as the runtime's buffers and PyTorch's tensors are.
    AlignedFloats q(n), k(n), v(n);
    for (AlignedFloats* x : {&q, &k, &v}) {
      for (float& e : *x) e = value(rng);
    }
    std::vector<AlignedFloats> outputs(kernels.size(), AlignedFloats(n));
    std::vector<std::vector<void*>> buffers;
    for (auto& out : outputs) buffers.push_back({q.data(), k.data(), v.data(), out.data()});
    std::vector<long long> dims;  // heads, seq: body_dims order
    for (const std::string& d : sources[0].dims) dims.push_back(d == "heads" ? kHeads : seq);
    const std::size_t forms = seq <= plain_max ? kernels.size() : kernels.size() - 1;
    std::vector<std::vector<double>> times(forms);
    for (int r = 0; r <= runs; ++r) {  // the first pass warms up
      for (std::size_t f = 0; f < forms; ++f) {
        const double t = seconds_of(kernels[f], buffers[f], dims, cpu_time);
        if (r > 0) times[f].push_back(t);
      }
    }
    std::printf("seq %lld row_state_ms %.3f keywise_ms %.3f", seq, median(times[0]) * 1e3,
                median(times[1]) * 1e3);
    if (forms == kernels.size()) std::printf(" plain_ms %.3f", median(times[2]) * 1e3);
    double diff = 0.0;
    for (std::size_t f = 1; f < forms; ++f) {
      for (std::size_t e = 0; e < n; ++e) {
        diff = std::max(diff, static_cast<double>(std::fabs(outputs[0][e] - outputs[f][e])));
      }
    }
    std::printf(" max_abs_diff %.3g\n", diff);
    std::fflush(stdout);
  }
  return 0;
}
