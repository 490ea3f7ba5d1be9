// Runs one-op Bodies (body_cases.hpp) on a GPU target's device under chosen schedules and
// compares each output with the interpreter's: shared by the OpenCL and CUDA device tests.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/native.hpp"
#include "runtime/target.hpp"
#include "targets/gpu/schedule.hpp"
#include "tests/unit/body_cases.hpp"

namespace kiln::testing {

// Runs case c's kernel on `device`; the output's elements as doubles.
inline std::vector<double> run_on_device(runtime::Device& device, const BodyCase& c,
                                         const runtime::Kernel& kernel) {
  std::vector<void*> buffers;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    std::vector<std::byte> bytes = runtime::to_native(c.inputs[k], c.body.inputs()[k]);
    void* b = device.allocate(bytes.size());
    device.upload(b, bytes.data(), bytes.size());
    buffers.push_back(b);
  }
  const auto size = static_cast<std::size_t>(graph::evaluate(c.body.output_size(), c.dims));
  std::vector<double> initial(size, 0.0);
  if (c.body.output_aliases()) initial = c.inputs[*c.body.output_aliases()];
  std::vector<std::byte> out = runtime::to_native(initial, c.body.dtype());
  // The output sits inside a larger allocation, at an offset, as in an arena.
  const std::size_t offset = 256;
  void* arena = device.allocate(out.size() + offset);
  void* output = static_cast<std::byte*>(arena) + offset;
  device.upload(output, out.data(), out.size());
  buffers.push_back(output);
  std::vector<long long> dims;
  for (const std::string& d : kernel.dims()) dims.push_back(c.dims.at(d));
  device.launch(kernel, buffers, dims);
  device.synchronize();
  device.download(out.data(), output, out.size());
  for (std::size_t k = 0; k + 1 < buffers.size(); ++k) device.release(buffers[k]);
  device.release(arena);
  return runtime::from_native(out.data(), size, c.body.dtype());
}

// Prepares every case under its schedule in one batch, runs each, compares with the interpreter.
// `prepare` makes body i under schedules[i] (a GPU target's scheduled prepare).
inline void check_cases(
    runtime::Device& device, const std::vector<BodyCase>& cases,
    const std::vector<targets::gpu::Schedule>& schedules,
    const std::function<std::vector<runtime::Prepared>(
        const std::vector<graph::Body>&, const std::vector<targets::gpu::Schedule>&)>& prepare) {
  std::vector<graph::Body> bodies;
  for (const BodyCase& c : cases) bodies.push_back(c.body);
  std::vector<runtime::Prepared> prepared = prepare(bodies, schedules);
  REQUIRE(prepared.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const BodyCase& c = cases[i];
    INFO(c.label << " under " << targets::gpu::schedule_tag(schedules[i]) << "\n"
                 << to_text(c.body));
    INFO(prepared[i].error);
    REQUIRE(prepared[i].kernel != nullptr);
    const std::vector<double> got = run_on_device(device, c, *prepared[i].kernel);
    const std::vector<double> expected = kiln::testing::expected_output(c);
    REQUIRE(got.size() == expected.size());
    const double tolerance = kiln::testing::case_tolerance(c.body.dtype());
    std::size_t wrong = 0;
    std::size_t first_wrong = 0;
    for (std::size_t j = 0; j < got.size(); ++j) {
      const bool same = got[j] == expected[j] || (std::isnan(got[j]) && std::isnan(expected[j])) ||
                        std::fabs(got[j] - expected[j]) <= tolerance * (1.0 + std::fabs(expected[j]));
      if (!same && wrong++ == 0) first_wrong = j;
    }
    INFO("first wrong element " << first_wrong << ": " << got[first_wrong] << " vs "
                                << expected[first_wrong]);
    CHECK(wrong == 0);
  }
}


using ScheduledPrepare = std::function<std::vector<runtime::Prepared>(
    const std::vector<graph::Body>&, const std::vector<targets::gpu::Schedule>&)>;

// Every one-op Body of the examples under its default schedule.
inline void check_example_cases(runtime::Device& device, const ScheduledPrepare& prepare) {
  const std::vector<BodyCase> cases = example_cases();
  std::vector<targets::gpu::Schedule> schedules;
  std::size_t group_reductions = 0;
  for (const BodyCase& c : cases) {
    schedules.push_back(targets::gpu::default_schedule(c.body));
    group_reductions += schedules.back().group_reduce;
  }
  CHECK(cases.size() > 100);
  CHECK(group_reductions > 0);  // softmax and norm rows
  check_cases(device, cases, schedules, prepare);
}

// Every schedule choice of every conformance Body: group reductions through local memory and
// the serial one-group form (Scatter) among them.
inline void check_conformance_choices(runtime::Device& device, const ScheduledPrepare& prepare) {
  std::vector<BodyCase> cases;
  std::vector<targets::gpu::Schedule> schedules;
  std::size_t group_reductions = 0;
  std::size_t serial = 0;
  for (const BodyCase& c : conformance_cases()) {
    for (const targets::gpu::Schedule& s : targets::gpu::schedule_choices(c.body)) {
      cases.push_back(c);
      schedules.push_back(s);
      group_reductions += s.group_reduce;
      serial += targets::gpu::serial_prefix(c.body) > 0;
    }
  }
  CHECK(group_reductions > 20);
  CHECK(serial > 0);
  check_cases(device, cases, schedules, prepare);
}

}  // namespace kiln::testing
