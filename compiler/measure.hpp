// The measurement harness of the search (DESIGN §5, §7): a Kernel or library e-node costs its
// measured time on the target, for its input buffers and representative dim values, and every
// measurement persists in an on-disk cache so that a second compile of a model measures nothing.
//
// A Candidate is one executable e-node: a Body (compiled by the target) or a LibraryCall, with
// the sizes of the buffers it reads and writes. The Measurer prepares candidates in batches
// (one compiler run for many kernels), runs them on given inputs (for numerical checks), checks
// them against their reference semantics, and times them.
//
// Cache: <root>/measure/<target name>/<32 hex digits of key()>.time, one small text file per
// key:
//   line 1   the median time in seconds, printed with 17 significant digits (round-trips)
//   line 2   `# <target> <what>`: a comment for people (never read back)
// A file is written under a temporary name (pid and counter) and renamed into place, so readers
// never see half a file and concurrent writers of one key each leave a complete measurement
// (the last rename wins). A file that does not parse is a miss and is measured again.
// <root> defaults like the kernel cache: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// ~/.cache/kiln.
//
// Random inputs (time() and check()), seeded by the key, so reproducible:
// - floats uniform in [-1, 1], redrawn while they round to 0 in their dtype (never zeros: a
//   zero input hides wrong indexing and lets a kernel skip work);
// - bools 0 or 1;
// - integers: an input that the Body uses directly as a dynamic row (Gather/Scatter indices,
//   possibly through a Cast) is uniform in [0, row count) at the given dims, so it stays in
//   range; other i32 and i64 inputs are positions 0, 1, 2, ... (an Iota, as a causal mask
//   compares them: random values hid nothing, and a causal kernel was timed doing twice its
//   work); u8 are uniform in [0, 4). The compiler passes real-size tables.
// When a candidate's buffers are small (under 32 MiB together), several input sets (up to 8)
// are allocated and rotated between timed runs, so the timing is not that of a warm cache.
//
// Isolation (compiler/sandbox.hpp): every run of a candidate (run, check, time) happens in a
// worker process, so a kernel that crashes, hangs or throws fails that call with the reason and
// the compiler goes on; the compiler itself only prepares (compiles) kernels, never runs them.
// SandboxOptions::in_process runs them here instead, for unit tests that need speed.
//
// A Measurer is not thread-safe; separate processes may share one cache directory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/body.hpp"
#include "graph/compare.hpp"
#include "graph/dtype.hpp"
#include "compiler/sandbox.hpp"
#include "graph/expr.hpp"
#include "runtime/target.hpp"
#include "runtime/timer.hpp"
#include "support/hash.hpp"

