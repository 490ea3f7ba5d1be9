// Runs one-op Bodies (body_cases.hpp) on a GPU target's device under chosen schedules and
// compares each output with the interpreter's: shared by the OpenCL and CUDA device tests.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "examples/graphs.hpp"
#include "graph/compare.hpp"
#include "graph/interpret.hpp"
#include "graph/random_inputs.hpp"
#include "runtime/executor.hpp"
#include "runtime/lower_one_op.hpp"
#include "graph/native.hpp"
#include "runtime/target.hpp"
#include "targets/gpu/schedule.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/row_state_bodies.hpp"
#include "tests/unit/schedule_cases.hpp"

namespace kiln::testing {

// Runs case c's kernel on `device`; the output's elements as doubles.
inline std::vector<double> run_on_device(runtime::Device& device, const BodyCase& c,
                                         const runtime::Kernel& kernel) {
  std::vector<void*> buffers;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    std::vector<std::byte> bytes = graph::to_native(c.inputs[k], c.body.inputs()[k]);
    void* b = device.allocate(bytes.size());
    device.upload(b, bytes.data(), bytes.size());
    buffers.push_back(b);
  }
  const auto size = static_cast<std::size_t>(graph::evaluate(c.body.output_size(), c.dims));
  std::vector<double> initial(size, 0.0);
  if (c.body.output_aliases()) initial = c.inputs[*c.body.output_aliases()];
  std::vector<std::byte> out = graph::to_native(initial, c.body.dtype());
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
  return graph::from_native(out.data(), size, c.body.dtype());
}

// `prepare` makes body i under schedules[i] (a GPU target's scheduled prepare).
using ScheduledPrepare = std::function<std::vector<runtime::Prepared>(
    const std::vector<graph::Body>&, const std::vector<targets::gpu::Schedule>&)>;

