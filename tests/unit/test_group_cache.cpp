// The program cache: a second compile reads each group's program instead of searching (no
// saturation, no measurement looked up) and runs the same program with the same outputs; a
// corrupt, truncated, unparsable or misfitting entry is ignored and rewritten; the key changes
// with what decides the result (a rule file's text, the dims, the graph). The text form of a
// group program reads back as itself.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "compiler/chunk_graph.hpp"
#include "compiler/compile.hpp"
#include "compiler/group_cache.hpp"
#include "compiler/group_program_text.hpp"
#include "compiler/partition.hpp"
#include "examples/graphs.hpp"
#include "graph/tensor.hpp"
#include "runtime/executor.hpp"
#include "targets/registry.hpp"
#include "tests/unit/test_util.hpp"

using kiln::testing::fresh_dir;

using namespace kiln;
using graph::DType;
using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;
using kiln::testing::contains;
using kiln::testing::user_error_of;

namespace {

namespace fs = std::filesystem;

compiler::CompileOptions options(const graph::DimValues& dims) {
  compiler::CompileOptions o;
  o.rules_dir = fs::path(KILN_SOURCE_DIR) / "rules";
  o.search.dims = dims;
  o.search.limits.max_seconds = 30;
  return o;
}

// A small graph with a product (a library call or a reduction kernel) and fused elementwise ops.
void small_model(GraphBuilder& b) {
  GraphTensor x = b.input("x", {Expr::dim("n"), Expr(16)});
  GraphTensor w = b.input("w", {Expr(16), Expr(8)});
  graph::relu(graph::matmul(x, w) * 2.0 + 1.0).output("y");
}

std::map<std::string, graph::Tensor> outputs(const compiler::CompiledProgram& p,
                                             runtime::Target& target,
                                             const graph::DimValues& dims) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::map<std::string, graph::Tensor> feeds;
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
           {"x", {dims.at("n"), 16}}, {"w", {16, 8}}}) {
    graph::Tensor t{DType::F32, shape, {}};
    t.data.resize(static_cast<std::size_t>(graph::numel(shape)));
    for (double& v : t.data) v = graph::round_to_dtype(dist(rng), DType::F32);
    feeds[name] = t;
  }
  runtime::Executor executor(p.llir, target);
  return executor.run(dims, feeds);
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".program") out.push_back(e.path());
  }
  return out;
}

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

// `text` with its checksum line recomputed the way the cache writes it.
std::string with_checksum(const std::string& text) {
  const std::size_t last = text.rfind('\n', text.size() - 2);
  const std::string body = text.substr(0, last + 1);
  return body + "checksum " +
         compiler::Measurer::hex(support::hash128(body.data(), body.size())) + "\n";
}

}  // namespace