namespace kiln::compiler {

// One executable e-node: the op, and the element count of each buffer it touches (inputs in
// slot order, then the output) at the dims it is measured for. Inputs may be larger than a Body
// reads (views into bigger buffers); the output holds output_elements.
struct Candidate {
  std::variant<graph::Body, runtime::LibraryCall> op;
  std::vector<graph::DType> input_dtypes;
  std::vector<std::int64_t> input_elements;
  graph::DType output_dtype = graph::DType::F32;
  std::int64_t output_elements = 0;
};

// A Body candidate: dtypes from the Body, output size evaluated at `dims`.
Candidate body_candidate(graph::Body body, std::vector<std::int64_t> input_elements,
                         const graph::DimValues& dims);
// A "gemm" LibraryCall candidate: buffer sizes from its params at `dims` (A, B, then C).
Candidate gemm_candidate(runtime::LibraryCall call, const graph::DimValues& dims);

// "" when every element a "gemm" LibraryCall reads or writes lies inside its buffers (A, B, C
// with `buffer_elements` elements, Exprs in the same dims) for all dims >= 1, else the reason
// naming the operand (graph::prove_in_bounds); a call that is not a gemm is not known there.
std::string library_call_in_bounds(const runtime::LibraryCall& call,
                                   const std::vector<graph::Expr>& buffer_elements);

// The reduction length behind each output element of a candidate at `dims` (a Body's nested
// Reduce extents, a gemm's k): what graph::tolerance scales with.
std::int64_t reduction_length(const Candidate& candidate, const graph::DimValues& dims);

// Random inputs for a candidate (the rules above), one vector per input, reproducible from
// `seed`: what time() and check() run on, and what a caller feeds its own reference.
std::vector<std::vector<double>> random_inputs(const Candidate& candidate,
                                               const graph::DimValues& dims, std::uint64_t seed);

// The machine a measurement was taken on: CPU model (/proc/cpuinfo), `uname -m`, hardware
// threads, OMP_NUM_THREADS and the OpenMP wait policy. Part of every cache key.
std::string machine_fingerprint();

// For candidates only worth knowing when faster than a known program: a first run of at least
// `give_up_seconds` is the time (one run, see runtime::TimerOptions), and a job (its inputs and
// runs) past `job_seconds`, when below the sandbox's limit, is killed as hung.
struct TimeBound {
  double give_up_seconds = std::numeric_limits<double>::infinity();
  double job_seconds = std::numeric_limits<double>::infinity();
};

class Measurer {
 public:
  // `cache_root` empty: the default root (see above). `fingerprint` names what else a time
  // depends on that the Target interface does not say (compiler version and flags, GPU arch);
  // it is appended to machine_fingerprint() in every key.
  // `sandbox`: how candidates are isolated (see above).
  explicit Measurer(runtime::Target& target, std::filesystem::path cache_root = {},
                    std::string fingerprint = "", runtime::TimerOptions timer = {},
                    SandboxOptions sandbox = {});
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  // Prepares many candidates in one target.prepare batch (one compile); per candidate, "" or
  // why the target rejected it (unsupported op, compile error). Results are kept: preparing a
  // candidate again, or running it, costs nothing more. Library calls only need supports().
  std::vector<std::string> prepare(const std::vector<Candidate>& candidates,
                                   const graph::DimValues& dims);

  // The output of one run of a candidate, or why there is none (the target rejected it, it
  // crashed, hung or threw; see compiler/sandbox.hpp).
  struct RunResult {
    std::vector<double> output;
    std::string failure;
    bool ok() const { return failure.empty(); }
  };

  // Runs a candidate once on `inputs` (one vector per input, input_elements long, converted to
  // the native dtype), in a worker, and returns its output as doubles. The output buffer starts
  // as zeros, or as the aliased input's contents when the Body has output_aliases(). A candidate
  // that was not prepared is prepared first.
  RunResult try_run(const Candidate& candidate, const std::vector<std::vector<double>>& inputs,
                    const graph::DimValues& dims);
  // Many runs in one worker (one fork for the batch; a crash or hang fails only its own run).
  // Prefer it to a loop of try_run: a fork of a compiler holding much memory is slow.
  std::vector<RunResult> try_run_all(const std::vector<Candidate>& candidates,
                                     const std::vector<std::vector<std::vector<double>>>& inputs,
                                     const graph::DimValues& dims);
  // try_run, with a failure as a UserError naming the candidate and the reason.
  std::vector<double> run(const Candidate& candidate,
                          const std::vector<std::vector<double>>& inputs,
                          const graph::DimValues& dims);

  // Runs a candidate on random inputs (see above) and compares it with its reference semantics
  // (graph::interpret_body, targets::gemm_reference; slow, so use small dims), both in a worker
  // (interpreting an unchecked Body may not end either): "" when the output agrees by
  // graph::mismatch (`tolerance` overrides graph::tolerance of the dtype and
  // reduction_length()), else a message naming the candidate and the first differing element,
  // or why it did not run (rejected by the target, crashed, hung, threw) or has no reference.
  std::string check(const Candidate& candidate, const graph::DimValues& dims,
                    std::optional<graph::Tolerance> tolerance = std::nullopt);
  // check() of many candidates, their runs in one worker.
  std::vector<std::string> check_all(const std::vector<Candidate>& candidates,
                                     const graph::DimValues& dims,
                                     std::optional<graph::Tolerance> tolerance = std::nullopt);

