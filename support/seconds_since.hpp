// Wall-clock seconds since a point of the steady clock: the phase times of reports and runs.
#pragma once

#include <chrono>

namespace kiln::support {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace kiln::support
