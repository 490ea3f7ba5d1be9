// The CPU target's one thread pool: the OpenMP runtime the generated kernels use also runs
// the library calls' parallel blocks, with OpenBLAS single-threaded inside each block.
//
// Why one pool: OpenBLAS's pthread build keeps its own threads, and when they and OpenMP's
// (each spinning after its work) share two cores, every step waits for the other pool
// (measured: a prefill 3x slower on 2 threads than on 1). Splitting a product across OpenMP
// threads ourselves (gemm.cpp) keeps every core in one pool, with no package change.
//
// The pool is reached through one small function compiled by the JIT with the kernels' flags
// (kiln's own code does not link OpenMP): the runtime is then loaded by the first kernel
// library, after JitCompiler has set its wait policy (jit.cpp: idle threads spin briefly, then
// sleep), which libgomp reads once, when it is loaded.
#pragma once

#include <sched.h>

#include "targets/cpu/jit.hpp"

namespace kiln::targets::cpu {

// Compiles (once, cached) and loads the pool's entry point with `jit`; later calls are free.
// Until then everything below runs on the calling thread alone.
void load_thread_pool(JitCompiler& jit);

// Stops the threads OpenBLAS starts when it is loaded (they poll for ~0.1 s, then sleep) and
// keeps it on one thread; library calls are split across the OpenMP threads instead.
// load_thread_pool calls it; a command that uses no BLAS (`kiln egg`) calls it first thing.
void stop_blas_threads();

// The CPUs the process may run on, as load_thread_pool found them (cpuset and affinity
// respected; what OpenMP counts before any thread is placed); 1 before load_thread_pool.
int available_cores();

// Runs kernels and library calls on `threads` threads (0: every available core), from now on,
// for work started on the calling thread. Returns the count in use.
//
// On more than one thread the threads are placed: each of the pool's threads besides the
// calling one is pinned to a CPU of its own (of the process's CPUs, one per core first, other
// than the one the calling thread runs on), and the calling thread to the CPUs left. Unplaced,
// both threads of a 2-thread program sometimes shared one core for the process's life
// (`kiln compile mlp --dim batch=64 --threads 2 --runs 20`: 13 of 120 warm processes at
// 1.4-1.9 ms instead of 0.4; 4 of 120 with only the pool's threads pinned, 0 with both).
// A process forked by the calling thread starts on all the process's CPUs again, as does one
// started inside a ProcessCpusScope. On one thread, or with fewer CPUs than threads, every
// thread may run on all of them; a user's own OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY
// leaves placement to the OpenMP runtime.
int set_threads(int threads);

// The thread count in use on the calling thread.
int threads_in_use();

// Runs task(context, t) once on each thread t of the calling thread's team, [0,
// threads_in_use()), returning when all are done.
void on_each_thread(void (*task)(void* context, int thread), void* context);

// For its life, the calling thread may run on all the process's CPUs, so that a process it
// starts (the JIT's compiler) is not confined to the CPUs set_threads left it; then its
// placement is restored.
class ProcessCpusScope {
 public:
  ProcessCpusScope();
  ~ProcessCpusScope();
  ProcessCpusScope(const ProcessCpusScope&) = delete;
  ProcessCpusScope& operator=(const ProcessCpusScope&) = delete;

 private:
  cpu_set_t saved_;
  bool restore_ = false;
};

// Runs task(context, i) for i in [0, count) across the pool's threads (statically split),
// returning when all are done.
void parallel_for(long long count, void (*task)(void* context, long long i), void* context);

}  // namespace kiln::targets::cpu