TEST_CASE("program cache: a second compile does no search and runs the same program",
          "[compile][program-cache]") {
  GraphBuilder b;
  examples::find_example("mlp")->build(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("program-cache-mlp");
  const graph::DimValues dims{{"batch", 8}};
  compiler::Measurer first(*target, cache);
  const compiler::CompiledProgram p = compiler::compile(b.graph(), *target, first, options(dims));
  REQUIRE(p.groups.size() == 1);
  const compiler::GroupReport& cold = p.groups[0].program.report;
  CHECK_FALSE(cold.from_cache);
  CHECK(cold.eclasses > 0);
  CHECK(entries(cache).size() == 1);

  compiler::Measurer second(*target, cache);
  const compiler::CompiledProgram q = compiler::compile(b.graph(), *target, second, options(dims));
  const compiler::GroupReport& warm = q.groups[0].program.report;
  CHECK(warm.from_cache);
  // No saturation, no check, no measurement looked up.
  CHECK(warm.eclasses == 0);
  CHECK(warm.saturation_seconds == 0.0);
  CHECK(warm.rule_stats.empty());
  CHECK(second.stats().measured == 0);
  CHECK(second.stats().cache_hits == 0);
  CHECK(second.stats().runs == 0);
  // The same program, choices and outputs.
  CHECK(compiler::to_text(q.groups[0].program) == compiler::to_text(p.groups[0].program));
  CHECK(runtime::to_text(q.llir, true) == runtime::to_text(p.llir, true));
  CHECK(warm.program_seconds == cold.program_seconds);
  CHECK(warm.kept_one_op == cold.kept_one_op);
  const graph::DimValues run_dims{{"batch", 8}};
  runtime::Executor a(p.llir, *target), c(q.llir, *target);
  std::map<std::string, graph::Tensor> feeds;
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (graph::NodeId id = 0; id < b.graph().size(); ++id) {
    const graph::Node& n = b.graph().node(id);
    if (n.op != graph::Op::Input) continue;
    graph::Tensor t{n.dtype, {}, {}};
    for (const Expr& d : n.shape) t.shape.push_back(graph::evaluate(d, run_dims));
    t.data.resize(static_cast<std::size_t>(graph::numel(t.shape)));
    for (double& v : t.data) v = graph::round_to_dtype(dist(rng), n.dtype);
    feeds[n.name] = t;
  }
  const auto want = a.run(run_dims, feeds);
  const auto got = c.run(run_dims, feeds);
  REQUIRE(want.size() == got.size());
  for (const auto& [name, t] : want) CHECK(got.at(name).data == t.data);

  // Searching anyway (program_cache off) finds every measurement cached and the same program.
  compiler::CompileOptions searching = options(dims);
  searching.search.program_cache = false;
  compiler::Measurer third(*target, cache);
  const compiler::CompiledProgram r = compiler::compile(b.graph(), *target, third, searching);
  CHECK_FALSE(r.groups[0].program.report.from_cache);
  CHECK(third.stats().measured == 0);
  CHECK(third.stats().cache_hits > 0);
  CHECK(runtime::to_text(r.llir, true) == runtime::to_text(p.llir, true));
  fs::remove_all(cache);
}

TEST_CASE("program cache: a corrupt, truncated, unparsable or misfitting entry is ignored",
          "[compile][program-cache]") {
  GraphBuilder b;
  small_model(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("program-cache-corrupt");
  const graph::DimValues dims{{"n", 4}};
  compiler::Measurer measurer(*target, cache);
  const compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, options(dims));
  const std::vector<fs::path> files = entries(cache);
  REQUIRE(files.size() == 1);
  const std::string good = read(files[0]);
  const auto want = outputs(p, *target, dims);
  REQUIRE(contains(good, "\nsteps "));
  REQUIRE(contains(good, "\noutput "));

  const std::size_t steps_at = good.find("\nsteps ") + 1;
  const std::size_t output_at = good.find("\noutput ") + 1;
  std::string flipped = good;
  flipped[good.find("\n  seconds ") + 11] ^= 1;  // a digit of a time: the checksum catches it
  std::string misfit = good;  // an output node the chunk lacks
  misfit.replace(output_at + 7, good.find(' ', output_at + 7) - (output_at + 7), "999");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"a flipped byte", flipped},
      {"a truncated file", good.substr(0, good.size() / 2)},
      {"an empty file", ""},
      {"another version", "kiln group program 0" + good.substr(good.find('\n'))},
      {"a parse error under a good checksum",
       with_checksum(good.substr(0, steps_at) + "stepz" + good.substr(steps_at + 5))},
      {"a misfit under a good checksum", with_checksum(misfit)},
  };
  for (const auto& [what, text] : bad) {
    INFO(what);
    write(files[0], text);
    compiler::Measurer again(*target, cache);
    const compiler::CompiledProgram q = compiler::compile(b.graph(), *target, again, options(dims));
    CHECK_FALSE(q.groups[0].program.report.from_cache);  // searched again
    CHECK(runtime::to_text(q.llir, true) == runtime::to_text(p.llir, true));
    CHECK(outputs(q, *target, dims).at("y").data == want.at("y").data);
    CHECK(read(files[0]) == good);  // and rewritten
  }
  fs::remove_all(cache);
}

