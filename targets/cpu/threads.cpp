// The CPU target's thread pool; see threads.hpp.
#include "targets/cpu/threads.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/diagnostic.hpp"

namespace kiln::targets::cpu {

namespace {

// The pool's one entry point, in the kernel ABI (codegen.hpp) so that the JIT builds and
// caches it like a kernel. args[0] says what to do:
//   0: write omp_get_max_threads() and omp_get_num_procs() to ((long long*)buffers[0])[0..1]
//   1: omp_set_num_threads(args[1])
//   2: run ((void (*)(void*, long long))buffers[0])(buffers[1], i) for i < args[1], in parallel
//   3: run ((void (*)(void*, int))buffers[0])(buffers[1], t) on each thread t of a team
constexpr const char* kPoolSymbol = "kiln_thread_pool_v2";
constexpr const char* kPoolSource = R"(#include <omp.h>
extern "C" void kiln_thread_pool_v2(void* const* buffers, const long long* args) {
  if (args[0] == 0) {
    long long* out = (long long*)buffers[0];
    out[0] = omp_get_max_threads();
    out[1] = omp_get_num_procs();
  } else if (args[0] == 1) {
    omp_set_num_threads((int)args[1]);
  } else if (args[0] == 3) {
    void (*task)(void*, int) = (void (*)(void*, int))buffers[0];
    void* context = buffers[1];
#pragma omp parallel
    task(context, omp_get_thread_num());
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

// Where threads may run: the process's CPUs (taskset, cpuset), read once before any thread of
// the pool is pinned, each with its core (package, core id; the CPU alone where sysfs does not
// say), so that threads go to distinct cores before they share one.
struct Cpus {
  std::vector<int> ids;
  std::vector<std::pair<long, long>> cores;
};

const Cpus& process_cpus() {
  static const Cpus cpus = [] {
    Cpus c;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (::sched_getaffinity(0, sizeof mask, &mask) != 0) return c;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &mask)) continue;
      auto read = [cpu](const char* name) {
        std::ifstream file("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/" +
                           name);
        long value = -1;
        file >> value;
        return value;
      };
      const long package = read("physical_package_id"), core = read("core_id");
      c.ids.push_back(cpu);
      c.cores.push_back(package < 0 || core < 0 ? std::pair<long, long>{-1, cpu}
                                                : std::pair<long, long>{package, core});
    }
    return c;
  }();
  return cpus;
}

// Whether the user placed OpenMP's threads (then kiln leaves them where the runtime puts them).
bool user_places_threads() {
  return std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") ||
         std::getenv("GOMP_CPU_AFFINITY");
}

// The CPUs for the pool's threads besides the calling one, which runs on `own`: one per other
// core first, then the other CPUs but `own`.
std::vector<int> worker_cpus(int own) {
  const Cpus& cpus = process_cpus();
  std::set<std::pair<long, long>> taken;
  for (std::size_t k = 0; k < cpus.ids.size(); ++k) {
    if (cpus.ids[k] == own) taken.insert(cpus.cores[k]);
  }
  std::vector<int> first, then;
  for (std::size_t k = 0; k < cpus.ids.size(); ++k) {
    if (cpus.ids[k] == own) continue;
    (taken.insert(cpus.cores[k]).second ? first : then).push_back(cpus.ids[k]);
  }
  first.insert(first.end(), then.begin(), then.end());
  return first;
}

cpu_set_t mask_of(const std::vector<int>& ids) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int cpu : ids) CPU_SET(cpu, &mask);
  return mask;
}

// A process forked by a pinned thread starts on the whole process's CPUs again (the sandbox's
// workers start their own teams there).
void unpin_in_child() {
  const cpu_set_t all = mask_of(process_cpus().ids);
  ::pthread_setaffinity_np(::pthread_self(), sizeof all, &all);
}

// Places the calling thread's team of `threads` (see set_threads): threads 1.. each on a CPU of
// its own, the calling thread on the rest of the process's CPUs; on one thread, or too few
// CPUs, every thread on all of them.
void place_threads(int threads) {
  if (user_places_threads() || process_cpus().ids.empty()) return;
  std::vector<int> workers;
  if (threads >= 2) {
    workers = worker_cpus(::sched_getcpu());
    workers.resize(workers.size() >= static_cast<std::size_t>(threads - 1)
                       ? static_cast<std::size_t>(threads - 1) : 0);
  }
  std::vector<int> rest;
  for (int cpu : process_cpus().ids) {
    if (std::find(workers.begin(), workers.end(), cpu) == workers.end()) rest.push_back(cpu);
  }
  const cpu_set_t own = mask_of(rest);
  ::pthread_setaffinity_np(::pthread_self(), sizeof own, &own);
  if (!workers.empty()) {
    static const int registered = ::pthread_atfork(nullptr, nullptr, unpin_in_child);
    (void)registered;
  }
  if (threads < 2) return;
  on_each_thread(
      [](void* context, int thread) {
        if (thread == 0) return;
        const std::vector<int>& cpus = *static_cast<const std::vector<int>*>(context);
        const cpu_set_t mask = static_cast<std::size_t>(thread) <= cpus.size()
                                   ? mask_of({cpus[static_cast<std::size_t>(thread) - 1]})
                                   : mask_of(process_cpus().ids);
        ::pthread_setaffinity_np(::pthread_self(), sizeof mask, &mask);
      },
      &workers);
}

}  // namespace

void load_thread_pool(JitCompiler& jit) {
  if (pool) return;
  std::vector<CompiledKernel> compiled = jit.compile({KernelSource{kPoolSymbol, kPoolSource, {}}});
  KILN_ASSERT(compiled.size() == 1 && compiled[0].fn,
              "cpu: the thread pool's entry point does not compile: " + compiled[0].error);
  process_cpus();  // before any thread is pinned
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
  // OpenMP counts the calling thread's CPUs, fewer once set_threads has placed it.
  if (pool && !process_cpus().ids.empty()) return static_cast<int>(process_cpus().ids.size());
  return static_cast<int>(query(1));
}

int set_threads(int threads) {
  const int n = threads > 0 ? threads : available_cores();
  if (pool) {
    void* buffers[1] = {nullptr};
    const long long args[2] = {1, n};
    pool(buffers, args);
  }
  place_threads(n);
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

void on_each_thread(void (*task)(void* context, int thread), void* context) {
  if (!pool) {
    task(context, 0);
    return;
  }
  void* buffers[2] = {reinterpret_cast<void*>(task), context};
  const long long args[2] = {3, 0};
  pool(buffers, args);
}

ProcessCpusScope::ProcessCpusScope() {
  CPU_ZERO(&saved_);
  const Cpus& cpus = process_cpus();
  restore_ = !cpus.ids.empty() &&
             ::pthread_getaffinity_np(::pthread_self(), sizeof saved_, &saved_) == 0;
  if (!restore_) return;
  const cpu_set_t all = mask_of(cpus.ids);
  ::pthread_setaffinity_np(::pthread_self(), sizeof all, &all);
}

ProcessCpusScope::~ProcessCpusScope() {
  if (restore_) ::pthread_setaffinity_np(::pthread_self(), sizeof saved_, &saved_);
}

}  // namespace kiln::targets::cpu
