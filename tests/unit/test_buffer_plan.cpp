// Buffer planning: no two temporaries alive at once share bytes (random DAG-shaped programs and
// every lowered graph), memory of dead values is reused, in-place aliases are taken exactly
// when legal, sizes follow the dims.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/tensor.hpp"
#include "runtime/buffer_plan.hpp"
#include "runtime/llir.hpp"
#include "runtime/lower_one_op.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;
using runtime::BufferPlan;
using runtime::Llir;
using runtime::StepId;
using runtime::ValueId;

namespace kiln::testing {

// The plan's invariants (also used by test_executor.cpp on every graph it runs).
void check_buffer_plan(const Llir& llir, const BufferPlan& plan) {
  const std::size_t n = llir.num_values();
  REQUIRE(plan.bytes.size() == n);
  // The value whose buffer `v` took (itself unless produced in place).
  auto root = [&](ValueId v) {
    while (llir.value(v).producer && plan.in_place[*llir.value(v).producer]) {
      const runtime::Step& s = llir.step(*llir.value(v).producer);
      v = s.inputs[*s.alias];
    }
    return v;
  };
  for (ValueId v = 0; v < n; ++v) {
    const runtime::Value& value = llir.value(v);
    if (value.kind != runtime::ValueKind::Temporary) {
      CHECK(!plan.offset[v]);
      continue;
    }
    if (plan.in_place_state[*value.producer]) {  // lives in the state it updates
      const runtime::Step& step = llir.step(*value.producer);
      const runtime::Value& state = llir.value(step.inputs[*step.alias]);
      CHECK(state.kind == runtime::ValueKind::State);
      CHECK(!plan.offset[v]);
      CHECK(plan.last_step[step.inputs[*step.alias]] == *value.producer);  // no later reader
      bool names_state = false;
      for (const runtime::Output& o : llir.outputs()) {
        names_state = names_state || (o.value == v && o.name == state.name);
      }
      CHECK(names_state);
      continue;
    }
    REQUIRE(plan.offset[v]);
    CHECK(*plan.offset[v] % runtime::kBufferAlignment == 0);
    CHECK(*plan.offset[v] + plan.bytes[v] <= plan.arena_bytes);
    CHECK(plan.first_step[v] == *value.producer);
    CHECK(plan.first_step[v] <= plan.last_step[v]);
  }
  for (StepId s = 0; s < llir.num_steps(); ++s) {
    const runtime::Step& step = llir.step(s);
    for (ValueId in : step.inputs) {
      if (plan.offset[in]) CHECK(plan.last_step[in] >= s);
    }
    CHECK(int(plan.in_place[s]) + int(plan.copy_alias[s]) + int(plan.in_place_state[s]) <= 1);
    CHECK((plan.in_place[s] || plan.copy_alias[s] || plan.in_place_state[s]) ==
          step.alias.has_value());
    if (plan.in_place[s]) {
      const ValueId in = step.inputs[*step.alias];
      CHECK(plan.offset[in] == plan.offset[step.output]);
      CHECK(plan.last_step[in] == s);
    }
  }
  for (ValueId a = 0; a < n; ++a) {
    for (ValueId b = a + 1; b < n; ++b) {
      if (!plan.offset[a] || !plan.offset[b] || !plan.bytes[a] || !plan.bytes[b]) continue;
      const bool live_together = plan.first_step[a] <= plan.last_step[b] &&
                                 plan.first_step[b] <= plan.last_step[a];
      const bool share = *plan.offset[a] < *plan.offset[b] + plan.bytes[b] &&
                         *plan.offset[b] < *plan.offset[a] + plan.bytes[a];
      if (!live_together || !share) continue;
      INFO("%" << a << " and %" << b << " share bytes while both alive");
      // Only an in-place chain may, and its members meet at one step at most.
      CHECK(root(a) == root(b));
      CHECK((plan.last_step[a] <= plan.first_step[b] || plan.last_step[b] <= plan.first_step[a]));
    }
  }
}

}  // namespace kiln::testing

