// The executor's cost per step on the cpu target: a chain of one-op kernels on a single
// element, so that the kernels themselves cost almost nothing; prints the median run's time
// per step in microseconds (a decode step of SmolLM2-135M is 2,212 such launches).
//   step_overhead [steps (default 2000)] [runs (default 30)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "graph/tensor.hpp"
#include "runtime/executor.hpp"
#include "runtime/lower_one_op.hpp"
#include "targets/registry.hpp"

using namespace kiln;

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 30;
  graph::GraphBuilder b;
  graph::GraphTensor y = b.input("x", {1});
  for (int i = 0; i < steps; ++i) y = y * 0.5 + 1.0;
  y.output("y");
  const runtime::Llir llir = runtime::lower_one_op(b.graph());
  auto target = targets::make_target("cpu");
  runtime::Executor executor(llir, *target);
  executor.bind("x", graph::Tensor{graph::DType::F32, {1}, {1.0}});
  std::vector<double> times;
  for (int r = 0; r < runs + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    executor.run({}, {}, nullptr, runtime::Executor::Fetch::Nothing);
    if (r > 0)
      times.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  std::printf("%zu steps, %.3f us per step (median of %d runs)\n", llir.num_steps(),
              times[times.size() / 2] / static_cast<double>(llir.num_steps()) * 1e6, runs);
  return 0;
}
