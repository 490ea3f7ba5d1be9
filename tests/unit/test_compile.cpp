// The compiler end to end: examples compile to programs that match the interpreter, the
// measured-faster alternative wins, an unsound rule file is caught and named, a second compile
// measures nothing, and two compiles with two fresh caches give the same program.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

#include "compiler/compile.hpp"
#include "examples/graphs.hpp"
#include "graph/interpret.hpp"
#include "graph/nn.hpp"
#include "runtime/executor.hpp"
#include "targets/cpu/target.hpp"
#include "targets/cpu/tiled_product.hpp"
#include "targets/node_homes.hpp"
#include "targets/registry.hpp"
#include "tests/unit/test_util.hpp"

using kiln::testing::fresh_dir;

using namespace kiln;
using graph::DType;
using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;
using graph::Tensor;

namespace {

namespace fs = std::filesystem;

compiler::CompileOptions options(const graph::DimValues& dims) {
  compiler::CompileOptions o;
  o.rules_dir = fs::path(KILN_SOURCE_DIR) / "rules";
  o.search.dims = dims;
  o.search.limits.max_seconds = 30;
  return o;
}

std::map<std::string, Tensor> random_feeds(const graph::Graph& g, const graph::DimValues& dims,
                                           unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-0.5, 0.5);
  std::map<std::string, Tensor> out;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != graph::Op::Input || n.persistent) continue;
    Tensor t{n.dtype, {}, {}};
    for (const Expr& d : n.shape) t.shape.push_back(graph::evaluate(d, dims));
    t.data.resize(static_cast<std::size_t>(graph::numel(t.shape)));
    for (double& v : t.data) v = graph::is_float(n.dtype) ? graph::round_to_dtype(dist(rng), n.dtype) : static_cast<double>(rng() % 4);
    out[n.name] = t;
  }
  return out;
}

// Runs the compiled program and the interpreter on the same random inputs; the largest error,
// and with `largest` the largest output magnitude (errors of sums in another order scale with
// it: the mlp's outputs reach ~100 on these inputs).
double max_error(const graph::Graph& g, const compiler::CompiledProgram& p,
                 runtime::Target& target, const graph::DimValues& dims,
                 double* largest = nullptr) {
  auto feeds = random_feeds(g, dims, 5);
  runtime::Executor executor(p.llir, target);
  auto got = executor.run(dims, feeds);
  std::map<std::string, Tensor> all = feeds;
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == graph::Op::Input && n.persistent) {
      Tensor zeros{n.dtype, {}, {}};
      for (const Expr& d : n.shape) zeros.shape.push_back(graph::evaluate(d, dims));
      zeros.data.assign(static_cast<std::size_t>(graph::numel(zeros.shape)), 0.0);
      all[n.name] = zeros;
    }
  }
  auto want = graph::interpret(g, dims, all);
  double worst = 0.0;
  REQUIRE(got.size() == want.size());
  for (const auto& [name, w] : want) {
    const Tensor& x = got.at(name);
    REQUIRE(x.data.size() == w.data.size());
    for (std::size_t i = 0; i < w.data.size(); ++i) {
      worst = std::max(worst, std::fabs(x.data[i] - w.data[i]));
      if (largest) *largest = std::max(*largest, std::fabs(w.data[i]));
    }
  }
  return worst;
}

std::size_t gemm_steps(const runtime::Llir& llir) {
  std::size_t n = 0;
  for (runtime::StepId s = 0; s < llir.num_steps(); ++s) n += llir.step(s).call() ? 1 : 0;
  return n;
}

// Steps that compute a matrix product as a library call or as the CPU's register-blocked
// tiled product (the two measure within noise of each other, so either may be picked).
std::size_t product_steps(const runtime::Llir& llir) {
  std::size_t n = 0;
  for (runtime::StepId s = 0; s < llir.num_steps(); ++s) {
    const graph::Body* body = llir.step(s).body();
    n += llir.step(s).call() ||
         (body && targets::cpu::plan_tiled_product(*body, targets::NodeHomes(*body)));
  }
  return n;
}

}  // namespace

