// Sandboxed execution: candidate kernels run in a worker process, so that a crash (a signal), a
// hang (past a time limit, then killed) or an exception in one of them rejects that candidate
// with the reason instead of killing the compiler (DESIGN §7).
//
// Design: fork per batch. A worker is forked from the compiler when a batch of jobs starts; it
// runs the jobs in order and sends each result back over a pipe as it finishes. When a job
// crashes or hangs, its worker is gone (or killed), the job gets the reason, and a fresh worker
// continues with the next job. Forking from the compiler, rather than from a server started
// early or an exec'd worker binary, gives every job the compiler's prepared kernels and input
// data by copy-on-write, with nothing to serialize but the results; a batch of jobs pays for one
// fork (bench/compile/sandbox_overhead measures it against running in process).
//
// Threads and fork. Only the forking thread exists in a worker. OpenBLAS (pthreads) shuts its
// pool down around fork and restarts it on use; GNU OpenMP does not: the forking thread's team
// still lists threads that stayed in the parent, and the first parallel region would wait for
// them forever. So a worker runs its jobs on a fresh thread, whose OpenMP team starts empty.
// Standard streams are flushed before each fork, so nothing buffered is printed twice.
//
// Results are bytes (a job serializes its own: a kernel's output vector, a time). Workers exit
// with _exit after their last job: no destructor or atexit handler of the compiler runs twice.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kiln::compiler {

struct SandboxOptions {
  // Seconds a job may take, from the end of the previous one (or the worker's start); then the
  // worker is killed and the job fails as hung.
  double time_limit_seconds = 30.0;
  // Run jobs in this process instead (unit tests that need speed). Exceptions still fail only
  // their job; a crash or hang is not contained. The compiler's default is a worker process.
  bool in_process = false;
};

// What a job gave back: its bytes, or why it failed ("crashed: signal 11 (Segmentation fault)",
// "hung: no result within 2 s, killed", "threw: ...").
struct JobResult {
  std::string output;
  std::string failure;
  bool ok() const { return failure.empty(); }
};

// A job: computes a result and serializes it. Runs in a worker process: what it changes in
// memory is lost, only the returned bytes come back.
using Job = std::function<std::string()>;

// Runs the jobs in order, in worker processes (see above); one result per job, in order.
std::vector<JobResult> run_sandboxed(const std::vector<Job>& jobs,
                                     const SandboxOptions& options = {});
JobResult run_sandboxed(const Job& job, const SandboxOptions& options = {});

}  // namespace kiln::compiler
