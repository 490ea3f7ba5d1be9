// Attention's one-pass form chosen by the search (issue 10's acceptance test): the attention
// example compiles, at two sizes, to a few kernels beside its projections' Gemm calls, with no
// temporary that grows quadratically in seq (the [8, seq, seq] scores, the [seq, seq] mask),
// a planned arena that grows linearly in seq, and outputs that match the interpreter.
//
// The rules build the one-pass Kernel (tests/rules/fusion_online_softmax.egg, and `kiln
// check-rules` on the example); the CPU target folds it in blocks of keys for tiles of 16
// query positions, q.k as key products (targets/cpu/row_state.hpp), and it measures faster
// than the Gemm, mask, Softmax and Gemm it replaces (docs/compiler.md, Online softmax). Two
// cold searches: about 2 min.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <unistd.h>

#include "compiler/compile.hpp"
#include "examples/graphs.hpp"
#include "graph/interpret.hpp"
#include "runtime/buffer_plan.hpp"
#include "runtime/executor.hpp"
#include "targets/registry.hpp"

using namespace kiln;
using graph::Expr;
using graph::Tensor;

namespace {

namespace fs = std::filesystem;

struct Compiled {
  std::size_t kernels = 0;        // kernel steps (not library calls)
  std::size_t steps = 0;          // kernel steps and library calls
  std::size_t largest = 0;        // elements of the program's largest temporary
  std::size_t quadratic = 0;      // temporaries more than twice as large at twice the seq
  std::size_t arena_bytes = 0;    // the planned peak of temporaries
  double error = 0.0;             // the largest difference from the interpreter
  double largest_output = 0.0;    // the largest |value| of the interpreter's output
};

Compiled compile_attention(std::int64_t seq, const fs::path& cache) {
  graph::GraphBuilder b;
  examples::find_example("attention")->build(b);
  const graph::Graph& g = b.graph();
  auto target = targets::make_target("cpu");
  compiler::Measurer measurer(*target, cache);
  compiler::CompileOptions o;
  o.rules_dir = fs::path(KILN_SOURCE_DIR) / "rules";
  const graph::DimValues dims{{"seq", seq}};
  o.search.dims = dims;
  o.search.limits.max_seconds = 60;
  compiler::CompiledProgram p = compiler::compile(g, *target, measurer, o);

  Compiled c;
  for (runtime::StepId s = 0; s < p.llir.num_steps(); ++s) {
    c.kernels += p.llir.step(s).body() ? 1 : 0;
  }
  c.steps = p.llir.num_steps();
  for (runtime::ValueId v = 0; v < p.llir.num_values(); ++v) {
    const runtime::Value& value = p.llir.value(v);
    if (value.kind != runtime::ValueKind::Temporary) continue;  // weights are 512 x 512
    const std::int64_t size = graph::evaluate(value.size, dims);
    c.largest = std::max(c.largest, static_cast<std::size_t>(size));
    c.quadratic += graph::evaluate(value.size, {{"seq", 2 * seq}}) > 2 * size;
  }
  c.arena_bytes = runtime::plan_buffers(p.llir, dims).arena_bytes;

  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-0.5, 0.5);
  std::map<std::string, Tensor> feeds;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != graph::Op::Input) continue;
    Tensor t{n.dtype, {}, {}};
    for (const Expr& d : n.shape) t.shape.push_back(graph::evaluate(d, dims));
    t.data.resize(static_cast<std::size_t>(graph::numel(t.shape)));
    for (double& x : t.data) x = graph::round_to_dtype(dist(rng), n.dtype);
    feeds[n.name] = t;
  }
  runtime::Executor executor(p.llir, *target);
  const auto got = executor.run(dims, feeds);
  const auto want = graph::interpret(g, dims, feeds);
  for (const auto& [name, w] : want) {
    const Tensor& x = got.at(name);
    REQUIRE(x.data.size() == w.data.size());
    for (std::size_t i = 0; i < w.data.size(); ++i) {
      c.error = std::max(c.error, std::fabs(x.data[i] - w.data[i]));
      c.largest_output = std::max(c.largest_output, std::fabs(w.data[i]));
    }
  }
  return c;
}

}  // namespace

TEST_CASE("compile: attention streams over keys in one pass: no seq x seq temporary, a linear arena",
          "[compile][online_softmax][acceptance]") {
  const fs::path cache =
      fs::temp_directory_path() / ("kiln-test-attention-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const std::int64_t small = 128, large = 256;
  const Compiled a = compile_attention(small, cache);
  const Compiled b = compile_attention(large, cache);
  for (const auto& [seq, c] : {std::pair{small, a}, std::pair{large, b}}) {
    INFO("seq " << seq << ": " << c.steps << " steps, " << c.kernels << " kernels, largest temporary " << c.largest
                << " elements, " << c.quadratic << " quadratic, arena " << c.arena_bytes
                << " bytes, error " << c.error << " of outputs up to " << c.largest_output);
    // The scores [8, seq, seq] and the mask [seq, seq] are never written; the largest
    // temporaries are the [seq, 512] activations.
    CHECK(c.quadratic == 0);
    CHECK(c.largest <= static_cast<std::size_t>(seq * 512));
    // Beside the four projections (Gemm calls, or tiled products where those measure faster):
    // RoPE's kernels (at most 8: the positions, the frequency table and the rotations of q and
    // k), the attention kernel, and at most its output's copy from [8, seq, 64] to [seq, 512]
    // (the one-pass kernel in either layout measures within a few percent of the other). The
    // mask, the Softmax, and the Gemm program's output copy are gone (11 kernels with the scores).
    CHECK(c.steps <= 14);
    CHECK(c.steps - c.kernels <= 4);
    // f32 through three products of 512 terms, weights in [-0.5, 0.5] (outputs up to about
    // 50): within 1e-5 of the largest output. The compiled kernels contract a * b + c into one
    // rounding where the interpreter rounds twice (RoPE's angles: up to half an ulp of 255).
    CHECK(c.largest_output > 1.0);
    CHECK(c.error < 1e-5 * c.largest_output);
  }
  // Linear: twice the keys, at most twice the arena (a seq x seq buffer would quadruple it).
  CHECK(b.arena_bytes <= 2 * a.arena_bytes + runtime::kBufferAlignment * 8);
  fs::remove_all(cache);
}
