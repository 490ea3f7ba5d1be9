// The cpu target's one thread pool: two threads are never slower than one, for one-op kernels
// (elementwise, reductions, softmax) and products (matrix-vector and matrix-matrix) at a few
// shapes from tiny to prefill-sized; `set_threads` reports the count in use. Times are
// compared by the ratio of their medians, with a generous margin and a retry, so that a busy
// machine does not fail the test; on a one-core machine the comparison is skipped (warned).
// Where the threads run: on more than one, each on CPUs of its own; on one, anywhere.
#include <catch2/catch.hpp>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graph/tensor.hpp"
#include "runtime/executor.hpp"
#include "runtime/lower_one_op.hpp"
#include "graph/native.hpp"
#include "targets/cpu/target.hpp"
#include "targets/cpu/threads.hpp"

using namespace kiln;
using graph::DimValues;
using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;
using graph::Tensor;

namespace {

runtime::Target& cpu_target() {
  static std::unique_ptr<runtime::Target> target =
      targets::make_cpu_target(std::filesystem::path(KILN_RUNTIME_TEST_CACHE));
  return *target;
}

// Two threads may be this much slower than one before the test fails (ratio of medians).
constexpr double kMargin = 1.5;
constexpr int kAttempts = 3;  // a busy moment retries

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `body` over `runs` calls on `threads` threads (after one warm-up call).
template <class F>
double median_seconds(int threads, int runs, F body) {
  cpu_target().set_threads(threads);
  body();
  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(times);
}

// True when `body` on two threads takes at most kMargin times its time on one, in one of
// kAttempts tries. Leaves the target on two threads.
template <class F>
bool two_threads_not_slower(const std::string& what, F body) {
  double one = 0, two = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    one = median_seconds(1, 15, body);
    two = median_seconds(2, 15, body);
    if (two <= kMargin * one) return true;
  }
  WARN(what << ": 1 thread " << one * 1e6 << " us, 2 threads " << two * 1e6 << " us");
  return false;
}

// The process's CPUs, read when the test program starts, before any thread is placed.
const cpu_set_t kProcessCpus = [] {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ::sched_getaffinity(0, sizeof mask, &mask);
  return mask;
}();

cpu_set_t calling_thread_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ::sched_getaffinity(0, sizeof mask, &mask);
  return mask;
}

// Each of the calling thread's team's CPUs, by thread number.
std::vector<cpu_set_t> team_cpus() {
  std::vector<cpu_set_t> masks(static_cast<std::size_t>(targets::cpu::threads_in_use()));
  targets::cpu::on_each_thread(
      [](void* context, int thread) {
        auto& out = *static_cast<std::vector<cpu_set_t>*>(context);
        if (static_cast<std::size_t>(thread) < out.size()) out[thread] = calling_thread_cpus();
      },
      &masks);
  return masks;
}

bool same_cpus(const cpu_set_t& a, const cpu_set_t& b) { return CPU_EQUAL(&a, &b); }

Tensor random_tensor(const std::vector<std::int64_t>& shape, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Tensor t{graph::DType::F32, shape, {}};
  t.data.resize(static_cast<std::size_t>(graph::numel(shape)));
  for (double& x : t.data) x = dist(rng);
  return t;
}

}  // namespace

TEST_CASE("cpu threads: set_threads reports the count in use", "[runtime][cpu][threads]") {
  CHECK(cpu_target().set_threads(1) == 1);
  CHECK(cpu_target().threads() == 1);
  CHECK(cpu_target().set_threads(0) == targets::cpu::available_cores());
  CHECK(cpu_target().threads() == targets::cpu::available_cores());
}

TEST_CASE("cpu threads: one-op kernels are not slower on two threads than on one",
          "[runtime][cpu][threads]") {
  if (targets::cpu::available_cores() < 2) {
    WARN("skipped: one core");
    return;
  }
  GraphBuilder gb;
  const Expr rows = Expr::dim("rows"), cols = Expr::dim("cols");
  GraphTensor x = gb.input("x", {rows, cols});
  (exp(x) * x + 1.0).output("elementwise");
  sum(x * x, 1).output("row_sums");
  softmax(x, 1).output("softmax");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  runtime::Executor executor(llir, cpu_target());
  std::mt19937 rng(5);
  // A decode row, a short prefill, a long one, an attention score matrix.
  for (const DimValues& dims :
       {DimValues{{"rows", 1}, {"cols", 576}}, DimValues{{"rows", 8}, {"cols", 1536}},
        DimValues{{"rows", 64}, {"cols", 1536}}, DimValues{{"rows", 512}, {"cols", 512}}}) {
    executor.bind("x", random_tensor({dims.at("rows"), dims.at("cols")}, rng));
    const std::string what =
        "rows " + std::to_string(dims.at("rows")) + ", cols " + std::to_string(dims.at("cols"));
    CHECK(two_threads_not_slower(what, [&] { executor.run(dims, {}, nullptr, runtime::Executor::Fetch::Nothing); }));
  }
}

