// targets/cuda on a GPU: every one-op Body of the examples and every schedule choice of the
// conformance set runs on the device and agrees with the interpreter; kernels prepared once run
// at changing dims; the examples run end to end through the executor. Exits 77 (CTest's skip)
// when cudart finds no device, saying why.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>

#include "targets/cuda/cuda_target.hpp"
#include "tests/unit/device_cases.hpp"

using namespace kiln;

namespace {

targets::cuda::CudaTarget& target() {
  static targets::cuda::CudaTarget t;
  return t;
}

std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies,
                                       const std::vector<targets::gpu::Schedule>& schedules) {
  return target().prepare(bodies, schedules);
}

}  // namespace

TEST_CASE("cuda device: every one-op Body of the examples agrees with the interpreter", "[gpu]") {
  kiln::testing::check_example_cases(target().device(), prepare);
}

TEST_CASE("cuda device: every schedule choice of the conformance set agrees with the interpreter",
          "[gpu]") {
  kiln::testing::check_conformance_choices(target().device(), prepare);
}

TEST_CASE("cuda device: the examples end to end agree with the interpreter", "[gpu]") {
  kiln::testing::check_examples_end_to_end(target());
}

TEST_CASE("cuda device: kernels prepared once run at changing dims", "[gpu]") {
  kiln::testing::check_changing_dims(target().device(), prepare);
}

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && !target().unavailable().empty()) {
    std::cout << "skipped: " << target().unavailable() << "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