TEST_CASE("compile: the mlp example compiles to matrix products and matches the interpreter",
          "[compile]") {
  GraphBuilder b;
  examples::find_example("mlp")->build(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("compile-mlp");
  compiler::Measurer measurer(*target, cache);
  const graph::DimValues dims{{"batch", 16}};
  compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, options(dims));
  // The two 512-wide layers' matmuls: a Gemm call or a tiled product, each ~50x faster than
  // the plain broadcast product and its reduction, far beyond timing noise. (The 10-wide head
  // is close either way.)
  CHECK(product_steps(p.llir) >= 2);
  // Fusion: each layer's bias and ReLU (Add, LessThan, Cast, Mul: 4 one-op kernels) are one
  // kernel after its matmul, and the last layer's bias is computed by the output's kernel.
  CHECK(p.llir.num_steps() <= 6);
  // Sums of 784 and 512 products in another order (a library call, a tiled product, a
  // reordered loop): f32 agreement relative to the largest output.
  double largest = 0.0;
  const double error = max_error(b.graph(), p, *target, dims, &largest);
  INFO("error " << error << " of outputs up to " << largest);
  CHECK(error < 1e-5 * largest);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.groups[0].program.report.rejected.empty());
  CHECK(p.groups[0].program.report.stop_reason == "saturated");

  // A second search over the same cache measures nothing and gives the same program (the
  // program cache is off: with it, nothing is even looked up; test_group_cache.cpp).
  compiler::Measurer again(*target, cache);
  compiler::CompileOptions searching = options(dims);
  searching.search.program_cache = false;
  compiler::CompiledProgram q = compiler::compile(b.graph(), *target, again, searching);
  CHECK(again.stats().measured == 0);
  CHECK(again.stats().cache_hits > 0);
  CHECK(runtime::to_text(q.llir, true) == runtime::to_text(p.llir, true));
  fs::remove_all(cache);
}

TEST_CASE("compile: the cost model measures fewer of the mlp's candidates and keeps a program "
          "as good", "[compile][cost_model]") {
  GraphBuilder b;
  examples::find_example("mlp")->build(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("compile-mlp-ranked");
  const graph::DimValues dims{{"batch", 16}};
  auto compile_top = [&](std::size_t top) {
    compiler::Measurer measurer(*target, cache);
    compiler::CompileOptions o = options(dims);
    o.search.measure_top = top;
    o.search.program_cache = false;
    return compiler::compile(b.graph(), *target, measurer, o);
  };
  const compiler::CompiledProgram all = compile_top(0);
  const compiler::CompiledProgram ranked = compile_top(1);
  const compiler::GroupReport& a = all.groups.at(0).program.report;
  const compiler::GroupReport& r = ranked.groups.at(0).program.report;
  CHECK(a.pruned == 0);
  CHECK(a.checked == a.candidates);
  CHECK(r.candidates == a.candidates);  // the same e-graph (schedules on by default)
  CHECK(r.pruned > 0);
  // Pruned candidates are neither checked nor rejections.
  CHECK(r.checked + r.pruned == r.candidates);
  CHECK(r.rejected.empty());
  // Still the library products (the baseline is always measured), fused, and correct.
  CHECK(product_steps(ranked.llir) >= 2);
  CHECK(ranked.llir.num_steps() <= 6);
  // (Another sum order than the full search's program may be chosen: f32 sums of 784 terms.)
  CHECK(max_error(b.graph(), ranked, *target, dims) < 1e-3);
  // Deterministic: ranked again over the same measurements, the same program.
  CHECK(runtime::to_text(compile_top(1).llir, true) == runtime::to_text(ranked.llir, true));
  fs::remove_all(cache);
}

TEST_CASE("compile: a chain of five elementwise ops is one kernel", "[compile]") {
  GraphBuilder b;
  const Expr n = Expr::dim("n");
  GraphTensor x = b.input("x", {n, Expr(64)}, DType::F32);
  GraphTensor y = b.input("y", {n, Expr(64)}, DType::F32);
  graph::sqrt(graph::recip((graph::exp(x) + y) * x * x + 3.0)).output("z");
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("compile-chain");
  compiler::Measurer measurer(*target, cache);
  // Large enough that the ten one-op kernels' memory traffic loses to one kernel beyond noise.
  const graph::DimValues dims{{"n", 4096}};
  compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, options(dims));
  REQUIRE(p.groups.size() == 1);
  const compiler::GroupReport& report = p.groups[0].program.report;
  INFO("candidates " << report.candidates << ", rejected " << report.rejected.size()
                     << ", kept one-op " << report.kept_one_op << ", stopped: "
                     << report.stop_reason);
  // The rules' program is the output's kernel computing the whole chain; the compile runs it
  // unless the one-op program timed 30% faster (timing noise on a loaded machine).
  CHECK(report.searched_steps == 1);
  CHECK((p.llir.num_steps() == 1 || report.kept_one_op));
  CHECK(max_error(b.graph(), p, *target, dims) < 1e-5);
  fs::remove_all(cache);
}