namespace {

// A kernel reading `inputs` and writing `size` elements (never run: only its shape matters).
graph::Body kernel(const Llir& llir, const std::vector<ValueId>& inputs, const Expr& size) {
  std::vector<DType> dtypes;
  for (ValueId v : inputs) dtypes.push_back(llir.value(v).dtype);
  graph::BodyBuilder b(dtypes);
  Expr o = b.output_loop(size);
  graph::ScalarId value = b.constant(1.0, DType::F32);
  for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
    if (dtypes[slot] == DType::F32) value = b.binary(graph::ScalarOp::Add, value, b.load(slot, 0));
  }
  return b.finish(value, size, o);
}

// A Scatter-like kernel: writes rows of a buffer that starts as input 0 (alias 0).
graph::Body scatter_kernel(const Llir& llir, const std::vector<ValueId>& inputs,
                           const Expr& size) {
  std::vector<DType> dtypes;
  for (ValueId v : inputs) dtypes.push_back(llir.value(v).dtype);
  graph::BodyBuilder b(dtypes);
  Expr o = b.output_loop(1, false);
  graph::ScalarId row = b.load(1, 0);
  return b.finish_rows(b.load(0, o), size, o, row, 1, size, 0);
}

// The same program with every step that has an alias marked in place (Step::in_place), as
// the compiler marks the in-place forms extraction chose.
Llir with_in_place(const Llir& llir) {
  Llir out;
  for (ValueId id = 0; id < llir.num_values(); ++id) {
    const runtime::Value& v = llir.value(id);
    if (!v.producer) {
      out.add_input(v.name, v.dtype, v.shape, v.kind == runtime::ValueKind::State);
      continue;
    }
    const runtime::Step& s = llir.step(*v.producer);
    if (const graph::Body* body = s.body()) {
      out.add_kernel(*body, s.inputs, v.shape, s.label, s.alias.has_value());
    } else {
      out.add_call(*s.call(), s.inputs, v.dtype, v.shape, s.label);
    }
  }
  for (const runtime::Output& o : llir.outputs()) out.add_output(o.name, o.value);
  return out;
}

// A random program: inputs, then steps reading random earlier values; scatters write in place
// where that is safe (the destination is a temporary that no later step or output reads), as
// the compiler's rules allow, for about half of them.
Llir random_llir(std::mt19937& rng, std::size_t steps) {
  struct Planned {
    bool scatter = false;
    std::vector<std::size_t> ins;  // indices into the value list (0, 1: inputs a, b)
    int rows = 1;
  };
  std::vector<Planned> plan;
  std::size_t values = 2;
  auto pick = [&] { return std::uniform_int_distribution<std::size_t>(0, values - 1)(rng); };
  for (std::size_t i = 0; i < steps; ++i, ++values) {
    Planned p;
    p.scatter = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
    const int count = p.scatter ? 1 : std::uniform_int_distribution<int>(1, 3)(rng);
    for (int k = 0; k < count; ++k) p.ins.push_back(pick());
    p.rows = std::uniform_int_distribution<int>(1, 9)(rng);
    plan.push_back(p);
  }
  std::vector<std::size_t> outputs{pick(), pick()};
  // Liveness of the planned values: the last step reading each.
  std::vector<std::size_t> last_read(values, 0);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    for (std::size_t v : plan[i].ins) last_read[v] = std::max(last_read[v], i);
  }

  Llir llir;
  const Expr n = Expr::dim("n");
  std::vector<ValueId> ids_of{llir.add_input("a", DType::F32, {n, 4}),
                              llir.add_input("b", DType::F32, {16})};
  const ValueId ids = llir.add_input("ids", DType::I32, {1});
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::string label = "step " + std::to_string(i);
    std::vector<ValueId> ins;
    for (std::size_t v : plan[i].ins) ins.push_back(ids_of[v]);
    if (plan[i].scatter) {
      const std::size_t dest = plan[i].ins[0];
      const bool safe = dest >= 2 && last_read[dest] == i &&
                        std::find(outputs.begin(), outputs.end(), dest) == outputs.end();
      ins.push_back(ids);
      const Expr size = llir.value(ins[0]).size;
      ids_of.push_back(llir.add_kernel(scatter_kernel(llir, ins, size), ins,
                                       llir.value(ins[0]).shape, label,
                                       safe && std::uniform_int_distribution<int>(0, 1)(rng)));
      continue;
    }
    const std::vector<Expr> shape{n * plan[i].rows, Expr(3)};
    ids_of.push_back(llir.add_kernel(kernel(llir, ins, runtime::shape_size(shape)), ins, shape,
                                     label));
  }
  for (std::size_t k = 0; k < 2; ++k) llir.add_output("out" + std::to_string(k), ids_of[outputs[k]]);
  return llir;
}

}  // namespace

