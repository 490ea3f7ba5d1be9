// The executor: graphs lowered one op per kernel and run on the reference and cpu targets agree
// with the HLIR interpreter; persistent state survives between runs; inputs are checked; the
// examples run end to end. Every plan used is checked for overlapping live buffers.
//
// The cpu target's kernels are cached in the build tree (KILN_RUNTIME_TEST_CACHE), so only the
// first run of the suite compiles; each test prepares all its kernels in one batch first.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "examples/graphs.hpp"
#include "graph/interpret.hpp"
#include "graph/compare.hpp"
#include "graph/nn.hpp"
#include "graph/tensor.hpp"
#include "runtime/buffer_plan.hpp"
#include "runtime/executor.hpp"
#include "runtime/lower_one_op.hpp"
#include "targets/cpu/target.hpp"
#include "targets/registry.hpp"
#include "tests/unit/test_util.hpp"

namespace kiln::testing {
// In test_buffer_plan.cpp.
void check_buffer_plan(const runtime::Llir& llir, const runtime::BufferPlan& plan);
}  // namespace kiln::testing

using namespace kiln;
using graph::DimValues;
using graph::DType;
using graph::Expr;
using graph::GraphBuilder;
using graph::GraphTensor;
using graph::Tensor;
using kiln::testing::contains;
using kiln::testing::user_error_of;
using TensorMap = std::map<std::string, Tensor>;

namespace {

runtime::Target& reference_target() {
  static std::unique_ptr<runtime::Target> target = targets::make_target("reference");
  return *target;
}

runtime::Target& cpu_target() {
  static std::unique_ptr<runtime::Target> target =
      targets::make_cpu_target(std::filesystem::path(KILN_RUNTIME_TEST_CACHE));
  return *target;
}

// Compiles every kernel of `programs` in one batch, so that executors then load them cached.
void warm_cpu(const std::vector<const runtime::Llir*>& programs) {
  std::vector<graph::Body> bodies;
  for (const runtime::Llir* llir : programs) {
    for (runtime::StepId s = 0; s < llir->num_steps(); ++s) {
      if (const graph::Body* body = llir->step(s).body()) bodies.push_back(*body);
    }
  }
  cpu_target().prepare(bodies);
}

// Every output of `g` agrees with the interpreter's by graph::mismatch, with the reduction
// length along the output's path at `dims`.
void check_same(const TensorMap& expected, const TensorMap& actual, const graph::Graph& g,
                const DimValues& dims) {
  REQUIRE(expected.size() == actual.size());
  for (const auto& [name, want] : expected) {
    REQUIRE(actual.count(name));
    const Tensor& got = actual.at(name);
    INFO("output " << name);
    REQUIRE(got.dtype == want.dtype);
    REQUIRE(got.shape == want.shape);
    std::int64_t reduced = 1;
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op == graph::Op::Output && n.name == name) {
        reduced = graph::reduction_length(g, id, dims);
      }
    }
    CHECK(graph::mismatch(got.data, want.data, want.dtype, reduced) == "");
  }
}

// Random values for every Input of `g` not in `given`: floats in [-range, range], integers
// (indices, tokens) in [0, 4), bools 0 or 1; zeros for persistent state, as the executor starts.
TensorMap random_inputs(const graph::Graph& g, const DimValues& dims, std::mt19937& rng,
                        TensorMap given = {}, double range = 2.0) {
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != graph::Op::Input || given.count(n.name)) continue;
    Tensor t{n.dtype, {}, {}};
    for (const Expr& d : n.shape) t.shape.push_back(graph::evaluate(d, dims));
    std::uniform_real_distribution<double> real(-range, range);
    std::uniform_int_distribution<int> index(0, 3);
    for (std::int64_t i = 0; i < graph::numel(t.shape); ++i) {
      const double v = n.persistent               ? 0.0
                       : graph::is_float(n.dtype)  ? real(rng)
                       : n.dtype == DType::Bool ? index(rng) % 2
                                                : index(rng);
      t.data.push_back(graph::round_to_dtype(v, n.dtype));
    }
    given[n.name] = std::move(t);
  }
  return given;
}