TEST_CASE("compile: two compiles with two fresh caches give the same program", "[compile]") {
  // Determinism must not come from the cache: each compile here measures everything itself.
  // Every choice in this graph is decided by a wide margin (a 512-wide f64 product as a Gemm
  // call measures ~50x faster than as a broadcast Mul and a reduction; the elementwise ops have
  // one candidate each), so any difference between the two programs is nondeterminism in kiln
  // (pointer hashing, unordered iteration), not timing noise. (In f64: an f32 product's tiled
  // kernel measures within noise of sgemm.)
  GraphBuilder b;
  const DType f64 = DType::F64;
  GraphTensor x = b.input("x", {Expr(64), Expr(512)}, f64);
  GraphTensor w1 = b.input("w1", {Expr(512), Expr(512)}, f64);
  GraphTensor w2 = b.input("w2", {Expr(512), Expr(512)}, f64);
  graph::matmul(graph::relu(graph::matmul(x, w1)), w2).output("y");
  auto compile_fresh = [&](const std::string& name) {
    const fs::path cache = fresh_dir(name);  // kernels and measurements both start empty
    auto target = targets::make_cpu_target(cache);
    compiler::Measurer measurer(*target, cache);
    compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, options({}));
    CHECK(measurer.stats().measured > 0);  // (within one compile, repeated kernels are hits)
    fs::remove_all(cache);
    return p;
  };
  const compiler::CompiledProgram first = compile_fresh("determinism-a");
  const compiler::CompiledProgram second = compile_fresh("determinism-b");
  CHECK(gemm_steps(first.llir) == 2);
  CHECK(runtime::to_text(second.llir, true) == runtime::to_text(first.llir, true));
  REQUIRE(first.groups.size() == second.groups.size());
  for (std::size_t i = 0; i < first.groups.size(); ++i) {
    const compiler::GroupReport& a = first.groups[i].program.report;
    const compiler::GroupReport& c = second.groups[i].program.report;
    CHECK(a.eclasses == c.eclasses);
    CHECK(a.enodes == c.enodes);
    CHECK(a.rejected.size() == c.rejected.size());
  }
}

TEST_CASE("compile: a tiny LLaMA compiles group by group and matches the interpreter",
          "[compile]") {
  GraphBuilder b;
  graph::nn::DecoderConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 16;
  cfg.heads = 2;
  cfg.kv_heads = 1;
  cfg.head_dim = 8;
  cfg.intermediate = 32;
  cfg.vocab = 32;
  cfg.max_context = 8;
  graph::nn::llama_decoder(b, cfg);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("compile-llama");
  compiler::Measurer measurer(*target, cache);
  const graph::DimValues dims{{"seq", 3}, {"pos", 0}};
  compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, options(dims));
  CHECK(p.groups.size() == 3);            // prologue, the two identical layers, head
  CHECK(p.groups[1].members.size() == 2);
  CHECK(max_error(b.graph(), p, *target, dims) < 1e-3);
  fs::remove_all(cache);
}