TEST_CASE("buffer plan: random programs never share live bytes", "[runtime][buffer_plan]") {
  std::mt19937 rng(20240601);
  std::size_t in_place = 0;
  std::size_t copies = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const Llir llir = random_llir(rng, 4 + static_cast<std::size_t>(trial % 25));
    for (std::int64_t n : {1, 7}) {
      INFO("trial " << trial << " n=" << n << "\n" << runtime::to_text(llir));
      const BufferPlan plan = runtime::plan_buffers(llir, {{"n", n}});
      kiln::testing::check_buffer_plan(llir, plan);
      CHECK(plan.arena_bytes <= plan.unshared_bytes + runtime::kBufferAlignment *
                                                          llir.num_values());
      for (StepId s = 0; s < llir.num_steps(); ++s) {
        CHECK(plan.in_place[s] == llir.step(s).in_place);  // exactly what the program says
        in_place += plan.in_place[s];
        copies += plan.copy_alias[s];
      }
    }
  }
  // The generator exercises both outcomes.
  CHECK(in_place > 0);
  CHECK(copies > 0);
}

TEST_CASE("buffer plan: a chain reuses dead buffers", "[runtime][buffer_plan]") {
  graph::GraphBuilder gb;
  graph::GraphTensor x = gb.input("x", {Expr::dim("n"), 16}, DType::F32);
  graph::GraphTensor y = x;
  for (int i = 0; i < 6; ++i) y = graph::exp(y) + 1.0;  // a long chain of temporaries
  y.output("y");
  const Llir llir = runtime::lower_one_op(gb.graph());
  const BufferPlan plan = runtime::plan_buffers(llir, {{"n", 8}});
  kiln::testing::check_buffer_plan(llir, plan);
  // At most two chain values are alive at once (constants are tiny): far below the sum.
  CHECK(plan.unshared_bytes >= 12 * 8 * 16 * 4);
  CHECK(plan.arena_bytes <= 3 * 8 * 16 * 4);
  // Sizes follow the dims.
  const BufferPlan bigger = runtime::plan_buffers(llir, {{"n", 80}});
  CHECK(bigger.unshared_bytes > 9 * plan.unshared_bytes);
  CHECK(kiln::testing::contains(runtime::to_text(llir, plan),
                               "arena=" + std::to_string(plan.arena_bytes) + " "));
  CHECK(kiln::testing::contains(
      kiln::testing::user_error_of([&] { runtime::plan_buffers(llir, {}); }), "n"));
  // Dims too large for this machine are refused before any allocation, naming the dim.
  const std::string too_large = kiln::testing::user_error_of(
      [&] { runtime::plan_buffers(llir, {{"n", std::int64_t{1} << 40}}); });
  CHECK(kiln::testing::contains(too_large, "with dim n=1099511627776 needs"));
  CHECK(kiln::testing::contains(too_large, "of memory here"));
}