// The inputs an executor takes: all but the persistent ones (it holds those).
TensorMap without_state(const graph::Graph& g, TensorMap inputs) {
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == graph::Op::Input && g.node(id).persistent) inputs.erase(g.node(id).name);
  }
  return inputs;
}

struct Case {
  std::string name;
  std::function<void(GraphBuilder&)> build;
  DimValues dims;
  double range = 2.0;  // of random float inputs (small for models: weights as trained ones)
};

// Runs every case on `target` and compares with the interpreter.
void check_cases(const std::vector<Case>& cases, runtime::Target& target) {
  std::vector<std::unique_ptr<GraphBuilder>> builders;
  std::vector<runtime::Llir> programs;
  for (const Case& c : cases) {
    builders.push_back(std::make_unique<GraphBuilder>());
    c.build(*builders.back());
    programs.push_back(runtime::lower_one_op(builders.back()->graph()));
  }
  if (&target == &cpu_target()) {
    std::vector<const runtime::Llir*> all;
    for (const runtime::Llir& p : programs) all.push_back(&p);
    warm_cpu(all);
  }
  std::mt19937 rng(42);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << cases[i].name << " on " << target.name());
    const graph::Graph& g = builders[i]->graph();
    const TensorMap inputs = random_inputs(g, cases[i].dims, rng, {}, cases[i].range);
    runtime::Executor executor(programs[i], target);
    kiln::testing::check_buffer_plan(programs[i], executor.plan(cases[i].dims));
    check_same(graph::interpret(g, cases[i].dims, inputs),
               executor.run(cases[i].dims, without_state(g, inputs)), g, cases[i].dims);
  }
}