  // The median time in seconds on random inputs (see above), read from the cache when present
  // (then nothing is prepared or run), else measured with runtime::measure in a worker and
  // stored; or why it could not be measured (nothing is stored then).
  struct TimeResult {
    double seconds = 0.0;
    std::string failure;
    bool over_bound = false;  // timed by one run, at least TimeBound::give_up_seconds
    bool ok() const { return failure.empty(); }
  };
  TimeResult try_time(const Candidate& candidate, const graph::DimValues& dims);
  // try_time of many candidates, the ones not cached timed one after another in one worker (one
  // fork for the batch: forking a compiler that holds much memory is what sandboxing costs).
  std::vector<TimeResult> try_time_all(const std::vector<Candidate>& candidates,
                                       const graph::DimValues& dims, const TimeBound& bound = {});
  // try_time, with a failure as a UserError naming the candidate and the reason.
  double time(const Candidate& candidate, const graph::DimValues& dims);
  // The cached time, if any (counts as nothing in stats()): lets the compiler prepare only the
  // candidates that still need measuring.
  std::optional<double> cached(const Candidate& candidate, const graph::DimValues& dims) const;

  // A whole program (a group's LLIR, by its deterministic text) timed end to end: read from
  // the cache, else `measure()` (seconds) and stored, so that a second compile decides exactly
  // as the first and measures nothing. Counts in stats() like time().
  double time_program(const std::string& program, const graph::DimValues& dims,
                      const std::function<double()>& measure);

  struct Stats {
    std::size_t measured = 0;    // time() calls that ran the candidate
    std::size_t cache_hits = 0;  // time() calls answered from the cache
    std::size_t runs = 0;        // executions of candidates (warm-up, timed, run(), check())
    std::size_t failures = 0;    // runs and timings that crashed, hung or threw in a worker
    double seconds = 0.0;        // wall time spent measuring (time() misses)
  };
  const Stats& stats() const { return stats_; }

  // How candidates are isolated: for other runs the compiler makes (a whole program).
  const SandboxOptions& sandbox() const { return sandbox_; }
  const runtime::Capabilities& capabilities() const { return target_.capabilities(); }

  // The folder holding this target's measurements.
  const std::filesystem::path& cache_dir() const { return dir_; }
  // The fingerprint used in keys: machine_fingerprint() and the constructor's string.
  const std::string& fingerprint() const { return fingerprint_; }

  // The cache key: XXH3-128 of a text naming the op (the Body's to_text, or the LibraryCall's
  // op, dtype and params), every buffer's dtype and element count, the values of the dims the
  // op mentions (other entries of `dims` do not matter), the target name and `fingerprint`.
  // A dim the op mentions but `dims` lacks is an internal error.
  static support::Hash128 key(const Candidate& candidate, const graph::DimValues& dims,
                              const std::string& target_name, const std::string& fingerprint);
  // 32 lower-case hex digits (high word first), as in cache file names.
  static std::string hex(const support::Hash128& key);

 private:
  // The prepared kernel (nullptr for a library call), or the target's reason in `error`.
  const runtime::Kernel* kernel_for(const Candidate& candidate, const graph::DimValues& dims,
                                    std::string& error);
  // A job that runs the candidate once on `inputs` and returns its output bytes.
  Job run_job(const Candidate& candidate, const runtime::Kernel* kernel,
              const std::vector<std::vector<double>>& inputs, const graph::DimValues& dims);
  // A job that times the candidate on random inputs, returning "seconds runs".
  Job time_job(const Candidate& candidate, const runtime::Kernel* kernel,
               const graph::DimValues& dims, const runtime::TimerOptions& timer);
  void launch(const Candidate& candidate, const runtime::Kernel* kernel,
              const std::vector<void*>& buffers, const graph::DimValues& dims);
  std::filesystem::path cache_file(const Candidate& candidate,
                                   const graph::DimValues& dims) const;

  runtime::Target& target_;
  std::filesystem::path dir_;
  std::string fingerprint_;
  runtime::TimerOptions timer_;
  SandboxOptions sandbox_;
  // Prepared kernels (or the target's error) by Body key.
  std::map<std::pair<std::uint64_t, std::uint64_t>, runtime::Prepared> kernels_;
  Stats stats_;
};

}  // namespace kiln::compiler