TEST_CASE("program cache: the key changes with a rule file, the dims and the graph",
          "[compile][program-cache]") {
  GraphBuilder b;
  small_model(b);
  auto target = targets::make_target("cpu");
  const compiler::Partition partition = compiler::partition(b.graph());
  const compiler::ChunkGraph chunk = compiler::make_chunk_graph(b.graph(), partition.chunks[0]);
  compiler::CompileOptions o = options({{"n", 4}});
  o.search.rule_files = compiler::rule_files(o, *target);
  o.search.pipeline = o.rules_dir / "pipeline.egg";
  auto key = [&](const compiler::SearchOptions& s, const compiler::ChunkGraph& c) {
    std::optional<support::Hash128> k = compiler::group_program_key(c, *target, "fp", s);
    REQUIRE(k.has_value());
    return *k;
  };
  const support::Hash128 base = key(o.search, chunk);
  CHECK(key(o.search, chunk) == base);  // deterministic

  // The same rules with one comment added to one file.
  const fs::path dir = fresh_dir("program-cache-rules");
  fs::create_directories(dir);
  compiler::SearchOptions edited = o.search;
  const fs::path copy = dir / edited.rule_files.back().filename();
  fs::copy_file(edited.rule_files.back(), copy);
  edited.rule_files.back() = copy;
  CHECK(key(edited, chunk) == base);  // where a file lives does not matter, its text does
  std::ofstream(copy, std::ios::app) << "\n;; a comment\n";
  CHECK_FALSE(key(edited, chunk) == base);
  // A rule file that cannot be read: nothing is cached.
  edited.rule_files.back() = dir / "missing.egg";
  CHECK_FALSE(compiler::group_program_key(chunk, *target, "fp", edited).has_value());
  fs::remove_all(dir);

  compiler::SearchOptions other_dims = o.search;
  other_dims.dims["n"] = 5;
  CHECK_FALSE(key(other_dims, chunk) == base);
  CHECK_FALSE(compiler::group_program_key(chunk, *target, "other fingerprint", o.search) ==
              std::optional<support::Hash128>(base));

  GraphBuilder c;
  GraphTensor x = c.input("x", {Expr::dim("n"), Expr(16)});
  GraphTensor w = c.input("w", {Expr(16), Expr(8)});
  graph::relu(graph::matmul(x, w) * 3.0 + 1.0).output("y");  // one constant differs
  const compiler::ChunkGraph other =
      compiler::make_chunk_graph(c.graph(), compiler::partition(c.graph()).chunks[0]);
  CHECK_FALSE(key(o.search, other) == base);
}

TEST_CASE("group program text: a compiled program reads back as itself; bad text is located",
          "[compile][program-cache]") {
  GraphBuilder b;
  examples::find_example("mlp")->build(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("program-cache-text");
  compiler::Measurer measurer(*target, cache);
  const compiler::CompiledProgram p =
      compiler::compile(b.graph(), *target, measurer, options({{"batch", 8}}));
  const compiler::GroupProgram& program = p.groups[0].program;
  const std::string text = compiler::to_text(program);
  INFO(text);
  CHECK(contains(text, "  library \"gemm\""));
  CHECK(contains(text, "  body "));
  const compiler::GroupProgram back = compiler::parse_group_program(text);
  CHECK(compiler::to_text(back) == text);
  REQUIRE(back.steps.size() == program.steps.size());
  for (std::size_t k = 0; k < back.steps.size(); ++k) {
    CHECK(back.steps[k].op == program.steps[k].op);
    CHECK(back.steps[k].inputs == program.steps[k].inputs);
    CHECK(back.steps[k].node == program.steps[k].node);
  }
  CHECK(back.outputs == program.outputs);

  auto error = [](const std::string& t) {
    return user_error_of([&] { compiler::parse_group_program(t, "entry"); });
  };
  const std::size_t inputs_at = text.find("  inputs ");
  REQUIRE(inputs_at != std::string::npos);
  std::string forward = text;
  forward.replace(inputs_at, 9, "  inputs s99 ");
  CHECK(contains(error(forward), "s99 is read before it is computed"));
  CHECK(contains(error(forward), "entry:"));
  CHECK(contains(error(text.substr(0, text.size() - 1)), "no newline"));
  CHECK(contains(error("steps 1\nstep\n  how \"kernel\n"), "unterminated string"));
  CHECK(contains(error(text + "extra\n"), "expected 'rejected'"));
  fs::remove_all(cache);
}