std::vector<Case> op_cases() {
  const Expr seq = Expr::dim("seq");
  const Expr n = Expr::dim("n");
  return {
      {"elementwise",
       [seq](GraphBuilder& gb) {
         GraphTensor x = gb.input("x", {seq, 3}, DType::F32);
         GraphTensor y = gb.input("y", {3}, DType::F32);
         (x * y + 1.5).output("affine");
         graph::exp(graph::transpose(x, 0, 1)).output("exp_t");
         graph::log(x * x + 1.0).output("log");
         graph::sqrt(x * x).output("sqrt");
         (1.0 / (x + 10.0)).output("recip");
         graph::sin(x).output("sin");
         graph::relu(x).output("relu");
         graph::tanh(x).output("tanh");
         graph::gelu(x).output("gelu");
         graph::silu(x).output("silu");
         graph::where(graph::less(x, y), x, y - 1.0).output("where");
         graph::equal(x, x).output("equal");
         graph::greater_equal(x, y).output("ge");
         graph::pad(x, 1, 1, 2).output("pad0");
         graph::pad(x, 0, 1, 0, 1.5).output("pad_value");
       },
       {{"seq", 4}}},
      {"reductions f64",
       [n](GraphBuilder& gb) {
         GraphTensor a = gb.input("a", {n, 5}, DType::F64);
         GraphTensor b = gb.input("b", {5, 4}, DType::F64);
         graph::sum(a, 1).output("sum1");
         graph::sum(a, 0).output("sum0");
         graph::max(a, 0).output("max0");
         graph::min(a, 1).output("min1");
         graph::mean(a, 0).output("mean0");
         graph::variance(a, 1).output("var1");
         graph::softmax(a, 1).output("softmax1");
         graph::softmax(graph::transpose(a, 0, 1), 1).output("softmax_t");
         graph::log_softmax(a, 1).output("log_softmax");
         graph::matmul(a, b).output("matmul");
         graph::layer_norm(a).output("layer_norm");
         graph::rms_norm(a).output("rms_norm");
       },
       {{"n", 3}}},
      {"reductions f32",
       [seq](GraphBuilder& gb) {
         GraphTensor a = gb.input("a", {2, seq, 8}, DType::F32);
         GraphTensor b = gb.input("b", {8, 6}, DType::F32);
         graph::softmax(a, 2).output("softmax");
         graph::matmul(a, b).output("matmul");
         graph::matmul(a, graph::transpose(a, 1, 2)).output("bmm");
         graph::layer_norm(a).output("layer_norm");
         graph::rms_norm(a).output("rms_norm");
         graph::max(a, 1).output("max");
       },
       {{"seq", 5}}},
      {"indexing and movement",
       [seq](GraphBuilder& gb) {
         GraphTensor table = gb.input("table", {6, 4}, DType::F32);
         GraphTensor ids = gb.input("ids", {3}, DType::I32);
         GraphTensor values = gb.input("values", {3, 4}, DType::F32);
         GraphTensor x = gb.input("x", {seq, 8}, DType::F32);
         graph::gather(table, ids).output("gathered");
         graph::scatter(table, ids, values).output("scattered");
         graph::scatter(table * 2.0, ids, values).output("scattered_temp");  // in place
         graph::concat({graph::slice(table, 0, 0, 2), graph::slice(table, 0, 4, 6)}, 0)
             .output("concat");
         graph::reshape(graph::transpose(table, 0, 1), {Expr(24)}).output("reshape");
         graph::rotary(x, gb.iota(seq)).output("rotary");
         gb.causal_mask(seq, seq).output("mask");
         graph::softmax(graph::matmul(x, graph::transpose(x, 0, 1)) + gb.causal_mask(seq, seq),
                        1)
             .output("masked_softmax");
       },
       {{"seq", 3}}},
      {"integers and casts",
       [](GraphBuilder& gb) {
         GraphTensor i = gb.input("i", {5}, DType::I32);
         GraphTensor f = gb.input("f", {5}, DType::F32);
         (i * i + 3.0).output("i_arith");
         graph::sum(i, 0).output("i_sum");
         graph::cast(f, DType::F16).output("f16");
         graph::cast(f, DType::BF16).output("bf16");
         graph::cast(f * 10.0, DType::I64).output("i64");
         graph::cast(i, DType::U8).output("u8");
         graph::cast(graph::cast(f, DType::F16) * 3.0, DType::F32).output("f16_math");
         graph::less(i, graph::cast(f, DType::I32)).output("less");
       },
       {}},
  };
}

}  // namespace

TEST_CASE("executor: one-op programs match the interpreter on the reference target",
          "[runtime][executor]") {
  check_cases(op_cases(), reference_target());
}

TEST_CASE("executor: one-op programs match the interpreter on the cpu target",
          "[runtime][executor][cpu]") {
  check_cases(op_cases(), cpu_target());
}

