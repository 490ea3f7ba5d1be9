// targets/opencl, executed (on PoCL in CI): every one-op Body of the examples and every schedule
// choice of the conformance set, of its tiled, reordered and split Bodies, and of
// attention-shaped Bodies with a multi-component reduction state (the online softmax) runs on the OpenCL device and agrees with the Body
// interpreter;
// group reductions (local memory, barriers) and the serial one-group form are among them; kernels
// prepared once run at changing dims; the examples run end to end through the executor, also
// replaying recorded steps at changing dims; a kernel
// prepared with several schedules picks the fastest by measurement and agrees with the
// interpreter. The executable exits 77 (CTest's skip) when no OpenCL device is present.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "targets/gpu/tuned_kernel.hpp"
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

TEST_CASE("opencl: tiled, reordered and split Bodies agree with the interpreter under every "
          "schedule", "[opencl]") {
  kiln::testing::check_scheduled_choices(target().device(), prepare);
}

TEST_CASE("opencl: multi-component reductions agree with the interpreter under every schedule",
          "[opencl]") {
  kiln::testing::check_multi_component_choices(target().device(), prepare);
}

TEST_CASE("opencl: the examples end to end agree with the interpreter", "[opencl]") {
  kiln::testing::check_examples_end_to_end(target());
}

TEST_CASE("opencl: replayed recordings at changing dims agree with the interpreter", "[opencl]") {
  kiln::testing::check_replay_changing_dims(target());
}

TEST_CASE("opencl: kernels prepared once run at changing dims", "[opencl]") {
  kiln::testing::check_changing_dims(target().device(), prepare);
}

TEST_CASE("opencl: a kernel under several schedules measures them and runs the fastest",
          "[opencl]") {
  using kiln::testing::BodyCase;
  for (const BodyCase& c : kiln::testing::conformance_cases()) {
    const std::vector<targets::gpu::Schedule> tried = targets::gpu::tuning_schedules(c.body);
    if (tried.size() < 2) continue;
    INFO(c.label);
    const std::vector<runtime::Prepared> p = target().prepare({c.body});
    REQUIRE(p[0].kernel);
    const auto* tuned = dynamic_cast<const targets::gpu::TunedKernel*>(p[0].kernel.get());
    REQUIRE(tuned);
    CHECK(tuned->variants().size() == tried.size());
    std::vector<long long> dims;
    for (const std::string& d : tuned->dims()) dims.push_back(c.dims.at(d));
    CHECK(tuned->picked(dims) == nullptr);
    kiln::testing::run_cases(target().device(), {c}, p, "tuned");
    const targets::gpu::Schedule* picked = tuned->picked(dims);
    REQUIRE(picked);
    CHECK(std::find(tried.begin(), tried.end(), *picked) != tried.end());
  }
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
