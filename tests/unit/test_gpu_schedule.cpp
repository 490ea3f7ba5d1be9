// targets/gpu: which schedule a Body gets by default (a group per row for softmax rows and for
// long reductions over few outputs, a thread per output otherwise, one group for Scatter),
// which schedules are rejected and why, the grid size as an Expr over the dims, and the choices
// a search may vary (valid, distinct, the default first); group counts at launch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "graph/body_lower.hpp"
#include "graph/tensor.hpp"
#include "targets/gpu/launch.hpp"
#include "targets/gpu/schedule.hpp"
#include "targets/gpu/tuned_kernel.hpp"
#include "tests/unit/graph_fixtures.hpp"

using namespace kiln;
using namespace kiln::graph;
using targets::gpu::Mapping;
using targets::gpu::Schedule;

namespace {

// The one-op Body of the node producing output `name`.
Body body_of(const Graph& g, const std::string& name) {
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Output && n.name == name) return one_op_body(g, g.inputs(id)[0].producer);
  }
  FAIL("no output " << name);
  return one_op_body(g, 0);
}

}  // namespace

TEST_CASE("gpu schedule: defaults follow where the reductions are", "[gpu]") {
  GraphBuilder gb;
  const Expr seq = Expr::dim("seq");
  GraphTensor x = gb.input("x", {seq, 7}, DType::F32);
  GraphTensor w = gb.input("w", {7, 5}, DType::F32);
  GraphTensor v = gb.input("v", {4, 8192}, DType::F32);
  (x * 2.0 + 1.0).output("affine");
  softmax(x, 1).output("softmax");
  matmul(x, w).output("matmul");
  sum(v, 1).output("long_sum");
  const Graph& g = gb.graph();

  // Elementwise: every thread one output; the grid covers 7 * seq outputs in blocks of 256.
  const Body affine = body_of(g, "affine");
  const Schedule a = targets::gpu::default_schedule(affine);
  CHECK(a.mapping == Mapping::ThreadPerOutput);
  CHECK(a.block == 256);
  CHECK(evaluate(targets::gpu::group_count(affine, a), {{"seq", 1000}}) == (7000 + 255) / 256);

  // Softmax: a group per row, the row's max and sum folded by the group, no wider than 7 needs.
  const Body soft = body_of(g, "softmax");
  const Schedule s = targets::gpu::default_schedule(soft);
  CHECK(s.mapping == Mapping::GroupPerRow);
  CHECK(s.group_loops == soft.loops().size() - 1);
  CHECK(s.group_reduce);
  CHECK(s.block == 32);
  CHECK(evaluate(targets::gpu::group_count(soft, s), {{"seq", 9}}) == 9);

  // A short dot product per output: a thread each.
  CHECK(targets::gpu::default_schedule(body_of(g, "matmul")).mapping == Mapping::ThreadPerOutput);

  // A long reduction over 4 outputs: a group each.
  const Body long_sum = body_of(g, "long_sum");
  const Schedule l = targets::gpu::default_schedule(long_sum);
  CHECK(l.mapping == Mapping::GroupPerRow);
  CHECK(l.group_loops == long_sum.loops().size());
  CHECK(l.group_reduce);
  CHECK(evaluate(targets::gpu::group_count(long_sum, l), {}) == 4);
}

TEST_CASE("gpu schedule: invalid schedules say why", "[gpu]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr::dim("seq"), 7}, DType::F32);
  softmax(x, 1).output("softmax");
  const Body soft = body_of(gb.graph(), "softmax");
  CHECK(targets::gpu::schedule_problem(soft, {Mapping::ThreadPerOutput, 0, 96, false}) ==
        "block 96 is not a power of two in [1, 1024]");
  CHECK(targets::gpu::schedule_problem(soft, {Mapping::GroupPerRow, 3, 64, true}) ==
        "rows 3 > 2 loops");
  CHECK(targets::gpu::schedule_problem(soft, {Mapping::GroupPerRow, 2, 64, true}).empty());

  // Scatter's serial loops: only the one-group form.
  GraphBuilder ib;
  std::mt19937 rng(1);
  kiln::testing::build_index_ops(ib, rng);
  const Body scatter = body_of(ib.graph(), "scattered");
  REQUIRE(targets::gpu::serial_prefix(scatter) > 0);
  CHECK(targets::gpu::schedule_problem(scatter, {Mapping::ThreadPerOutput, 0, 256, false}) ==
        "a Body with a serial loop runs as one group (rows 0, no group reduce)");
  const Schedule d = targets::gpu::default_schedule(scatter);
  CHECK(d.mapping == Mapping::GroupPerRow);
  CHECK(d.group_loops == 0);
  CHECK(evaluate(targets::gpu::group_count(scatter, d), {}) == 1);
}