namespace {

// A scatter into a persistent cache, output under the cache's name, and a reader of it.
void build_cache_graph(GraphBuilder& gb) {
  GraphTensor cache = gb.input("cache", {8, 4}, DType::F32);
  gb.graph().node(cache.node()).persistent = true;
  GraphTensor ids = gb.input("ids", {Expr::dim("seq")}, DType::I32);
  GraphTensor values = gb.input("values", {Expr::dim("seq"), 4}, DType::F32);
  GraphTensor updated = graph::scatter(cache, ids, values);
  updated.output("cache");
  graph::sum(updated, 1).output("rowsum");
}

void check_state(runtime::Target& target) {
  GraphBuilder gb;
  build_cache_graph(gb);
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  runtime::Executor executor(llir, target);
  const Tensor v1{DType::F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}};
  const Tensor v2{DType::F32, {1, 4}, {-1, -2, -3, -4}};
  const TensorMap first = executor.run({{"seq", 2}}, {{"ids", {DType::I32, {2}, {1, 5}}},
                                                      {"values", v1}});
  const TensorMap second = executor.run({{"seq", 1}}, {{"ids", {DType::I32, {1}, {5}}},
                                                       {"values", v2}});
  // The interpreter does not carry state: feed the first run's cache to the second.
  const Tensor zeros{DType::F32, {8, 4}, std::vector<double>(32, 0.0)};
  const TensorMap want1 = graph::interpret(
      gb.graph(), {{"seq", 2}},
      {{"cache", zeros}, {"ids", {DType::I32, {2}, {1, 5}}}, {"values", v1}});
  const TensorMap want2 = graph::interpret(
      gb.graph(), {{"seq", 1}},
      {{"cache", want1.at("cache")}, {"ids", {DType::I32, {1}, {5}}}, {"values", v2}});
  check_same(want1, first, gb.graph(), {{"seq", 2}});
  check_same(want2, second, gb.graph(), {{"seq", 1}});
  // Row 1 was written by the first run only, row 5 overwritten by the second.
  CHECK(second.at("cache").data[4] == 1.0);
  CHECK(second.at("cache").data[20] == -1.0);
  check_same({{"cache", want2.at("cache")}}, {{"cache", executor.state("cache")}}, gb.graph(),
             {{"seq", 1}});

  // set_state replaces the held value.
  executor.set_state("cache", zeros);
  const TensorMap third = executor.run({{"seq", 1}}, {{"ids", {DType::I32, {1}, {0}}},
                                                      {"values", v2}});
  CHECK(third.at("rowsum").data == std::vector<double>{-10, 0, 0, 0, 0, 0, 0, 0});
}

}  // namespace

TEST_CASE("executor: persistent state is kept between runs", "[runtime][executor]") {
  check_state(reference_target());
  check_state(cpu_target());
}

namespace {

// Refuses every kernel, runs nothing.
class RejectingTarget final : public runtime::Target {
 public:
  std::string name() const override { return "rejecting"; }
  const runtime::Capabilities& capabilities() const override { return capabilities_; }
  bool supports(const graph::Body&) const override { return false; }
  bool supports(const runtime::LibraryCall&) const override { return false; }
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override {
    return std::vector<runtime::Prepared>(bodies.size(), {nullptr, "no kernels here"});
  }
  runtime::Device& device() override { return reference_target().device(); }

 private:
  runtime::Capabilities capabilities_;
};

}  // namespace

TEST_CASE("executor: bad inputs, bad dims and rejected kernels are user errors",
          "[runtime][executor]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr::dim("seq"), 2}, DType::F32);
  GraphTensor w = gb.input("w", {2}, DType::F32);
  (x * w).output("y");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  runtime::Executor executor(llir, reference_target());
  const Tensor x3{DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6}};
  const Tensor w2{DType::F32, {2}, {10, 100}};
  CHECK(contains(user_error_of([&] { executor.run({{"seq", 3}}, {{"x", x3}}); }),
                 "missing input 'w'"));
  CHECK(contains(user_error_of([&] { executor.run({{"seq", 2}}, {{"x", x3}, {"w", w2}}); }),
                 "shape [3, 2], expected [2, 2]"));
  CHECK(contains(user_error_of([&] {
                   executor.run({{"seq", 3}}, {{"x", x3}, {"w", {DType::F64, {2}, {1, 2}}}});
                 }),
                 "dtype f64"));
  CHECK(contains(user_error_of([&] {
                   executor.run({{"seq", 3}}, {{"x", x3}, {"w", w2}, {"z", w2}});
                 }),
                 "no input called 'z'"));
  CHECK(contains(user_error_of([&] { executor.run({}, {{"x", x3}, {"w", w2}}); }), "seq"));

  // A weight bound once serves every later run; a profile names every step.
  executor.bind("w", w2);
  runtime::RunProfile profile;
  const TensorMap out = executor.run({{"seq", 3}}, {{"x", x3}}, &profile);
  CHECK(out.at("y").data == std::vector<double>{10, 200, 30, 400, 50, 600});
  REQUIRE(profile.steps.size() == llir.num_steps());
  CHECK(profile.steps[0].label == "%2 Mul");

  RejectingTarget rejecting;
  const std::string error = user_error_of([&] { runtime::Executor(llir, rejecting); });
  CHECK(contains(error, "%2 Mul"));
  CHECK(contains(error, "rejecting"));
  CHECK(contains(error, "no kernels here"));
}