TEST_CASE("compile: an unsound rule is caught by the numerical check and named", "[compile]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(4), Expr(8)});
  GraphTensor y = b.input("y", {Expr(4), Expr(8)});
  exp(x + y).output("z");
  const fs::path dir = fresh_dir("unsound");
  fs::create_directories(dir);
  const fs::path rules = dir / "unsound.egg";
  std::ofstream(rules) << "(rewrite (Add a va b vb) (Mul a va b vb) :ruleset algebra "
                          ":name \"add-is-mul\")\n";
  auto target = targets::make_target("cpu");
  compiler::Measurer measurer(*target, dir / "cache");
  compiler::CompileOptions o = options({});
  o.extra_rules = {rules};
  o.search.measure_top = 0;  // every candidate checked: the cost model would rank it out
  compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, o);
  const compiler::GroupReport& r = p.groups[0].program.report;
  REQUIRE_FALSE(r.rejected.empty());
  bool named = false;
  for (const compiler::Rejection& rejection : r.rejected) {
    for (const std::string& rule : rejection.rules) named = named || rule == "add-is-mul";
  }
  CHECK(named);
  CHECK(max_error(b.graph(), p, *target, {}) < 1e-5);  // the sound kernel was kept
  fs::remove_all(dir);
}

namespace {

// Compiles `g` on the cpu target with the built-in rules and `rules` (rule-file text) added,
// every candidate checked (these tests judge the checks, not the cost model's ranking).
struct Compiled {
  compiler::CompiledProgram program;
  double error = 0.0;  // largest difference from the interpreter, on fresh random inputs
  const compiler::GroupReport& report(std::size_t group = 0) const {
    return program.groups.at(group).program.report;
  }
};
Compiled compile_with(const graph::Graph& g, const std::string& rules,
                      const graph::DimValues& dims = {}, bool schedules = false) {
  const fs::path dir = fresh_dir("rules");
  fs::create_directories(dir);
  std::ofstream(dir / "extra.egg") << rules;
  auto target = targets::make_target("cpu");
  compiler::Measurer measurer(*target, dir / "cache");
  compiler::CompileOptions o = options(dims);
  o.extra_rules = {dir / "extra.egg"};
  o.schedules = schedules;
  o.search.measure_top = 0;
  Compiled out{compiler::compile(g, *target, measurer, o), 0.0};
  out.error = max_error(g, out.program, *target, dims);
  fs::remove_all(dir);
  return out;
}

// The first rejection whose suspects include `rule` and whose reason says `why`, or nullptr.
const compiler::Rejection* rejection_by(const compiler::GroupReport& r, const std::string& rule,
                                       const std::string& why = "") {
  for (const compiler::Rejection& x : r.rejected) {
    if (std::find(x.rules.begin(), x.rules.end(), rule) != x.rules.end() &&
        kiln::testing::contains(x.why, why)) {
      return &x;
    }
  }
  return nullptr;
}

// Every rejection, a line each (what: why), for a failing check's message.
std::string rejections_of(const compiler::GroupReport& r) {
  std::string out;
  for (const compiler::Rejection& x : r.rejected) out += x.what + ": " + x.why + "\n";
  return out;
}

std::size_t in_place_steps(const runtime::Llir& llir) {
  std::size_t n = 0;
  for (runtime::StepId s = 0; s < llir.num_steps(); ++s) n += llir.step(s).in_place;
  return n;
}

}  // namespace

TEST_CASE("compile: a split reduction's partial states are checked and its combine chosen or not "
          "by measurement", "[compile][schedule]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(4), Expr(1000)});
  sum(x, 1).output("s");
  // Without --schedules the layer does not run: no split candidates.
  CHECK(rejection_by(compile_with(b.graph(), "").report(), "split-reduce-2") == nullptr);
  CHECK(compile_with(b.graph(), "").report().candidates < 7);
  const Compiled c = compile_with(b.graph(), "", {}, /*schedules=*/true);
  // The partial states' e-class holds only Kernels: its value is its first Kernel's, and the
  // combine is checked against the sum's.
  for (const char* rule : {"split-reduce-2", "split-reduce-4", "split-reduce-8"}) {
    INFO(rule);
    const compiler::Rejection* r = rejection_by(c.report(), rule);
    CHECK((r == nullptr ? std::string() : r->what + ": " + r->why) == "");
  }
  CHECK(c.report().candidates >= 7);  // one-op, 3 partials, 3 combines
  CHECK(c.error < 1e-3);
}

