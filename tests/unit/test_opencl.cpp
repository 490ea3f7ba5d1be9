// targets/opencl, executed (on PoCL in CI): every one-op Body of the examples and every schedule
// choice of the conformance set runs on the OpenCL device and agrees with the Body interpreter;
// group reductions (local memory, barriers) and the serial one-group form are among them; kernels
// prepared once run at changing dims; the examples run end to end through the executor. The
// executable exits 77 (CTest's skip) when no OpenCL device is present.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "targets/opencl/opencl_target.hpp"
#include "targets/registry.hpp"
#include "tests/unit/device_cases.hpp"

using namespace kiln;

namespace {

targets::opencl::OpenClTarget& target() {
  static targets::opencl::OpenClTarget t;
  return t;
}

std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies,
                                       const std::vector<targets::gpu::Schedule>& schedules) {
  return target().prepare(bodies, schedules);
}

}  // namespace

TEST_CASE("opencl: every one-op Body of the examples agrees with the interpreter", "[opencl]") {
  kiln::testing::check_example_cases(target().device(), prepare);
}

TEST_CASE("opencl: every schedule choice of the conformance set agrees with the interpreter",
          "[opencl]") {
  kiln::testing::check_conformance_choices(target().device(), prepare);
}

TEST_CASE("opencl: the examples end to end agree with the interpreter", "[opencl]") {
  kiln::testing::check_examples_end_to_end(target());
}

TEST_CASE("opencl: kernels prepared once run at changing dims", "[opencl]") {
  kiln::testing::check_changing_dims(target().device(), prepare);
}

TEST_CASE("opencl: the registry makes the target, which has no library ops", "[opencl]") {
  std::unique_ptr<runtime::Target> t = targets::make_target("opencl");
  CHECK(t->name() == "opencl");
  CHECK(t->unavailable().empty());
  CHECK(t->capabilities().library_ops.empty());
  CHECK_FALSE(t->capabilities().survives_fork);
}

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && !target().unavailable().empty()) {
    std::cout << "skipped: no OpenCL device: " << target().unavailable() << "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
