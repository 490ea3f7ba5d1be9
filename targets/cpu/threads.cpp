// The CPU target's thread pool; see threads.hpp.
#include "targets/cpu/threads.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include "support/diagnostic.hpp"

namespace kiln::targets::cpu {

namespace {

// The pool's one entry point, in the kernel ABI (codegen.hpp) so that the JIT builds and
// caches it like a kernel. args[0] says what to do:
//   0: write omp_get_max_threads() and omp_get_num_procs() to ((long long*)buffers[0])[0..1]
//   1: omp_set_num_threads(args[1])
//   2: run ((void (*)(void*, long long))buffers[0])(buffers[1], i) for i < args[1], in parallel
constexpr const char* kPoolSymbol = "kiln_thread_pool_v1";
constexpr const char* kPoolSource = R"(#include <omp.h>
extern "C" void kiln_thread_pool_v1(void* const* buffers, const long long* args) {
  if (args[0] == 0) {
    long long* out = (long long*)buffers[0];
    out[0] = omp_get_max_threads();
    out[1] = omp_get_num_procs();
  } else if (args[0] == 1) {
    omp_set_num_threads((int)args[1]);
  } else {
    void (*task)(void*, long long) = (void (*)(void*, long long))buffers[0];
    void* context = buffers[1];
    const long long count = args[1];
#pragma omp parallel for schedule(static)
    for (long long i = 0; i < count; ++i) task(context, i);
  }
}
)";

KernelFn pool = nullptr;

long long query(int which) {
  if (!pool) return 1;
  long long out[2] = {1, 1};
  void* buffers[1] = {out};
  const long long args[2] = {0, 0};
  pool(buffers, args);
  return out[which];
}

}  // namespace

void load_thread_pool(JitCompiler& jit) {
  if (pool) return;
  std::vector<CompiledKernel> compiled = jit.compile({KernelSource{kPoolSymbol, kPoolSource, {}}});
  KILN_ASSERT(compiled.size() == 1 && compiled[0].fn,
              "cpu: the thread pool's entry point does not compile: " + compiled[0].error);
  pool = compiled[0].fn;
  stop_blas_threads();
}

void stop_blas_threads() {
  // OpenBLAS's own pool never runs: every library call is split across the OpenMP threads by
  // gemm.cpp, each block calling OpenBLAS on one thread.
  openblas_set_num_threads(1);
  // Its pthread build starts that pool when it is loaded, and the pool's threads poll with
  // sched_yield for their first ~0.1 s (2^28 cycles) before sleeping: a short program timed
  // right after start-up shared the cores with them (`kiln compile mlp --dim batch=64`, 2
  // threads, warm: 1.3-1.7 ms in 7 of 10 runs, 0.5 ms in the others and in every run with
  // OPENBLAS_NUM_THREADS=1). Stop them; at one thread OpenBLAS never restarts them. Looked
  // up by name: another BLAS need not have it.
  using Shutdown = int (*)();
  if (auto shutdown = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"))) {
    shutdown();
  }
}

int available_cores() {
  return static_cast<int>(query(1));
}

int set_threads(int threads) {
  const int n = threads > 0 ? threads : available_cores();
  if (pool) {
    void* buffers[1] = {nullptr};
    const long long args[2] = {1, n};
    pool(buffers, args);
  }
  return threads_in_use();
}

int threads_in_use() {
  return static_cast<int>(query(0));
}

void parallel_for(long long count, void (*task)(void* context, long long i), void* context) {
  if (!pool || count <= 1) {
    for (long long i = 0; i < count; ++i) task(context, i);
    return;
  }
  void* buffers[2] = {reinterpret_cast<void*>(task), context};
  const long long args[2] = {2, count};
  pool(buffers, args);
}

}  // namespace kiln::targets::cpu