TEST_CASE("compile: candidates in e-classes that a rule created are checked too", "[compile]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(4), Expr(8)});
  exp(x).output("z");
  // exp(x) = exp2(x * log2 e) = exp2(1/(1/(x * log2 e))): two new e-classes with no original
  // node, and a wrong Kernel for one of them.
  const Compiled c = compile_with(b.graph(), R"egg(
    (rule ((= e (Exp2 x v)) (= x (Mul p vp q vq)) (= c (view-contiguous (view-shape v))))
          ((union e (Exp2 (Recip (Recip x v) c) c)))
          :ruleset algebra :name "exp2-through-double-recip")
    (rule ((= r (Recip x v)) (= d (dtype-of r)) (= dx (dtype-of x))
           (= body (one-op-body "Sqrt" d 0 v dx)))
          ((union r (Kernel body (LCons x (LNil)))))
          :ruleset kernel_rewrite :name "wrong-recip-as-sqrt")
  )egg");
  const compiler::Rejection* r = rejection_by(c.report(), "wrong-recip-as-sqrt");
  REQUIRE(r != nullptr);
  CHECK(kiln::testing::contains(r->why, "the interpreter says"));
  CHECK(c.error < 1e-5);
}

TEST_CASE("compile: an e-class whose fused kernels all fail their check falls back on its one-op "
          "kernel, not the whole group on the one-op program", "[compile]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(4), Expr(8)});
  GraphTensor y = b.input("y", {Expr(4), Expr(8)});
  graph::recip(x).output("r");
  (graph::exp(y) * y + 2.0).output("z");  // fuses into one kernel
  // A wrong Kernel takes the place of recip's one-op Kernel, which it subsumes, as fusion's
  // inlining subsumes the Kernel it replaces.
  const Compiled c = compile_with(b.graph(), R"egg(
    (rule ((= r (Recip x v)) (one-op-kernel r b ins) (= d (dtype-of r)) (= dx (dtype-of x))
           (= wrong (one-op-body "Sqrt" d 0 v dx)))
          ((union r (Kernel wrong ins)) (subsume (Kernel b ins)))
          :ruleset fusion :name "wrong-recip-subsumes")
  )egg");
  const compiler::GroupReport& report = c.report();
  const compiler::Rejection* r = rejection_by(report, "wrong-recip-subsumes");
  REQUIRE(r != nullptr);
  CHECK(kiln::testing::contains(r->why, "the interpreter says"));
  CHECK(report.fallbacks >= 1);  // one per form of recip's e-class (a view may give two)
  INFO("kept one-op " << report.kept_one_op << ", searched steps " << report.searched_steps);
  // The rules' program: recip's one-op kernel and the fused chain (the one-op program has 4).
  CHECK(report.searched_steps == 2);
  CHECK(c.error < 1e-5);
}

TEST_CASE("compile: an ill-conditioned value is checked within the reference's own rounding "
          "spread", "[compile]") {
  // sin(x * 100000 + pi/2): random inputs lie in [-1/8, 1/8] here, so arguments reach 12500,
  // whose f32 ulp is 1e-3. The interpreter rounds
  // the product and the sum; a fused kernel contracts them into one FMA (where the machine has
  // FMA), one rounding fewer, and its sine moves by up to that ulp: far past the dtype's
  // tolerance (4e-6), within how far the reference's own roundings move it (computed in double).
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(64)});
  graph::sin(x * 100000.0 + 1.5707963267948966).output("y");
  const Compiled c = compile_with(b.graph(), "");
  const compiler::GroupReport& report = c.report();
  INFO(rejections_of(report));
  CHECK(report.rejected.empty());
  CHECK(report.searched_steps == 1);  // the whole chain in one kernel
}

TEST_CASE("compile: a value no original node holds is checked within its own rounding spread",
          "[compile]") {
  // softmax(sin(x * 100000 + pi/2)): the rules decompose the softmax, and its exp(s - max(s))
  // and sum live in e-classes no original node holds; their values are interpreted from the
  // sine's. The sine moves by up to an f32 ulp of its argument between a kernel that contracts
  // the multiply-add and the interpreter (see the test above); every value computed from it
  // inherits that spread, and a kernel fusing the chain into the exp's e-class lands within it.
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(8), Expr(16)});
  softmax(graph::sin(x * 100000.0 + 1.5707963267948966), 1).output("y");
  const Compiled c = compile_with(b.graph(), "");
  const compiler::GroupReport& report = c.report();
  INFO(rejections_of(report));
  CHECK(report.rejected.empty());
  CHECK(c.error < 1e-3);
}

