// The executor (DESIGN §7): runs an LLIR program on a Target's device, step after step.
//
// Construction prepares every kernel in one Target::prepare batch (a compiler runs once).
// Each run binds the inputs by name (the run's map, else tensors bound earlier with bind(), for
// weights that stay on the device), plans the temporaries for the run's dims (plans are cached
// per dim map), copies an aliased input into its output where the plan says so, launches the
// steps in order and returns the outputs as graph::Tensors.
//
// A step costs its launch and little else: what depends only on the dims (the plan, every
// value's shape, each kernel's dim arguments) is computed once per dim map, and the argument
// arrays live in the executor, so a run allocates nothing for its steps.
//
// Persistent state lives in the executor between runs: zeros when first needed (or what
// set_state gave), and after each run an output of the same name becomes its new value.
//
// Errors are UserErrors: a kernel the target rejects (naming the step and the target's
// message), a missing or unknown input, one of the wrong dtype or shape, an unbound dim.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "graph/interpret.hpp"
#include "graph/native.hpp"
#include "runtime/buffer_plan.hpp"
#include "runtime/llir.hpp"
#include "runtime/target.hpp"

namespace kiln::runtime {

// Per-step wall time of one run (the device synchronized around each step), for reports.
struct StepTime {
  std::string label;
  double seconds = 0.0;
};

struct RunProfile {
  std::vector<StepTime> steps;  // in execution order
  double total_seconds = 0.0;   // the whole run, binding and outputs included
  std::size_t arena_bytes = 0;  // the plan's peak
};

class Executor {
 public:
  // Keeps references to `llir` and `target`: both must outlive the executor.
  Executor(const Llir& llir, Target& target);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Which outputs a run copies back to the host. Copying a large cache or activation back is
  // not part of a model step, so generation leaves out the state and timing loops everything
  // (converting a 128 MB output to host values cost more than the kernel that computed it).
  enum class Fetch {
    All,           // every output
    WithoutState,  // outputs that update persistent state stay on the device (see state())
    Nothing,       // outputs stay on the device; the result is empty
  };

  // Runs the program once; returns the fetched outputs by name. With `profile`, times each step.
  std::map<std::string, graph::Tensor> run(const graph::DimValues& dims,
                                           const std::map<std::string, graph::Tensor>& inputs,
                                           RunProfile* profile = nullptr,
                                           Fetch fetch = Fetch::All);

  // Holds `tensor` on the device as input `name` for every later run that does not pass it.
  void bind(const std::string& name, const graph::Tensor& tensor);
  // The same for a tensor already in the input's layout: its bytes are copied to the device as
  // they are (a mapped weight, or a random input made in its dtype), never through doubles.
  void bind(const std::string& name, const graph::NativeTensor& tensor);
  // Sets persistent state `name` (its shape is checked against the dims of the next run).
  void set_state(const std::string& name, const graph::Tensor& tensor);
  // Drops every persistent state, so the next run starts from zeros again.
  void reset_state();
  // The current value of persistent state `name` (zeros of the last run's shape if never set).
  graph::Tensor state(const std::string& name) const;

  // The plan used for `dims` (planned now if it is not cached).
  const BufferPlan& plan(const graph::DimValues& dims);

  // With replay on, a run without a profile launches its steps through a recording
  // (Device::record: a CUDA graph): the first run at a dim map launches them one by one (a
  // kernel's first launch may measure its schedules, which a recording cannot hold), the
  // next records them and replays the recording, later runs at the same dims and buffers only
  // replay. Other dims or buffers record again, updating the last recording where the device
  // can (a decode step's growing sequence). Off by default.
  void set_replay(bool on) { replay_ = on; }
  // How many recordings were made (for tests and reports).
  std::size_t recordings() const { return recordings_; }

 private:
  struct Held {
    void* buffer = nullptr;
    std::size_t bytes = 0;
    std::vector<std::int64_t> shape;
  };
  // What a run needs that depends only on its dims.
  struct DimSetup {
    BufferPlan plan;
    std::vector<std::vector<std::int64_t>> shapes;    // by ValueId: inputs, state and outputs
    std::vector<std::vector<long long>> kernel_dims;  // by step: the kernel's dims() values
  };
  const DimSetup& setup(const graph::DimValues& dims);
  // Launches every step in order on the buffers in address_ (timing each into `profile`).
  void launch_steps(const DimSetup& d, const graph::DimValues& dims, RunProfile* profile);
  // launch_steps through the recording (see set_replay).
  void replay_steps(const DimSetup& d, const graph::DimValues& dims);
  void* ensure_arena(std::size_t bytes);
  // Uploads `native` (the bytes of a value of `shape`) into held[name], reusing its buffer.
  Held& hold(std::map<std::string, Held>& held, const std::string& name,
             const std::vector<std::int64_t>& shape, std::span<const std::byte> native);
  Held& hold(std::map<std::string, Held>& held, const std::string& name,
             const graph::Tensor& tensor, graph::DType dtype);
  // The dtype of input `name`; a UserError if the program has no such input.
  graph::DType input_dtype(const std::string& name) const;
  void free_held(Held& h);

  const Llir& llir_;
  Target& target_;
  Device& device_;
  std::vector<std::shared_ptr<const Kernel>> kernels_;  // by step (null for library calls)
  std::map<graph::DimValues, DimSetup> setups_;
  std::vector<void*> address_;                    // by ValueId, refilled every run
  std::vector<std::vector<void*>> step_buffers_;  // by step: inputs, then the output
  void* arena_ = nullptr;
  std::size_t arena_capacity_ = 0;
  std::map<std::string, Held> bound_;  // bind()
  std::map<std::string, Held> state_;  // persistent state
  std::map<std::string, Held> inputs_;  // per-run input buffers, reused across runs
  bool replay_ = false;
  std::set<graph::DimValues> settled_;  // dims run once step by step (replay)
  std::unique_ptr<Recording> recording_;
  graph::DimValues recorded_dims_;     // what recording_ was made for
  std::vector<void*> recorded_address_;
  std::size_t recordings_ = 0;
};

}  // namespace kiln::runtime