TEST_CASE("gpu schedule: the choices are valid, distinct, the default first", "[gpu]") {
  GraphBuilder gb;
  const Expr seq = Expr::dim("seq");
  GraphTensor x = gb.input("x", {seq, 7}, DType::F32);
  GraphTensor w = gb.input("w", {7, 5}, DType::F32);
  softmax(x, 1).output("softmax");
  matmul(x, w).output("matmul");
  (x + 1.0).output("add");
  for (const char* name : {"softmax", "matmul", "add"}) {
    INFO(name);
    const Body body = body_of(gb.graph(), name);
    const std::vector<Schedule> choices = targets::gpu::schedule_choices(body);
    REQUIRE(choices.size() >= 3);
    CHECK(choices[0] == targets::gpu::default_schedule(body));
    for (std::size_t i = 0; i < choices.size(); ++i) {
      CHECK(targets::gpu::schedule_problem(body, choices[i]).empty());
      for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(choices[i] == choices[j]);
    }
    CHECK(std::any_of(choices.begin(), choices.end(),
                      [](const Schedule& s) { return s.group_reduce; }) ==
          (std::string(name) != "add"));
  }
}

TEST_CASE("gpu schedule: sub-group reductions come right after the default; tuning keeps a "
          "few", "[gpu]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr::dim("seq"), 300}, DType::F32);
  softmax(x, 1).output("softmax");
  (x + 1.0).output("add");
  const Body soft = body_of(gb.graph(), "softmax");
  const std::vector<Schedule> choices = targets::gpu::schedule_choices(soft);
  REQUIRE(choices.size() >= 3);
  REQUIRE(choices[0].group_reduce);
  CHECK_FALSE(choices[0].warp_reduce);
  CHECK(choices[1].warp_reduce);
  CHECK(choices[1].group_loops == choices[0].group_loops);
  CHECK(targets::gpu::schedule_tag(choices[1]).back() == 'w');
  const std::vector<Schedule> tuned = targets::gpu::tuning_schedules(soft);
  CHECK(tuned.size() == std::min(choices.size(), targets::gpu::kTunedVariants));
  CHECK(tuned[0] == choices[0]);
  // A sub-group reduction needs a group reduction and a block of at least one sub-group.
  Schedule bad = choices[1];
  bad.block = 16;
  CHECK(targets::gpu::schedule_problem(soft, bad).find("sub-group") != std::string::npos);
  bad = choices[1];
  bad.group_reduce = false;
  CHECK(targets::gpu::schedule_problem(soft, bad).find("sub-group") != std::string::npos);
  // No reduction: no sub-group variant.
  for (const Schedule& s : targets::gpu::schedule_choices(body_of(gb.graph(), "add"))) {
    CHECK_FALSE(s.warp_reduce);
  }
}

TEST_CASE("gpu launch: group counts follow the dims, capped, at least one", "[gpu]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr::dim("seq"), 7}, DType::F32);
  (x + 1.0).output("add");
  const Body add = body_of(gb.graph(), "add");
  const Schedule s = targets::gpu::default_schedule(add);
  const targets::gpu::GroupCount groups(targets::gpu::group_count(add, s), body_dims(add), 100);
  CHECK(groups({1000}) == (7000 + 255) / 256);
  CHECK(groups({1000}) == (7000 + 255) / 256);  // the same dims again
  CHECK(groups({0}) == 1);                       // nothing to do still launches a group
  CHECK(groups({1000000}) == 100);               // capped: the kernel strides
  CHECK(groups({37}) == (259 + 255) / 256);
}