TEST_CASE("compile: a kernel of the wrong size, one reading out of bounds and a Gemm with an "
          "unbound dim are rejected with their rule", "[compile]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(4), Expr(8)});
  GraphTensor w = b.input("w", {Expr(8), Expr(8)});
  (matmul(x, w) + x).output("z");
  const Compiled c = compile_with(b.graph(), R"egg(
    (rule ((= e (Add a va b vb)) (= d (dtype-of e)) (= da (dtype-of a)) (= db (dtype-of b))
           (= big (view-contiguous "[64, 8]"))
           (= body (one-op-body "Add" d big da big db)))
          ((union e (Kernel body (LCons a (LCons b (LNil))))))
          :ruleset kernel_rewrite :name "wrong-add-extent")
    (rule ((= e (Add a va b vb)) (= d (dtype-of e)) (= da (dtype-of a)) (= db (dtype-of b))
           (= past (view "View(shape=[4, 8], strides=[8, 1], offset=8)"))
           (= body (one-op-body "Add" d past da vb db)))
          ((union e (Kernel body (LCons a (LCons b (LNil))))))
          :ruleset kernel_rewrite :name "wrong-add-reads-past-the-end")
    (rule ((= e (SumReduce x v axis)) (= d (dtype-of e)))
          ((union e (Gemm d (Operand x 0 (dim "nope") (expr 0) (expr 0))
                            (Operand x 0 (dim "nope") (expr 0) (expr 0))
                            (expr 1) (dim "nope") (dim "nope") (dim "nope"))))
          :ruleset library :name "wrong-gemm-unbound-dim")
  )egg");
  CHECK(rejection_by(c.report(), "wrong-add-extent", "writes 512 elements, its e-class holds 32"));
  CHECK(rejection_by(c.report(), "wrong-add-reads-past-the-end", "not proven in bounds"));
  const compiler::Rejection* unbound = rejection_by(c.report(), "wrong-gemm-unbound-dim");
  REQUIRE(unbound != nullptr);
  CHECK(kiln::testing::contains(unbound->why, "nope"));
  CHECK(c.error < 1e-4);
}

TEST_CASE("compile: the KV cache is updated in place, by the rules' and extraction's choice",
          "[compile]") {
  for (bool old_read_later : {false, true}) {
    GraphBuilder b;
    GraphTensor cache = b.input("cache", {Expr(8), Expr(4)});
    b.graph().node(cache.node()).persistent = true;
    GraphTensor ids = b.input("ids", {Expr(2)}, DType::I32);
    GraphTensor values = b.input("values", {Expr(2), Expr(4)});
    GraphTensor updated = graph::scatter(cache, ids, values);
    updated.output("cache");
    (updated * 2.0).output("y");
    if (old_read_later) (cache + 1.0).output("old");  // consumed_buffer_cleanup must refuse
    const Compiled c = compile_with(b.graph(), "");
    INFO("old_read_later=" << old_read_later << "\n" << runtime::to_text(c.program.llir));
    CHECK(in_place_steps(c.program.llir) == (old_read_later ? 0 : 1));
    CHECK(c.error < 1e-6);
  }
}

TEST_CASE("compile: an in-place form the runtime refuses is dropped and extraction redone",
          "[compile]") {
  // A user rule offers writing into state whose next value is something else (the cleanup
  // only looks for readers): the chosen program fails to plan, the form is banned, and the
  // program is extracted again with the copy.
  GraphBuilder b;
  GraphTensor cache = b.input("cache", {Expr(8), Expr(4)});
  b.graph().node(cache.node()).persistent = true;
  GraphTensor ids = b.input("ids", {Expr(2)}, DType::I32);
  GraphTensor values = b.input("values", {Expr(2), Expr(4)});
  graph::scatter(cache, ids, values).output("y");
  const Compiled c = compile_with(b.graph(), R"egg(
    (rule ((= e (Scatter d vd i vi x vx)) (Persistent d) (= t (dtype-of e)) (= td (dtype-of d))
           (= ti (dtype-of i)) (= tx (dtype-of x))
           (= body (one-op-body "Scatter" t vd td vi ti vx tx)))
          ((union e (Kernel body (LCons (ConsumedBuffer d) (LCons i (LCons x (LNil)))))))
          :ruleset kernel_rewrite :name "unsafe-scatter-into-state")
  )egg");
  CHECK(c.report().extractions >= 2);
  const compiler::Rejection* r = rejection_by(c.report(), "unsafe-scatter-into-state");
  REQUIRE(r != nullptr);
  CHECK(kiln::testing::contains(r->why, "in place"));
  CHECK(in_place_steps(c.program.llir) == 0);
  CHECK(c.error < 1e-6);
}