// Runs case i with kernel `prepared[i]` and compares its output with the interpreter's, within
// case_tolerance times `half_slack` for f16 and bf16 outputs.
inline void run_cases(runtime::Device& device, const std::vector<BodyCase>& cases,
                      const std::vector<runtime::Prepared>& prepared, const std::string& how,
                      double half_slack = 1.0) {
  REQUIRE(prepared.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const BodyCase& c = cases[i];
    INFO(c.label << " " << how << "\n" << to_text(c.body));
    INFO(prepared[i].error);
    REQUIRE(prepared[i].kernel != nullptr);
    const std::vector<double> got = run_on_device(device, c, *prepared[i].kernel);
    const std::vector<double> expected = kiln::testing::expected_output(c);
    REQUIRE(got.size() == expected.size());
    const bool half = c.body.dtype() == graph::DType::F16 || c.body.dtype() == graph::DType::BF16;
    const double tolerance = kiln::testing::case_tolerance(c.body.dtype()) * (half ? half_slack : 1.0);
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

// Prepares every case under its schedule in one batch, runs each, compares with the interpreter.
inline void check_cases(runtime::Device& device, const std::vector<BodyCase>& cases,
                        const std::vector<targets::gpu::Schedule>& schedules,
                        const ScheduledPrepare& prepare) {
  std::vector<graph::Body> bodies;
  for (const BodyCase& c : cases) bodies.push_back(c.body);
  const std::vector<runtime::Prepared> prepared = prepare(bodies, schedules);
  REQUIRE(prepared.size() == cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    run_cases(device, {cases[i]}, {prepared[i]}, "under " + targets::gpu::schedule_tag(schedules[i]));
  }
}

// The kernels of the conformance set, prepared once, launched at several values of their
// symbolic dim (seq): the grid and the loops follow the dims passed at launch.
inline void check_changing_dims(runtime::Device& device, const ScheduledPrepare& prepare) {
  const std::vector<BodyCase> first = conformance_cases(9);
  std::vector<graph::Body> bodies;
  std::vector<targets::gpu::Schedule> schedules;
  for (const BodyCase& c : first) {
    bodies.push_back(c.body);
    schedules.push_back(targets::gpu::default_schedule(c.body));
  }
  const std::vector<runtime::Prepared> prepared = prepare(bodies, schedules);
  std::size_t generic = 0;
  for (std::int64_t seq : {3, 40, 1}) {  // 40: rows longer than a 32-thread group
    const std::vector<BodyCase> cases = conformance_cases(seq);
    REQUIRE(cases.size() == first.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      REQUIRE(cases[i].body == first[i].body);  // the same kernels, other dims
      generic += cases[i].dims.count("seq");
    }
    // A group's tree adds a half-precision column in another order than the interpreter,
    // rounding each partial sum: over 40 rows the two differ by a few units in the last place.
    run_cases(device, cases, prepared, "at seq " + std::to_string(seq), 4.0);
  }
  CHECK(generic > 0);
}

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

// Every schedule choice of every conformance Body: group reductions through local memory, by
// sub-group exchanges, and the serial one-group form (Scatter) among them.
inline void check_conformance_choices(runtime::Device& device, const ScheduledPrepare& prepare) {
  std::vector<BodyCase> cases;
  std::vector<targets::gpu::Schedule> schedules;
  std::size_t group_reductions = 0;
  std::size_t sub_group_reductions = 0;
  std::size_t serial = 0;
  for (const BodyCase& c : conformance_cases()) {
    for (const targets::gpu::Schedule& s : targets::gpu::schedule_choices(c.body)) {
      cases.push_back(c);
      schedules.push_back(s);
      group_reductions += s.group_reduce;
      sub_group_reductions += s.warp_reduce;
      serial += targets::gpu::serial_prefix(c.body) > 0;
    }
  }
  CHECK(group_reductions > 20);
  CHECK(sub_group_reductions > 10);
  CHECK(serial > 0);
  check_cases(device, cases, schedules, prepare);
}

// Tiled Bodies of the f32 conformance set at seq 3 (below the tile) and 17 (a ragged tail), and
// its reordered and split Bodies at seq 17 (the partial states and their combine each a
// kernel), under every schedule choice.
inline void check_scheduled_choices(runtime::Device& device, const ScheduledPrepare& prepare) {
  std::vector<BodyCase> cases;
  std::vector<targets::gpu::Schedule> schedules;
  std::size_t split = 0;
  for (std::int64_t rows : {3, 17}) {
    std::vector<BodyCase> base;
    for (BodyCase& c : conformance_cases(rows)) {
      if (c.label.rfind("f32 ", 0) == 0) base.push_back(c);
    }
    std::vector<BodyCase> scheduled = tiled_cases(base, {4});
    if (rows == 17) {  // the other transformations' kernels do not depend on seq
      for (BodyCase& c : reordered_cases(base)) scheduled.push_back(std::move(c));
      for (SplitCase& s : split_cases(base, {3})) {
        scheduled.push_back(std::move(s.partial));
        scheduled.push_back(std::move(s.combine));
        ++split;
      }
    }
    for (const BodyCase& c : scheduled) {
      for (const targets::gpu::Schedule& s : targets::gpu::schedule_choices(c.body)) {
        cases.push_back(c);
        schedules.push_back(s);
      }
    }
  }
  CHECK(split >= 4);  // the f32 Bodies with one outermost reduction of at least 6
  CHECK(cases.size() > 100);
  check_cases(device, cases, schedules, prepare);
}

// Attention-shaped Bodies (row_state_bodies.hpp) -- the online softmax's three-component state
// over two elements, a sum over an inner reduction, causal and -inf masked rows -- under every
// schedule choice (group and sub-group trees combine partial states), prepared once and run at
// several dims.
inline void check_multi_component_choices(runtime::Device& device, const ScheduledPrepare& prepare) {
  const std::vector<AttentionShape> shapes = {{16, 16, ScoreMask::None, true},
                                              {8, 16, ScoreMask::Causal, true},
                                              {8, 16, ScoreMask::Input, true},
                                              {16, 8, ScoreMask::Causal, false}};
  std::vector<graph::Body> bodies;
  std::vector<AttentionShape> body_shapes;
  std::vector<targets::gpu::Schedule> schedules;
  std::size_t group_reductions = 0;
  for (const AttentionShape& shape : shapes) {
    const graph::Body body = attention_body(shape);
    for (const targets::gpu::Schedule& s : targets::gpu::schedule_choices(body)) {
      bodies.push_back(body);
      body_shapes.push_back(shape);
      schedules.push_back(s);
      group_reductions += s.group_reduce;
    }
  }
  CHECK(group_reductions > 0);
  const std::vector<runtime::Prepared> prepared = prepare(bodies, schedules);
  std::mt19937 rng(5);
  for (std::int64_t seq : {1, 7, 40}) {  // 40: more keys than a 32-thread group
    for (std::size_t i = 0; i < bodies.size(); ++i) {
      const BodyCase c = attention_case("attention-shaped", bodies[i], body_shapes[i], 2, seq, rng);
      run_cases(device, {c}, {prepared[i]}, "under " + targets::gpu::schedule_tag(schedules[i]));
    }
  }
}

// The examples end to end, one kernel per op through the executor (buffer plan, arena,
// persistent state), against the HLIR interpreter: every output within the tolerance of its
// reductions' length.
inline void check_examples_end_to_end(runtime::Target& target) {
  const graph::DimValues dims{{"batch", 3}, {"seq", 5}, {"pos", 2}};
  std::size_t outputs = 0;
  for (const char* name : {"mlp", "attention", "gemma3-tiny"}) {
    graph::GraphBuilder gb;
    examples::find_example(name)->build(gb);
    const graph::Graph& g = gb.graph();
    const std::map<std::string, graph::Tensor> inputs = graph::random_inputs(g, dims, 11);
    const std::map<std::string, graph::Tensor> want = graph::interpret(g, dims, inputs);
    const runtime::Llir llir = runtime::lower_one_op(g);
    runtime::Executor executor(llir, target);
    std::map<std::string, graph::Tensor> given;
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op != graph::Op::Input) continue;
      if (n.persistent) {
        executor.set_state(n.name, inputs.at(n.name));
      } else {
        given[n.name] = inputs.at(n.name);
      }
    }
    const std::map<std::string, graph::Tensor> got = executor.run(dims, given);
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op != graph::Op::Output) continue;
      INFO(name << " output " << n.name << " on " << target.name());
      REQUIRE(got.count(n.name));
      const std::int64_t length = graph::reduction_length(g, g.inputs(id)[0].producer, dims);
      CHECK(graph::mismatch(got.at(n.name).data, want.at(n.name).data, n.dtype, length) == "");
      ++outputs;
    }
  }
  CHECK(outputs > 10);
}

