// The target interface (DESIGN §6): what the runtime and the compiler need from a backend.
// A target turns Bodies into kernels it can run, owns a device (memory, launches, library
// calls) and names its own rule files. targets/reference, targets/cpu and, later, targets/cuda
// implement it; targets/registry lists them (no static-constructor registration).
//
// Buffers are device addresses (`void*`): host memory on the CPU and reference targets, device
// memory on a GPU. Pointer arithmetic on them (an arena plus an offset) is allowed. Elements are
// in their dtype's native layout (graph/native.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"

namespace kiln::runtime {

// A library operation, by name with symbolic parameters. "gemm" (the only one so far):
//   C[b] = A[b] x B[b] for b < batch, with m, n, k; A is m x k (or k x m when trans_a is 1),
//   B k x n (or n x k when trans_b is 1), each row-major with leading dims lda, ldb, ldc and
//   batch strides stride_a, stride_b, stride_c and offsets offset_a, offset_b (elements; 0
//   when absent); dtype f32, f64 (and f16, bf16 where a target has them). An epilogue, where
//   the target offers one (cuBLASLt): bias 1 adds a bias input of n elements to every row,
//   accumulate 1 adds an input C0 laid out like C (BLAS's beta = 1), activation 1 (ReLU) or
//   2 (GELU, tanh form) is applied last: C = act(A x B + C0 + bias).
// Buffers of a call: its inputs in order (A, B, then the bias and C0 where present), then the
// output (C).
struct LibraryCall {
  std::string op;
  graph::DType dtype = graph::DType::F32;
  std::map<std::string, graph::Expr> params;
  friend bool operator==(const LibraryCall&, const LibraryCall&) = default;
};

// What a target offers, as data (for reports and for the compiler's choices).
struct Capabilities {
  std::vector<graph::DType> dtypes;        // element types its kernels handle
  std::vector<std::string> library_ops;    // LibraryCall ops it runs
  bool host_memory = true;                 // buffers are ordinary host pointers
  // A forked child process can use the device. GPU drivers cannot (their threads and handles
  // stay in the parent), so candidates of such a target are measured in process.
  bool survives_fork = true;
};

// A kernel ready to launch. Targets subclass it with what they need (a function pointer, a
// CUDA function); the runtime only passes it back to the device.
class Kernel {
 public:
  explicit Kernel(graph::Body body)
      : body_(std::move(body)), dims_(graph::body_dims(body_)) {}
  virtual ~Kernel() = default;
  const graph::Body& body() const { return body_; }
  // The order of the `dims` argument of Device::launch.
  const std::vector<std::string>& dims() const { return dims_; }

 private:
  graph::Body body_;
  std::vector<std::string> dims_;
};

// A Body prepared by a target: a kernel, or why the target could not make one.
struct Prepared {
  std::shared_ptr<const Kernel> kernel;
  std::string error;
};

// Device work recorded once and replayed as one submission (a CUDA graph); Device::record.
class Recording {
 public:
  virtual ~Recording() = default;
  // Queues the recorded work again: the same kernels, buffers, dims and library calls.
  virtual void replay() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* buffer) = 0;
  virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* device, std::size_t bytes) = 0;
  virtual void copy(void* to, const void* from, std::size_t bytes) = 0;
  // Runs a kernel on `buffers` (its inputs in slot order, then its output) with `dims` in the
  // kernel's dims() order.
  virtual void launch(const Kernel& kernel, const std::vector<void*>& buffers,
                      const std::vector<long long>& dims) = 0;
  // Runs a library call on `buffers` (inputs, then output) with its params evaluated at `dims`.
  virtual void call(const LibraryCall& call, const std::vector<void*>& buffers,
                    const graph::DimValues& dims) = 0;
  // Waits for queued work (a no-op on synchronous devices).
  virtual void synchronize() {}

  // Asynchronous copies: queued behind earlier work, returning at once; `host` must stay as it
  // is until synchronize(). Synchronous devices copy now.
  virtual void upload_async(void* device, const void* host, std::size_t bytes) {
    upload(device, host, bytes);
  }
  virtual void download_async(void* host, const void* device, std::size_t bytes) {
    download(host, device, bytes);
  }
  // The device time of the work that `work` queues, in seconds: between two events in the
  // device's queue where it has them (CUDA), else by the host clock around `work` and a
  // synchronize. Waits for the work.
  virtual double time(const std::function<void()>& work) {
    synchronize();
    const auto start = std::chrono::steady_clock::now();
    work();
    synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Records the work that `work` queues (launches, library calls, device-to-device copies; it
  // must not synchronize, allocate or transfer from the host) for replay as one submission.
  // `previous`, a recording of the same steps at other dims or buffers, may be updated in place
  // and returned (CUDA: cudaGraphExecUpdate, cheaper than a new graph). A device without
  // capture returns a recording that runs `work` again: on the CPU a launch is a call already.
  virtual std::unique_ptr<Recording> record(std::function<void()> work,
                                            std::unique_ptr<Recording> previous = nullptr);
};

namespace detail {
// The recording of a device without capture: it runs the work again.
class RerunRecording final : public Recording {
 public:
  explicit RerunRecording(std::function<void()> work) : work_(std::move(work)) {}
  void replay() override { work_(); }

 private:
  std::function<void()> work_;
};
}  // namespace detail

inline std::unique_ptr<Recording> Device::record(std::function<void()> work,
                                                 std::unique_ptr<Recording> previous) {
  (void)previous;
  return std::make_unique<detail::RerunRecording>(std::move(work));
}

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  // Why this target cannot run on this machine (no driver, no device, not built in); empty
  // when it can. An unavailable target still renders and compiles where it can.
  virtual std::string unavailable() const { return ""; }
  virtual const Capabilities& capabilities() const = 0;
  // The target's own rule files (targets/<name>/rules/*.egg), loaded after the common ones.
  virtual std::vector<std::filesystem::path> rule_files() const { return {}; }
  // Whether prepare() can make a kernel of `body` (dtypes, ops, features).
  virtual bool supports(const graph::Body& body) const = 0;
  virtual bool supports(const LibraryCall& call) const = 0;
  // Makes kernels of many bodies at once (compilers are started once per batch); one result per
  // body, in order. Results are cached by the target where it can (on disk for compiled code).
  virtual std::vector<Prepared> prepare(const std::vector<graph::Body>& bodies) = 0;
  virtual Device& device() = 0;
  // What besides the machine decides the code and speed of this target's kernels (compiler
  // version and flags, code generator version), for the keys of cached measurements.
  virtual std::string fingerprint() const { return name(); }
  // Runs kernels and library calls on `threads` threads (0: every core the machine offers),
  // for work launched from the calling thread; returns the count now in use. Targets that do
  // not run in parallel keep one.
  virtual int set_threads(int threads) {
    (void)threads;
    return 1;
  }
  virtual int threads() const { return 1; }
};

}  // namespace kiln::runtime
