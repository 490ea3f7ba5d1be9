// Kernels with measured schedule variants; see tuned_kernel.hpp.
#include "targets/gpu/tuned_kernel.hpp"

#include <algorithm>
#include <limits>

#include "support/diagnostic.hpp"

namespace kiln::targets::gpu {

std::vector<Schedule> tuning_schedules(const graph::Body& body) {
  std::vector<Schedule> all = schedule_choices(body);
  if (body.output_aliases() || serial_prefix(body) > 0) all.resize(1);
  if (all.size() > kTunedVariants) all.resize(kTunedVariants);
  return all;
}

TunedKernel::TunedKernel(graph::Body body,
                         std::vector<std::shared_ptr<const runtime::Kernel>> variants,
                         std::vector<Schedule> schedules)
    : Kernel(std::move(body)), variants_(std::move(variants)), schedules_(std::move(schedules)) {
  KILN_ASSERT(!variants_.empty() && variants_.size() == schedules_.size(),
              "tuned kernel: one schedule per variant, at least one");
}

const runtime::Kernel& TunedKernel::pick(runtime::Device& device,
                                         const std::vector<void*>& buffers,
                                         const std::vector<long long>& dims) const {
  if (variants_.size() == 1) return *variants_[0];
  if (auto it = chosen_.find(dims); it != chosen_.end()) return *variants_[it->second];
  std::size_t best = 0;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (std::size_t v = 0; v < variants_.size(); ++v) {
    device.launch(*variants_[v], buffers, dims);  // warm-up: first-launch costs
    device.synchronize();
    double seconds = std::numeric_limits<double>::infinity();
    for (int run = 0; run < 2; ++run) {
      seconds = std::min(seconds, device.time([&] { device.launch(*variants_[v], buffers, dims); }));
    }
    if (seconds < best_seconds) {  // ties keep the earlier (the default first)
      best = v;
      best_seconds = seconds;
    }
  }
  chosen_.emplace(dims, best);
  return *variants_[best];
}

std::vector<runtime::Prepared> prepare_tuned(const std::vector<graph::Body>& bodies,
                                             const ScheduledPrepare& prepare) {
  std::vector<graph::Body> all_bodies;
  std::vector<Schedule> all_schedules;
  std::vector<std::size_t> first(bodies.size() + 1, 0);
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    first[i] = all_bodies.size();
    for (const Schedule& s : tuning_schedules(bodies[i])) {
      all_bodies.push_back(bodies[i]);
      all_schedules.push_back(s);
    }
  }
  first[bodies.size()] = all_bodies.size();
  const std::vector<runtime::Prepared> made = prepare(all_bodies, all_schedules);
  std::vector<runtime::Prepared> out(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    std::vector<std::shared_ptr<const runtime::Kernel>> variants;
    std::vector<Schedule> schedules;
    for (std::size_t j = first[i]; j < first[i + 1]; ++j) {
      if (!made[j].kernel) continue;
      variants.push_back(made[j].kernel);
      schedules.push_back(all_schedules[j]);
    }
    if (variants.empty()) {
      out[i].error = made[first[i]].error;
    } else if (variants.size() == 1) {
      out[i].kernel = variants[0];
    } else {
      out[i].kernel = std::make_shared<TunedKernel>(bodies[i], std::move(variants),
                                                    std::move(schedules));
    }
  }
  return out;
}

const Schedule* TunedKernel::picked(const std::vector<long long>& dims) const {
  auto it = chosen_.find(dims);
  if (it == chosen_.end()) return variants_.size() == 1 ? &schedules_[0] : nullptr;
  return &schedules_[it->second];
}

}  // namespace kiln::targets::gpu
