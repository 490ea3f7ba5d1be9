// Liveness and first-fit placement of temporaries; see buffer_plan.hpp.
#include "runtime/buffer_plan.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "graph/memory_estimate.hpp"
#include "support/diagnostic.hpp"

namespace kiln::runtime {

namespace {

std::size_t align_up(std::size_t n) {
  return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

// One allocation: the values sharing it (a chain of in-place aliases) and their joint lifetime.
struct Allocation {
  std::vector<ValueId> values;
  StepId first = 0;
  StepId last = 0;
  std::size_t bytes = 0;
  std::size_t offset = 0;
};

}  // namespace

BufferPlan plan_buffers(const Llir& llir, const graph::DimValues& dims) {
  const std::size_t values = llir.num_values();
  const std::size_t steps = llir.num_steps();
  BufferPlan plan;
  plan.bytes.resize(values);
  plan.offset.resize(values);
  plan.first_step.assign(values, 0);
  plan.last_step.assign(values, 0);
  plan.in_place.assign(steps, false);
  plan.copy_alias.assign(steps, false);
  plan.in_place_state.assign(steps, false);

  for (ValueId id = 0; id < values; ++id) {
    const Value& v = llir.value(id);
    // Checked before anything is allocated: dims too large for this machine are the user's error.
    const std::int64_t elements = graph::checked_numel(
        v.shape, dims, v.name.empty() ? "a temporary buffer" : "buffer '" + v.name + "'",
        static_cast<std::int64_t>(graph::dtype_size(v.dtype)));
    plan.bytes[id] = static_cast<std::size_t>(elements) * graph::dtype_size(v.dtype);
    if (v.producer) plan.first_step[id] = plan.last_step[id] = *v.producer;
  }
  // Liveness: the last reader; outputs live past the last step.
  for (StepId s = 0; s < steps; ++s) {
    for (ValueId in : llir.step(s).inputs) plan.last_step[in] = std::max(plan.last_step[in], s);
  }
  const StepId end = steps == 0 ? 0 : steps - 1;
  std::vector<bool> is_output(values, false);
  std::vector<std::vector<std::string>> output_names(values);  // a value may be several outputs
  for (const Output& o : llir.outputs()) {
    is_output[o.value] = true;
    output_names[o.value].push_back(o.name);
    plan.last_step[o.value] = end;
  }

  // Allocations in order of first step; in-place outputs join their input's allocation.
  std::vector<Allocation> allocations;
  std::vector<std::size_t> allocation_of(values, 0);
  for (StepId s = 0; s < steps; ++s) {
    const Step& step = llir.step(s);
    const ValueId out = step.output;
    if (step.alias && step.in_place) {
      // The program chose to overwrite the input (its rules proved nothing else reads it):
      // execute that, after checking that it is safe here.
      const ValueId in = step.inputs.at(*step.alias);
      const Value& source = llir.value(in);
      std::string why;
      if (std::count(step.inputs.begin(), step.inputs.end(), in) != 1) {
        why = "the step reads it in another slot too";
      } else if (is_output[in] || plan.last_step[in] != s) {
        why = "it is read later";
      } else if (plan.bytes[in] != plan.bytes[out]) {
        why = "its size differs from the output's";
      } else if (source.kind == ValueKind::Input) {
        why = "it is a caller's input";
      } else if (source.kind == ValueKind::State &&
                 std::find(output_names[out].begin(), output_names[out].end(), source.name) ==
                     output_names[out].end()) {
        why = "it is state whose next value is not this output";
      }
      if (!why.empty()) {
        throw support::UserError("buffer plan: step " + std::to_string(s) + " (" + step.label +
                                 ") overwrites %" + std::to_string(in) + " in place, but " + why);
      }
      if (source.kind == ValueKind::State) {
        plan.in_place_state[s] = true;  // lives in the state's buffer, not in the arena
        continue;
      }
      plan.in_place[s] = true;
      Allocation& a = allocations[allocation_of[in]];
      a.values.push_back(out);
      a.last = std::max(a.last, plan.last_step[out]);
      allocation_of[out] = allocation_of[in];
      continue;
    }
    if (step.alias) plan.copy_alias[s] = true;
    allocation_of[out] = allocations.size();
    allocations.push_back(Allocation{{out}, s, plan.last_step[out], plan.bytes[out], 0});
  }

  // First fit, in order of first step (ties by creation), against the placed allocations whose
  // lifetimes overlap.
  std::vector<std::size_t> placed;
  for (std::size_t i = 0; i < allocations.size(); ++i) {
    Allocation& a = allocations[i];
    std::vector<std::pair<std::size_t, std::size_t>> busy;  // [offset, end) of live ones
    for (std::size_t j : placed) {
      const Allocation& b = allocations[j];
      if (b.first <= a.last && a.first <= b.last && b.bytes > 0) {
        busy.emplace_back(b.offset, b.offset + b.bytes);
      }
    }
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (a.bytes == 0 || offset + a.bytes <= lo) break;
      offset = std::max(offset, align_up(hi));
    }
    a.offset = offset;
    placed.push_back(i);
    plan.arena_bytes = std::max(plan.arena_bytes, offset + a.bytes);
    for (ValueId v : a.values) plan.offset[v] = offset;
  }
  graph::check_bytes_fit(static_cast<std::int64_t>(plan.arena_bytes),
                         "the plan's temporary buffers", dims);
  for (ValueId id = 0; id < values; ++id) {
    const Value& v = llir.value(id);
    if (v.kind == ValueKind::Temporary && !(v.producer && plan.in_place_state[*v.producer])) {
      plan.unshared_bytes += plan.bytes[id];
    }
  }
  return plan;
}

std::string to_text(const Llir& llir, const BufferPlan& plan) {
  std::ostringstream out;
  for (ValueId id = 0; id < llir.num_values(); ++id) {
    if (!plan.offset[id]) continue;
    out << "%" << id << " bytes=" << plan.bytes[id] << " offset=" << *plan.offset[id]
        << " steps=[" << plan.first_step[id] << ", " << plan.last_step[id] << "]";
    const Value& v = llir.value(id);
    if (v.producer && plan.in_place[*v.producer]) {
      const Step& s = llir.step(*v.producer);
      out << " in place of %" << s.inputs[*s.alias];
    }
    out << "\n";
  }
  for (StepId s = 0; s < llir.num_steps(); ++s) {
    if (!plan.in_place_state[s]) continue;
    const Step& step = llir.step(s);
    out << "%" << step.output << " in state " << llir.value(step.inputs[*step.alias]).name
        << "\n";
  }
  out << "arena=" << plan.arena_bytes << " unshared=" << plan.unshared_bytes << "\n";
  return out.str();
}

}  // namespace kiln::runtime