TEST_CASE("buffer plan: in place where the program says so and it is safe, else a clear error", "[runtime][buffer_plan]") {
  graph::GraphBuilder gb;
  graph::GraphTensor table = gb.input("table", {6, 4}, DType::F32);
  graph::GraphTensor ids = gb.input("ids", {2}, DType::I32);
  graph::GraphTensor values = gb.input("values", {2, 4}, DType::F32);
  graph::GraphTensor dead = table * 2.0;    // read only by its scatter
  graph::scatter(dead, ids, values).output("a");
  const Llir copying = runtime::lower_one_op(gb.graph());
  // Without a mark the scatter copies its destination, even where it could write in place.
  const BufferPlan copy_plan = runtime::plan_buffers(copying, {});
  kiln::testing::check_buffer_plan(copying, copy_plan);
  StepId scatter = copying.num_steps();
  for (StepId s = 0; s < copying.num_steps(); ++s) {
    if (copying.step(s).alias) scatter = s;
  }
  REQUIRE(scatter < copying.num_steps());
  CHECK(copy_plan.copy_alias[scatter]);
  CHECK_FALSE(copy_plan.in_place[scatter]);
  // Marked: the output shares the dead destination's bytes.
  const Llir marked = with_in_place(copying);
  const BufferPlan plan = runtime::plan_buffers(marked, {});
  kiln::testing::check_buffer_plan(marked, plan);
  const runtime::Step& step = marked.step(scatter);
  CHECK(plan.in_place[scatter]);
  CHECK(plan.offset[step.output] == plan.offset[step.inputs[0]]);

  // Marked where it is not safe: the destination is read later, or is a caller's input.
  graph::GraphBuilder gb2;
  graph::GraphTensor table2 = gb2.input("table", {6, 4}, DType::F32);
  graph::GraphTensor ids2 = gb2.input("ids", {2}, DType::I32);
  graph::GraphTensor values2 = gb2.input("values", {2, 4}, DType::F32);
  graph::GraphTensor reread = table2 + 1.0;
  (graph::scatter(reread, ids2, values2) + reread).output("b");
  const Llir later = with_in_place(runtime::lower_one_op(gb2.graph()));
  CHECK(kiln::testing::contains(
      kiln::testing::user_error_of([&] { runtime::plan_buffers(later, {}); }), "read later"));
  graph::GraphBuilder gb3;
  graph::scatter(gb3.input("table", {6, 4}, DType::F32), gb3.input("ids", {2}, DType::I32),
                 gb3.input("values", {2, 4}, DType::F32))
      .output("c");
  const Llir input = with_in_place(runtime::lower_one_op(gb3.graph()));
  CHECK(kiln::testing::contains(
      kiln::testing::user_error_of([&] { runtime::plan_buffers(input, {}); }),
      "a caller's input"));
}

TEST_CASE("buffer plan: a cache scattered into its own next value is updated in place",
          "[runtime][buffer_plan]") {
  for (bool read_later : {false, true}) {
    graph::GraphBuilder gb;
    graph::Graph& g = gb.graph();
    graph::GraphTensor cache = gb.input("cache", {8, 4}, DType::F32);
    g.node(cache.node()).persistent = true;
    graph::GraphTensor ids = gb.input("ids", {2}, DType::I32);
    graph::GraphTensor values = gb.input("values", {2, 4}, DType::F32);
    graph::GraphTensor updated = graph::scatter(cache, ids, values);
    updated.output("cache");                        // the next value of the state
    (updated * 2.0).output("y");                    // read after the update: fine in place
    if (read_later) (cache + 1.0).output("old");    // the old value read afterwards: no
    const Llir llir = with_in_place(runtime::lower_one_op(g));
    StepId scatter = llir.num_steps();
    for (StepId s = 0; s < llir.num_steps(); ++s) {
      if (llir.step(s).alias) scatter = s;
    }
    REQUIRE(scatter < llir.num_steps());
    INFO("read_later=" << read_later);
    if (read_later) {  // steps run in graph order: the old cache's reader comes after
      CHECK(kiln::testing::contains(
          kiln::testing::user_error_of([&] { runtime::plan_buffers(llir, {}); }), "read later"));
    } else {
      const BufferPlan plan = runtime::plan_buffers(llir, {});
      kiln::testing::check_buffer_plan(llir, plan);
      CHECK(plan.in_place_state[scatter]);
      CHECK_FALSE(plan.offset[llir.step(scatter).output]);
    }
  }
}
