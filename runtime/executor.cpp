// Running an LLIR program on a target; see executor.hpp.
#include "runtime/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>

#include "graph/native.hpp"
#include "support/diagnostic.hpp"
#include "support/seconds_since.hpp"

namespace kiln::runtime {

using support::UserError;

namespace {

using Clock = support::Clock;
using support::seconds_since;

std::vector<std::int64_t> evaluate_shape(const Value& v, const graph::DimValues& dims) {
  std::vector<std::int64_t> shape;
  for (const graph::Expr& d : v.shape) shape.push_back(graph::evaluate(d, dims));
  return shape;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A tensor given for `what` must have the value's dtype and `shape`, and as many elements.
void check_tensor(const std::string& what, const graph::Tensor& t, graph::DType dtype,
                  const std::vector<std::int64_t>& shape) {
  if (t.dtype != dtype) {
    throw UserError(what + " has dtype " + std::string(graph::dtype_name(t.dtype)) +
                    ", expected " + std::string(graph::dtype_name(dtype)));
  }
  if (t.shape != shape) {
    throw UserError(what + " has shape " + shape_text(t.shape) + ", expected " +
                    shape_text(shape));
  }
  if (static_cast<std::int64_t>(t.data.size()) != graph::numel(t.shape)) {
    throw UserError(what + " has " + std::to_string(t.data.size()) + " values for shape " +
                    shape_text(t.shape));
  }
}

}  // namespace

Executor::Executor(const Llir& llir, Target& target)
    : llir_(llir), target_(target), device_(target.device()) {
  std::vector<graph::Body> bodies;
  std::vector<StepId> body_steps;
  for (StepId s = 0; s < llir_.num_steps(); ++s) {
    const Step& step = llir_.step(s);
    if (const graph::Body* body = step.body()) {
      bodies.push_back(*body);
      body_steps.push_back(s);
    } else if (!target_.supports(*step.call())) {
      throw UserError("step \"" + step.label + "\": target '" + target_.name() +
                      "' does not run library op '" + step.call()->op + "'");
    }
  }
  // An output updating state must fit it (checked once, here, on the symbolic shapes).
  for (const Output& o : llir_.outputs()) {
    const std::optional<ValueId> state = llir_.find_input(o.name);
    if (!state || llir_.value(*state).kind != ValueKind::State) continue;
    const Value& s = llir_.value(*state);
    const Value& v = llir_.value(o.value);
    if (s.dtype != v.dtype || s.shape != v.shape) {
      throw UserError("output '" + o.name + "' updates persistent state of that name, but its " +
                      "dtype or shape differs from the state's");
    }
  }
  std::vector<Prepared> prepared = target_.prepare(bodies);
  KILN_ASSERT(prepared.size() == bodies.size(), "executor: prepare returned a wrong count");
  kernels_.resize(llir_.num_steps());
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    if (!prepared[i].kernel) {
      throw UserError("step \"" + llir_.step(body_steps[i]).label + "\": target '" +
                      target_.name() + "' cannot make its kernel: " + prepared[i].error);
    }
    kernels_[body_steps[i]] = std::move(prepared[i].kernel);
  }
  address_.assign(llir_.num_values(), nullptr);
  step_buffers_.resize(llir_.num_steps());
  for (StepId s = 0; s < llir_.num_steps(); ++s) {
    step_buffers_[s].assign(llir_.step(s).inputs.size() + 1, nullptr);
  }
}

Executor::~Executor() {
  for (auto* held : {&bound_, &state_, &inputs_}) {
    for (auto& [name, h] : *held) free_held(h);
  }
  if (arena_) device_.release(arena_);
}

void Executor::free_held(Held& h) {
  if (h.buffer) device_.release(h.buffer);
  h.buffer = nullptr;
}

void* Executor::ensure_arena(std::size_t bytes) {
  if (arena_ && arena_capacity_ >= bytes) return arena_;
  if (arena_) device_.release(arena_);
  arena_capacity_ = std::max(bytes, kBufferAlignment);
  arena_ = device_.allocate(arena_capacity_);
  return arena_;
}

Executor::Held& Executor::hold(std::map<std::string, Held>& held, const std::string& name,
                               const std::vector<std::int64_t>& shape,
                               std::span<const std::byte> native) {
  Held& h = held[name];
  if (!h.buffer || h.bytes != native.size()) {
    free_held(h);
    h.bytes = native.size();
    h.buffer = device_.allocate(std::max(h.bytes, kBufferAlignment));
  }
  h.shape = shape;
  if (h.bytes) device_.upload(h.buffer, native.data(), h.bytes);
  return h;
}

Executor::Held& Executor::hold(std::map<std::string, Held>& held, const std::string& name,
                               const graph::Tensor& tensor, graph::DType dtype) {
  return hold(held, name, tensor.shape, graph::to_native(tensor.data, dtype));
}

graph::DType Executor::input_dtype(const std::string& name) const {
  const std::optional<ValueId> id = llir_.find_input(name);
  if (!id || llir_.value(*id).kind != ValueKind::Input) {
    throw UserError("bind: the program has no input called '" + name + "'");
  }
  return llir_.value(*id).dtype;
}

void Executor::bind(const std::string& name, const graph::Tensor& tensor) {
  const graph::DType dtype = input_dtype(name);
  check_tensor("input '" + name + "'", tensor, dtype, tensor.shape);
  hold(bound_, name, tensor, dtype);
}

void Executor::bind(const std::string& name, const graph::NativeTensor& tensor) {
  const graph::DType dtype = input_dtype(name);
  if (tensor.dtype() != dtype) {
    throw UserError("input '" + name + "' has dtype " + std::string(graph::dtype_name(tensor.dtype())) +
                    ", expected " + std::string(graph::dtype_name(dtype)));
  }
  hold(bound_, name, tensor.shape(), tensor.bytes());
}

void Executor::reset_state() {
  for (auto& [name, h] : state_) free_held(h);
  state_.clear();
}

void Executor::set_state(const std::string& name, const graph::Tensor& tensor) {
  const std::optional<ValueId> id = llir_.find_input(name);
  if (!id || llir_.value(*id).kind != ValueKind::State) {
    throw UserError("set_state: the program has no persistent state called '" + name + "'");
  }
  const graph::DType dtype = llir_.value(*id).dtype;
  check_tensor("state '" + name + "'", tensor, dtype, tensor.shape);
  hold(state_, name, tensor, dtype);
}

graph::Tensor Executor::state(const std::string& name) const {
  const std::optional<ValueId> id = llir_.find_input(name);
  auto it = state_.find(name);
  if (!id || it == state_.end()) {
    throw UserError("state: no persistent state called '" + name + "' is held");
  }
  const Held& h = it->second;
  const graph::DType dtype = llir_.value(*id).dtype;
  std::vector<std::byte> host(h.bytes);
  if (h.bytes) device_.download(host.data(), h.buffer, h.bytes);
  return graph::Tensor{dtype, h.shape,
                       from_native(host.data(), h.bytes / graph::dtype_size(dtype), dtype)};
}

const Executor::DimSetup& Executor::setup(const graph::DimValues& dims) {
  auto it = setups_.find(dims);
  if (it != setups_.end()) return it->second;
  DimSetup d;
  d.plan = plan_buffers(llir_, dims);
  d.shapes.resize(llir_.num_values());
  for (ValueId id = 0; id < llir_.num_values(); ++id) {
    if (llir_.value(id).kind != ValueKind::Temporary) {
      d.shapes[id] = evaluate_shape(llir_.value(id), dims);
    }
  }
  for (const Output& o : llir_.outputs()) {
    d.shapes[o.value] = evaluate_shape(llir_.value(o.value), dims);
  }
  d.kernel_dims.resize(llir_.num_steps());
  for (StepId s = 0; s < llir_.num_steps(); ++s) {
    const Kernel* kernel = kernels_[s].get();
    if (!kernel) continue;
    for (const std::string& dim : kernel->dims()) {
      auto found = dims.find(dim);
      if (found == dims.end()) {
        throw UserError("step \"" + llir_.step(s).label + "\": dim '" + dim + "' is not bound");
      }
      d.kernel_dims[s].push_back(static_cast<long long>(found->second));
    }
  }
  return setups_.emplace(dims, std::move(d)).first->second;
}

const BufferPlan& Executor::plan(const graph::DimValues& dims) {
  return setup(dims).plan;
}

void Executor::launch_steps(const DimSetup& d, const graph::DimValues& dims,
                            RunProfile* profile) {
  const BufferPlan& p = d.plan;
  const std::vector<void*>& address = address_;
  for (StepId s = 0; s < llir_.num_steps(); ++s) {
    const Step& step = llir_.step(s);
    std::vector<void*>& buffers = step_buffers_[s];
    for (std::size_t i = 0; i < step.inputs.size(); ++i) buffers[i] = address[step.inputs[i]];
    buffers.back() = address[step.output];
    if (p.copy_alias[s]) {
      const ValueId in = step.inputs[*step.alias];
      const std::size_t bytes = std::min(p.bytes[in], p.bytes[step.output]);
      if (bytes) device_.copy(address[step.output], address[in], bytes);
    }
    Clock::time_point start;
    if (profile) {
      device_.synchronize();
      start = Clock::now();
    }
    if (const Kernel* kernel = kernels_[s].get()) {
      device_.launch(*kernel, buffers, d.kernel_dims[s]);
    } else {
      device_.call(*step.call(), buffers, dims);
    }
    if (profile) {
      device_.synchronize();
      profile->steps.push_back(StepTime{step.label, seconds_since(start)});
    }
  }
}

void Executor::replay_steps(const DimSetup& d, const graph::DimValues& dims) {
  if (recording_ && recorded_dims_ == dims && recorded_address_ == address_) {
    recording_->replay();
    return;
  }
  if (settled_.insert(dims).second) {  // first run at these dims: step by step
    launch_steps(d, dims, nullptr);
    return;
  }
  // The recording may run `work` again later (devices without capture): it holds copies.
  recording_ = device_.record(
      [this, setup = &d, at = dims] { launch_steps(*setup, at, nullptr); }, std::move(recording_));
  recorded_dims_ = dims;
  recorded_address_ = address_;
  ++recordings_;
  recording_->replay();
}

std::map<std::string, graph::Tensor> Executor::run(
    const graph::DimValues& dims, const std::map<std::string, graph::Tensor>& inputs,
    RunProfile* profile, Fetch fetch) {
  const Clock::time_point run_start = Clock::now();
  for (const auto& [name, tensor] : inputs) {
    const std::optional<ValueId> id = llir_.find_input(name);
    if (!id) throw UserError("run: the program has no input called '" + name + "'");
    if (llir_.value(*id).kind == ValueKind::State) {
      throw UserError("run: '" + name + "' is persistent state; set it with set_state");
    }
  }
  const DimSetup& d = setup(dims);
  const BufferPlan& p = d.plan;
  std::vector<void*>& address = address_;
  std::fill(address.begin(), address.end(), nullptr);

  // Inputs and state.
  for (ValueId id = 0; id < llir_.num_values(); ++id) {
    const Value& v = llir_.value(id);
    if (v.kind == ValueKind::Temporary) continue;
    const std::vector<std::int64_t>& shape = d.shapes[id];
    if (v.kind == ValueKind::Input) {
      auto given = inputs.find(v.name);
      if (given != inputs.end()) {
        check_tensor("input '" + v.name + "'", given->second, v.dtype, shape);
        address[id] = hold(inputs_, v.name, given->second, v.dtype).buffer;
        continue;
      }
      auto bound = bound_.find(v.name);
      if (bound == bound_.end()) throw UserError("run: missing input '" + v.name + "'");
      if (bound->second.shape != shape) {
        throw UserError("input '" + v.name + "' is bound with shape " +
                        shape_text(bound->second.shape) + ", expected " + shape_text(shape));
      }
      address[id] = bound->second.buffer;
      continue;
    }
    auto held = state_.find(v.name);
    if (held == state_.end()) {
      // Zero is all zero bytes in every dtype's layout.
      const std::vector<std::byte> zeros(static_cast<std::size_t>(graph::numel(shape)) *
                                         graph::dtype_size(v.dtype));
      address[id] = hold(state_, v.name, shape, zeros).buffer;
      continue;
    }
    if (held->second.shape != shape) {
      throw UserError("state '" + v.name + "' holds shape " + shape_text(held->second.shape) +
                      ", but these dims give " + shape_text(shape));
    }
    address[id] = held->second.buffer;
  }

  // Temporaries.
  std::byte* arena = static_cast<std::byte*>(ensure_arena(p.arena_bytes));
  for (ValueId id = 0; id < llir_.num_values(); ++id) {
    if (p.offset[id]) address[id] = arena + *p.offset[id];
  }
  for (StepId s = 0; s < llir_.num_steps(); ++s) {  // state updated in place
    const Step& step = llir_.step(s);
    if (p.in_place_state[s]) address[step.output] = address[step.inputs[*step.alias]];
  }

  // Steps.
  if (profile) {
    profile->steps.clear();
    profile->arena_bytes = p.arena_bytes;
  }
  if (replay_ && !profile) {
    replay_steps(d, dims);
  } else {
    launch_steps(d, dims, profile);
  }
  device_.synchronize();

  // Outputs, then the new state.
  std::map<std::string, graph::Tensor> outputs;
  for (const Output& o : llir_.outputs()) {
    if (fetch == Fetch::Nothing) break;
    if (fetch == Fetch::WithoutState) {
      const std::optional<ValueId> state = llir_.find_input(o.name);
      if (state && llir_.value(*state).kind == ValueKind::State) continue;
    }
    const Value& v = llir_.value(o.value);
    const std::size_t bytes = p.bytes[o.value];
    std::vector<std::byte> host(bytes);
    if (bytes) device_.download(host.data(), address[o.value], bytes);
    outputs[o.name] =
        graph::Tensor{v.dtype, d.shapes[o.value],
                      from_native(host.data(), bytes / graph::dtype_size(v.dtype), v.dtype)};
  }
  for (const Output& o : llir_.outputs()) {
    const std::optional<ValueId> state = llir_.find_input(o.name);
    if (!state || llir_.value(*state).kind != ValueKind::State || *state == o.value ||
        address[*state] == address[o.value]) {
      continue;
    }
    if (p.bytes[o.value]) device_.copy(address[*state], address[o.value], p.bytes[o.value]);
  }
  if (profile) profile->total_seconds = seconds_since(run_start);
  return outputs;
}

}  // namespace kiln::runtime
