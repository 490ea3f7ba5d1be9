// The inputs and the check path of `kiln run` / `kiln compile --check` (tools/model_io): each
// input made once for the program, in its own dtype, and once for the interpreter, with the same
// values; and the predicted peak of a model's check, well under its inputs held as doubles.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "examples/graphs.hpp"
#include "graph/memory_estimate.hpp"
#include "runtime/lower_one_op.hpp"
#include "targets/registry.hpp"
#include "tools/model_io.hpp"

using namespace kiln;

namespace {

// Redirects std::cout (the run's report) for the scope.
class Quiet {
 public:
  Quiet() : saved_(std::cout.rdbuf(sink_.rdbuf())) {}
  ~Quiet() { std::cout.rdbuf(saved_); }
  std::string text() const { return sink_.str(); }

 private:
  std::ostringstream sink_;
  std::streambuf* saved_;
};

}  // namespace

TEST_CASE("model io: a checked run asks for each input once, with one value for both",
          "[tools]") {
  for (const auto& [name, dim] : std::map<std::string, std::string>{{"mlp", "batch=3"},
                                                                    {"gemma3-tiny", "seq=3"}}) {
    INFO(name);
    graph::GraphBuilder b;
    tools::find_model(name).build(b);
    const graph::Graph& g = b.graph();
    const graph::DimValues dims = tools::choose_dims(g, {dim});
    tools::ModelInputs in = tools::make_inputs(g, dims, {}, 5);
    std::map<graph::NodeId, int> native_asks, value_asks;
    const tools::ModelInputs made = in;
    in.native = [&](graph::NodeId id) {
      ++native_asks[id];
      graph::NativeTensor t = made.native(id);
      // The program's input is the interpreter's, in the input's own layout.
      const graph::NativeTensor from_values = graph::to_native(made.value(id));
      CHECK(t.dtype() == g.node(id).dtype);
      CHECK(std::ranges::equal(t.bytes(), from_values.bytes()));
      return t;
    };
    in.value = [&](graph::NodeId id) {
      ++value_asks[id];
      return made.value(id);
    };
    std::unique_ptr<runtime::Target> target = targets::make_target("reference");
    int status = -1;
    std::string report;
    {
      Quiet quiet;
      status = tools::run_and_report(g, runtime::lower_one_op(g), *target, dims, in, 2, 3, true);
      report = quiet.text();
    }
    INFO(report);
    CHECK(status == 0);
    CHECK(report.find("MISMATCH") == std::string::npos);
    CHECK(native_asks.size() == in.inputs.size());
    std::size_t inputs = 0;
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op != graph::Op::Input) continue;
      INFO(n.name);
      ++inputs;
      CHECK(native_asks.count(id) == (n.persistent ? 0 : 1));  // state starts at zero there
      CHECK(value_asks[id] == 1);
      CHECK((n.persistent || native_asks[id] == 1));
    }
    CHECK(value_asks.size() == inputs);
  }
}

TEST_CASE("model io: --input files replace random inputs; an unknown name is an error",
          "[tools]") {
  graph::GraphBuilder b;
  tools::find_model("mlp").build(b);
  const graph::DimValues dims = tools::choose_dims(b.graph(), {});
  CHECK_THROWS_WITH(tools::make_inputs(b.graph(), dims, {"nope=x.npy"}, 1),
                    Catch::Contains("--input nope: the model has no such input"));
}

TEST_CASE("model io: checking Gemma-3-4B is predicted well under its inputs as doubles",
          "[tools]") {
  graph::GraphBuilder b;
  tools::find_model("gemma3-4b").build(b);
  const graph::Graph& g = b.graph();
  const graph::DimValues dims{{"seq", 1}, {"pos", 0}};
  std::int64_t inputs_as_doubles = 0;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == graph::Op::Input) {
      inputs_as_doubles +=
          graph::checked_numel(g.node(id).shape, dims, "input", graph::kBytesPerHeldElement, 1LL << 62) *
          graph::kBytesPerHeldElement;
    }
  }
  const std::int64_t peak = tools::check_peak_bytes(g, runtime::lower_one_op(g), dims);
  const std::int64_t gib = 1LL << 30;
  CHECK(inputs_as_doubles > 30 * gib);  // what all random inputs as doubles took before
  // The program's phase is the largest: the inputs in f32 (15.5 GiB), the one-op program's
  // arena and the outputs (22.3 GiB in all); the interpreter's 12.13 GiB comes after the
  // program is freed. Before, the inputs as doubles (31 GiB) were held through both.
  CHECK(peak < inputs_as_doubles * 3 / 4);
  CHECK(peak > graph::interpreter_peak_bytes(g, dims));
  CHECK(peak < 23 * gib);
}
