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

#include "targets/cpu/jit.hpp"

namespace kiln::targets::cpu {

// Compiles (once, cached) and loads the pool's entry point with `jit`; later calls are free.
// Until then everything below runs on the calling thread alone.
void load_thread_pool(JitCompiler& jit);

// Stops the threads OpenBLAS starts when it is loaded (they poll for ~0.1 s, then sleep) and
// keeps it on one thread; library calls are split across the OpenMP threads instead.
// load_thread_pool calls it; a command that uses no BLAS (`kiln egg`) calls it first thing.
void stop_blas_threads();

// The cores the machine offers (OpenMP's count: cpuset and affinity respected); 1 before
// load_thread_pool.
int available_cores();

// Runs kernels and library calls on `threads` threads (0: every available core), from now on,
// for work started on the calling thread. Returns the count in use.
int set_threads(int threads);

// The thread count in use on the calling thread.
int threads_in_use();

// Runs task(context, i) for i in [0, count) across the pool's threads (statically split),
// returning when all are done.
void parallel_for(long long count, void (*task)(void* context, long long i), void* context);

}  // namespace kiln::targets::cpu
