// One Body compiled under several GPU schedules (schedule.hpp's choices), the fastest chosen by
// measurement on the device: on the first launch at a set of dims each variant runs and is
// timed, and that launch and every later one at those dims run the fastest. This is how the
// GPU targets vary block sizes, mappings and sub-group reductions per kernel and measure each;
// the measured search then times the kernel as a whole (its best variant).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "runtime/target.hpp"
#include "targets/gpu/schedule.hpp"

namespace kiln::targets::gpu {

// At most this many schedules are compiled per Body (the default first): compile time grows
// with each.
inline constexpr std::size_t kTunedVariants = 4;

// The schedules to compile for `body`: schedule_choices(body) up to kTunedVariants; only the
// default for a Body that writes in place (running it again would not be idempotent in
// general) or has a serial loop.
std::vector<Schedule> tuning_schedules(const graph::Body& body);

class TunedKernel final : public runtime::Kernel {
 public:
  // `variants` compile the same body (the first: the default schedule); at least one.
  TunedKernel(graph::Body body, std::vector<std::shared_ptr<const runtime::Kernel>> variants,
              std::vector<Schedule> schedules);
  // The variant to launch at `dims`. On first sight of those dims each variant is launched
  // on `device` with `buffers` twice after a warm-up, timed by Device::time (events in the
  // queue on CUDA); the fastest is kept.
  const runtime::Kernel& pick(runtime::Device& device, const std::vector<void*>& buffers,
                              const std::vector<long long>& dims) const;
  // The schedule picked at `dims` (null before the first launch there).
  const Schedule* picked(const std::vector<long long>& dims) const;
  const std::vector<std::shared_ptr<const runtime::Kernel>>& variants() const { return variants_; }

 private:
  std::vector<std::shared_ptr<const runtime::Kernel>> variants_;
  std::vector<Schedule> schedules_;
  mutable std::map<std::vector<long long>, std::size_t> chosen_;
};

// A GPU target's prepare(): body i under schedules[i] (one compile of them all).
using ScheduledPrepare = std::function<std::vector<runtime::Prepared>(
    const std::vector<graph::Body>&, const std::vector<Schedule>&)>;

// Prepares each body under its tuning_schedules through `prepare`, as a TunedKernel of the
// variants that compiled (an error only when none did: the default's).
std::vector<runtime::Prepared> prepare_tuned(const std::vector<graph::Body>& bodies,
                                             const ScheduledPrepare& prepare);

}  // namespace kiln::targets::gpu