namespace {

graph::nn::DecoderConfig tiny_llama() {
  graph::nn::DecoderConfig c;
  c.name = "tiny-llama";
  c.layers = 2;
  c.hidden = 16;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  c.intermediate = 24;
  c.vocab = 32;
  c.max_context = 8;
  return c;
}

}  // namespace

TEST_CASE("executor: the small examples run on the cpu target as the interpreter does",
          "[runtime][executor][cpu][examples]") {
  std::vector<Case> cases;
  for (const char* name : {"mlp", "attention"}) {
    const examples::Example* example = examples::find_example(name);
    REQUIRE(example);
    cases.push_back({name, [example](GraphBuilder& gb) { example->build(gb); },
                     {{"batch", 2}, {"seq", 3}},
                     0.1});
  }
  check_cases(cases, cpu_target());
}

TEST_CASE("executor: a tiny llama decodes with its KV cache on the cpu target",
          "[runtime][executor][cpu][examples]") {
  GraphBuilder gb;
  graph::nn::llama_decoder(gb, tiny_llama());
  const graph::Graph& g = gb.graph();
  const runtime::Llir llir = runtime::lower_one_op(g);
  warm_cpu({&llir});
  runtime::Executor executor(llir, cpu_target());
  std::mt19937 rng(3);

  // Prefill three tokens, then decode one: the interpreter gets the caches fed back.
  const DimValues prefill{{"seq", 3}, {"pos", 0}};
  TensorMap inputs = random_inputs(g, prefill, rng, {}, 0.5);
  for (const auto& [name, tensor] : inputs) {
    if (name != "tokens" && llir.value(*llir.find_input(name)).kind == runtime::ValueKind::Input) {
      executor.bind(name, tensor);  // weights stay on the device
    }
  }
  kiln::testing::check_buffer_plan(llir, executor.plan(prefill));
  const TensorMap want1 = graph::interpret(g, prefill, inputs);
  const TensorMap got1 = executor.run(prefill, {{"tokens", inputs.at("tokens")}});
  check_same(want1, got1, g, prefill);

  const DimValues decode{{"seq", 1}, {"pos", 3}};
  inputs["tokens"] = Tensor{DType::I32, {1}, {2}};
  for (const auto& [name, tensor] : want1) {
    if (name != "logits") inputs[name] = tensor;  // the updated caches
  }
  kiln::testing::check_buffer_plan(llir, executor.plan(decode));
  const TensorMap want2 = graph::interpret(g, decode, inputs);
  check_same(want2, executor.run(decode, {{"tokens", inputs.at("tokens")}}), g, decode);
}

