// Measuring a piece of device work: warm-up runs, then an adaptive number of timed runs (until
// both a minimum count and a minimum total time are reached, within a maximum count; one run
// when the first warm-up shows a long run), reporting
// the median and the minimum; or the first run alone when it shows the work is slower than the
// caller cares to know exactly. `run(i)` gets the run's index so that callers can rotate among
// several input sets (when the data fits in cache, timing one set repeatedly measures a warm
// cache that a real program never sees).
#pragma once

#include <functional>
#include <limits>

namespace kiln::runtime {

struct TimerOptions {
  int warmup = 2;
  int min_runs = 5;
  int max_runs = 1000;
  double min_seconds = 0.02;  // total timed time to aim for
  // A first warm-up run at least this long is followed by a single timed run: against 0.1 s
  // the clock's and the cache's noise are small, and repeating such runs is what makes a slow
  // candidate expensive to reject (seven runs of a 0.4 s kernel). 0 turns this off.
  double long_run_seconds = 0.1;
  // A first warm-up run at least this long is the result (one run, no median): the caller
  // knows a whole program at least this fast, so it only needs to know the work is slower.
  double give_up_seconds = std::numeric_limits<double>::infinity();
};

struct Timing {
  double median_seconds = 0.0;
  double min_seconds = 0.0;
  int runs = 0;     // timed
  int warmups = 0;  // run before timing
};

// `synchronize` is called after each run, inside the timed region (asynchronous devices).
Timing measure(const std::function<void(int run)>& run, const std::function<void()>& synchronize,
               const TimerOptions& options = {});

}  // namespace kiln::runtime