TEST_CASE("compile: a saturation stopped by a limit says so, and the checked one-op program "
          "stands in", "[compile]") {
  GraphBuilder b;
  examples::find_example("mlp")->build(b);
  auto target = targets::make_target("cpu");
  const fs::path cache = fresh_dir("compile-limit");
  compiler::Measurer measurer(*target, cache);
  const graph::DimValues dims{{"batch", 4}};
  compiler::CompileOptions o = options(dims);
  o.search.limits.max_rows = 40;  // fewer rows than the encoded graph: nothing executable grows
  compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, o);
  const compiler::GroupReport& r = p.groups.at(0).program.report;
  CHECK(r.stop_reason == "node limit");
  CHECK(r.kept_one_op);
  CHECK(max_error(b.graph(), p, *target, dims) < 1e-4);
  fs::remove_all(cache);
}

TEST_CASE("compile: rule files are found by dropping them into the rules folder", "[compile]") {
  const fs::path dir = fresh_dir("rule-files");
  fs::create_directories(dir / "fusion");
  for (const char* name : {"hlir.egg", "pipeline.egg", "zeta.egg", "alpha.egg", "fusion/inline.egg",
                           "fusion/pipeline.egg", "notes.txt"}) {
    std::ofstream(dir / name) << ";; empty\n";
  }
  compiler::CompileOptions o;
  o.rules_dir = dir;
  auto target = targets::make_target("reference");  // no rule files of its own
  const std::vector<fs::path> files = compiler::rule_files(o, *target);
  std::vector<std::string> names;
  for (const fs::path& f : files) names.push_back(fs::relative(f, dir).string());
  // hlir.egg first, the rest in path order, never a schedule (any pipeline.egg) or other files.
  CHECK(names == std::vector<std::string>{"hlir.egg", "alpha.egg", "fusion/inline.egg", "zeta.egg"});
  fs::remove_all(dir);
}

TEST_CASE("compile: a Linear layer's bias and ReLU become one gemm call with the epilogue "
          "(the cuda target's rules, run on the reference target)", "[compile]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr(6), Expr(8)});
  GraphTensor w = b.input("w", {Expr(8), Expr(16)});
  GraphTensor bias = b.input("b", {Expr(16)});
  relu(matmul(x, w) + bias).output("y");
  const fs::path dir = fresh_dir("epilogue");
  auto target = targets::make_target("reference");
  compiler::Measurer measurer(*target, dir / "cache");
  compiler::CompileOptions o = options({});
  const fs::path cuda_rules = fs::path(KILN_SOURCE_DIR) / "targets" / "cuda" / "rules";
  o.extra_rules = {cuda_rules / "gemm.egg",
                   fs::path(KILN_SOURCE_DIR) / "targets" / "rules" / "gemm_epilogue.egg"};
  const compiler::CompiledProgram p = compiler::compile(b.graph(), *target, measurer, o);
  // One call computes it all (a Gemm and a kernel for the rest take a second step).
  REQUIRE(p.llir.num_steps() == 1);
  const runtime::LibraryCall* call = p.llir.step(0).call();
  REQUIRE(call != nullptr);
  CHECK(call->params.at("bias") == Expr(1));
  CHECK(call->params.at("activation") == Expr(1));
  CHECK(p.llir.step(0).inputs.size() == 3);  // x, w and the bias
  CHECK(max_error(b.graph(), p, *target, {}) < 1e-5);
  fs::remove_all(dir);
}
