// The adaptive timer; see timer.hpp.
#include "runtime/timer.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

namespace kiln::runtime {

Timing measure(const std::function<void(int run)>& run, const std::function<void()>& synchronize,
               const TimerOptions& options) {
  using Clock = std::chrono::steady_clock;
  int index = 0;
  bool long_runs = false;
  for (int i = 0; i < options.warmup; ++i) {
    const auto start = Clock::now();
    run(index++);
    if (synchronize) synchronize();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (i == 0 && t >= options.give_up_seconds) return Timing{t, t, 1, 0};
    if (i == 0 && options.long_run_seconds > 0.0 && t >= options.long_run_seconds) {
      long_runs = true;
      break;
    }
  }
  const int min_runs = long_runs ? std::min(options.min_runs, 1) : options.min_runs;
  const double min_seconds = long_runs ? 0.0 : options.min_seconds;
  std::vector<double> times;
  double total = 0.0;
  while (static_cast<int>(times.size()) < options.max_runs &&
         (static_cast<int>(times.size()) < min_runs || total < min_seconds)) {
    const auto start = Clock::now();
    run(index++);
    if (synchronize) synchronize();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    times.push_back(t);
    total += t;
  }
  Timing out;
  out.warmups = long_runs ? 1 : options.warmup;
  out.runs = static_cast<int>(times.size());
  if (times.empty()) return out;
  std::sort(times.begin(), times.end());
  out.min_seconds = times.front();
  out.median_seconds = times[times.size() / 2];
  return out;
}

}  // namespace kiln::runtime