TEST_CASE("cpu threads: products are not slower on two threads than on one",
          "[runtime][cpu][threads]") {
  if (targets::cpu::available_cores() < 2) {
    WARN("skipped: one core");
    return;
  }
  runtime::Device& device = cpu_target().device();
  std::mt19937 rng(7);
  // [m, k] x [k, n]^T as a Linear layer computes it: decode (m 1), prefill (8, 64), and one
  // weight small enough to stay on one thread.
  for (const auto& [m, n, k] : std::vector<std::array<long long, 3>>{
           {1, 576, 576}, {1, 1536, 576}, {8, 1536, 576}, {64, 576, 1536}, {1, 64, 64}}) {
    runtime::LibraryCall call;
    call.op = "gemm";
    call.params = {{"m", Expr(m)}, {"n", Expr(n)}, {"k", Expr(k)}, {"trans_b", Expr(1)}};
    std::vector<void*> buffers;
    for (const long long size : {m * k, n * k, m * n}) {
      const std::vector<std::byte> bytes =
          graph::to_native(random_tensor({size}, rng).data, graph::DType::F32);
      buffers.push_back(device.allocate(bytes.size()));
      device.upload(buffers.back(), bytes.data(), bytes.size());
    }
    const std::string what =
        "gemm m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k);
    CHECK(two_threads_not_slower(what, [&] { device.call(call, buffers, {}); }));
    for (void* p : buffers) device.release(p);
  }
}

TEST_CASE("cpu threads: on several threads each runs on CPUs of its own, on one anywhere",
          "[runtime][cpu][threads]") {
  cpu_target();  // loads the pool
  if (std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") ||
      std::getenv("GOMP_CPU_AFFINITY")) {
    WARN("skipped: the user places OpenMP's threads");
    return;
  }
  const int cpus = CPU_COUNT(&kProcessCpus);
  CHECK(targets::cpu::available_cores() == cpus);
  for (int threads = 2; threads <= std::min(cpus, 4); ++threads) {
    INFO("threads " << threads);
    REQUIRE(targets::cpu::set_threads(threads) == threads);
    const std::vector<cpu_set_t> team = team_cpus();
    REQUIRE(team.size() == static_cast<std::size_t>(threads));
    // The other threads on one CPU each, all different, none the calling thread's; the
    // calling thread on the rest.
    cpu_set_t all;
    CPU_ZERO(&all);
    for (const cpu_set_t& mask : team) {
      CHECK(CPU_COUNT(&mask) >= 1);
      cpu_set_t both;
      CPU_AND(&both, &all, &mask);
      CHECK(CPU_COUNT(&both) == 0);
      CPU_OR(&all, &all, &mask);
    }
    for (std::size_t t = 1; t < team.size(); ++t) CHECK(CPU_COUNT(&team[t]) == 1);
    CHECK(same_cpus(all, kProcessCpus));
    // A forked process, and the JIT's compiler, start on all the process's CPUs.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(same_cpus(calling_thread_cpus(), kProcessCpus) ? 0 : 1);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    {
      const targets::cpu::ProcessCpusScope unconfined;
      CHECK(same_cpus(calling_thread_cpus(), kProcessCpus));
    }
    CHECK(same_cpus(calling_thread_cpus(), team[0]));
  }
  if (cpus < 2) WARN("one CPU: no thread was pinned");
  // More threads than CPUs, or one thread: every thread anywhere.
  REQUIRE(targets::cpu::set_threads(cpus + 1) == cpus + 1);
  for (const cpu_set_t& mask : team_cpus()) CHECK(same_cpus(mask, kProcessCpus));
  REQUIRE(targets::cpu::set_threads(1) == 1);
  CHECK(same_cpus(calling_thread_cpus(), kProcessCpus));
  cpu_target().set_threads(0);
}