// The mlp example through an executor that replays recordings (CUDA graphs on CUDA), at dims
// that change and come back: every run agrees with the interpreter.
inline void check_replay_changing_dims(runtime::Target& target) {
  graph::GraphBuilder gb;
  examples::find_example("mlp")->build(gb);
  const graph::Graph& g = gb.graph();
  const runtime::Llir llir = runtime::lower_one_op(g);
  runtime::Executor executor(llir, target);
  executor.set_replay(true);
  unsigned seed = 21;
  for (std::int64_t batch : {3, 3, 3, 7, 7, 2, 3}) {
    const graph::DimValues dims{{"batch", batch}};
    const std::map<std::string, graph::Tensor> inputs = graph::random_inputs(g, dims, seed++);
    const std::map<std::string, graph::Tensor> want = graph::interpret(g, dims, inputs);
    const std::map<std::string, graph::Tensor> got = executor.run(dims, inputs);
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op != graph::Op::Output) continue;
      INFO("mlp output " << n.name << " at batch " << batch << " on " << target.name());
      const std::int64_t length = graph::reduction_length(g, g.inputs(id)[0].producer, dims);
      CHECK(graph::mismatch(got.at(n.name).data, want.at(n.name).data, n.dtype, length) == "");
    }
  }
  CHECK(executor.recordings() == 3);  // batch 3 (second run), 7 (second run), 3 again
}

}  // namespace kiln::testing