namespace {

// The reference target with a device that counts recordings and replays (its recordings run
// the work again, as a device without capture does), and can refuse to record.
class CountingDevice final : public runtime::Device {
 public:
  explicit CountingDevice(runtime::Device& inner) : inner_(inner) {}
  void* allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void release(void* b) override { inner_.release(b); }
  void upload(void* d, const void* h, std::size_t n) override { inner_.upload(d, h, n); }
  void download(void* h, const void* d, std::size_t n) override { inner_.download(h, d, n); }
  void copy(void* to, const void* from, std::size_t n) override { inner_.copy(to, from, n); }
  void launch(const runtime::Kernel& k, const std::vector<void*>& b,
              const std::vector<long long>& dims) override {
    ++launches;
    inner_.launch(k, b, dims);
  }
  void call(const runtime::LibraryCall& c, const std::vector<void*>& b,
            const graph::DimValues& dims) override {
    inner_.call(c, b, dims);
  }
  std::unique_ptr<runtime::Recording> record(
      std::function<void()> work, std::unique_ptr<runtime::Recording> previous) override {
    ++records;
    updates += previous != nullptr;
    struct Counted final : runtime::Recording {
      std::function<void()> work;
      int* replays;
      void replay() override {
        ++*replays;
        work();
      }
    };
    auto r = std::make_unique<Counted>();
    r->work = std::move(work);
    r->replays = &replays;
    return r;
  }
  int launches = 0, records = 0, updates = 0, replays = 0;

 private:
  runtime::Device& inner_;
};

class CountingTarget final : public runtime::Target {
 public:
  CountingTarget() : device_(reference_target().device()) {}
  std::string name() const override { return "counting"; }
  const runtime::Capabilities& capabilities() const override {
    return reference_target().capabilities();
  }
  bool supports(const graph::Body& b) const override { return reference_target().supports(b); }
  bool supports(const runtime::LibraryCall& c) const override {
    return reference_target().supports(c);
  }
  std::vector<runtime::Prepared> prepare(const std::vector<graph::Body>& bodies) override {
    return reference_target().prepare(bodies);
  }
  runtime::Device& device() override { return device_; }
  CountingDevice device_;
};

}  // namespace

TEST_CASE("executor: replay records the steps once per dims and buffers, and agrees with "
          "step-by-step runs", "[runtime][executor]") {
  // A small layer (the reference target interprets every step).
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr::dim("batch"), 6}, DType::F32);
  GraphTensor w = gb.input("w", {6, 4}, DType::F32);
  relu(matmul(x, w) + 1.0).output("y");
  const runtime::Llir llir = runtime::lower_one_op(gb.graph());
  CountingTarget target;
  runtime::Executor eager(llir, reference_target());
  runtime::Executor replayed(llir, target);
  replayed.set_replay(true);
  std::mt19937 rng(9);
  const CountingDevice& dev = target.device_;
  auto run_both = [&](std::int64_t batch) {
    const DimValues dims{{"batch", batch}};
    const TensorMap inputs = random_inputs(gb.graph(), dims, rng, {}, 0.5);
    const TensorMap want = eager.run(dims, inputs);
    const TensorMap got = replayed.run(dims, inputs);
    REQUIRE(want.size() == got.size());
    for (const auto& [name, t] : want) CHECK(got.at(name).data == t.data);
  };
  run_both(3);  // step by step: a kernel's first launch at these dims may tune it
  CHECK(dev.records == 0);
  const int steps = dev.launches;
  CHECK(steps == static_cast<int>(llir.num_steps()));
  run_both(3);  // recorded, then replayed
  CHECK(dev.records == 1);
  CHECK(dev.replays == 1);
  run_both(3);  // replayed only
  CHECK(dev.records == 1);
  CHECK(dev.replays == 2);
  CHECK(dev.launches == 3 * steps);
  run_both(5);  // new dims: step by step first
  CHECK(dev.records == 1);
  run_both(5);  // recorded again, updating the last recording
  CHECK(dev.records == 2);
  CHECK(dev.updates == 1);
  CHECK(replayed.recordings() == 2);
  run_both(3);  // back to the first dims: recorded again (one recording is kept)
  CHECK(dev.records == 3);
  // A profiled run times each step, so it runs them one by one.
  runtime::RunProfile profile;
  replayed.run({{"batch", 3}}, random_inputs(gb.graph(), {{"batch", 3}}, rng, {}, 0.5), &profile);
  CHECK(profile.steps.size() == llir.num_steps());
  CHECK(dev.records == 3);
}
