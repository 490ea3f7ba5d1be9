// The adaptive timer: how many runs it makes for short and for long work.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "runtime/timer.hpp"

using kiln::runtime::measure;
using kiln::runtime::TimerOptions;

namespace {

// Counts calls; sleeps `seconds` in each.
struct SleepyRun {
  double seconds;
  int calls = 0;
  void operator()(int) {
    ++calls;
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

}  // namespace

TEST_CASE("short runs are repeated to the minimum count and time", "[timer]") {
  SleepyRun run{0.0005};
  TimerOptions options;
  const auto timing = measure([&](int i) { run(i); }, nullptr, options);
  CHECK(timing.warmups == options.warmup);
  CHECK(timing.runs >= options.min_runs);
  CHECK(timing.median_seconds >= 0.0005);
  CHECK(run.calls == timing.runs + timing.warmups);
}

TEST_CASE("a long first run is timed once after that one warm-up", "[timer]") {
  SleepyRun run{0.11};
  const auto timing = measure([&](int i) { run(i); }, nullptr, TimerOptions{});
  CHECK(timing.warmups == 1);
  CHECK(timing.runs == 1);
  CHECK(run.calls == 2);
  CHECK(timing.median_seconds >= 0.11);
}

TEST_CASE("a first run past the give-up time is the result", "[timer]") {
  SleepyRun run{0.02};
  TimerOptions options;
  options.give_up_seconds = 0.01;
  const auto timing = measure([&](int i) { run(i); }, nullptr, options);
  CHECK(run.calls == 1);
  CHECK(timing.runs == 1);
  CHECK(timing.warmups == 0);
  CHECK(timing.median_seconds >= 0.02);
  // Faster than the give-up time: the usual warm-ups and timed runs.
  options.give_up_seconds = 1.0;
  const auto full = measure([&](int i) { run(i); }, nullptr, options);
  CHECK(full.warmups == options.warmup);
  CHECK(full.runs >= options.min_runs);
}

TEST_CASE("the long-run shortcut can be turned off", "[timer]") {
  SleepyRun run{0.11};
  TimerOptions options;
  options.long_run_seconds = 0.0;
  options.warmup = 1;
  options.min_runs = 2;
  const auto timing = measure([&](int i) { run(i); }, nullptr, options);
  CHECK(timing.warmups == 1);
  CHECK(timing.runs == 2);
  CHECK(run.calls == 3);
}
