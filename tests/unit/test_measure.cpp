// The measurement harness: candidates run on the cpu and reference targets agree with the Body
// interpreter and the gemm reference; check() finds a wrong kernel; times persist on disk so a
// second Measurer measures nothing; keys follow what a time depends on; rejected candidates are
// reported by prepare().
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/measure.hpp"
#include "graph/body.hpp"
#include "graph/interpret.hpp"
#include "targets/cpu/target.hpp"
#include "targets/gemm_reference.hpp"
#include "targets/registry.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using compiler::Candidate;
using compiler::Measurer;
using graph::Body;
using graph::BodyBuilder;
using graph::DimValues;
using graph::DType;
using graph::Expr;
using graph::ScalarId;
using graph::ScalarOp;
using kiln::testing::contains;
using kiln::testing::user_error_of;

namespace {

// A fresh, empty measurement cache for one test, removed at its end.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("kiln-test-measure-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::filesystem::path path;
};

// The cpu target, its compiled kernels shared by every test (and every run of the suite).
runtime::Target& cpu_target() {
  static std::unique_ptr<runtime::Target> target = targets::make_cpu_target(
      std::filesystem::temp_directory_path() / "kiln-test-measure-kernels");
  return *target;
}

runtime::Target& reference_target() {
  static std::unique_ptr<runtime::Target> target = targets::make_target("reference");
  return *target;
}

// out[o0] = exp2(sum_r x[o0, r] * y[r]) over n rows of 4.
Body dot_body() {
  BodyBuilder b({DType::F32, DType::F32});
  Expr o = b.output_loop(Expr::dim("n"));
  std::string r = b.reduce_var();
  ScalarId x = b.load(0, o * 4 + Expr::dim(r));
  ScalarId y = b.load(1, Expr::dim(r));
  ScalarId sum = b.reduce(b.sum_monoid(DType::F32), r, Expr(4),
                          {b.binary(ScalarOp::Mul, x, y)}, DType::F32);
  return b.finish(b.unary(ScalarOp::Exp2, sum), Expr::dim("n"), o);
}

// out[o0, o1] = table[ids[o0], o1]: a Gather from a 5 x 3 table.
Body gather_body() {
  BodyBuilder b({DType::F32, DType::I32});
  Expr o0 = b.output_loop(Expr::dim("n"));
  Expr o1 = b.output_loop(Expr(3));
  ScalarId row = b.load(1, o0);
  ScalarId v = b.load_row(0, o1, row, Expr(3), Expr(5));
  return b.finish(v, Expr::dim("n") * 3, o0 * 3 + o1);
}

// out = dest (3 x 2) with rows ids[o0] replaced by values[o0, :]: a Scatter of 2 rows.
Body scatter_body() {
  BodyBuilder b({DType::F32, DType::I32, DType::F32});
  Expr o0 = b.output_loop(Expr(2), false);
  Expr o1 = b.output_loop(Expr(2));
  ScalarId row = b.load(1, o0);
  return b.finish_rows(b.load(2, o0 * 2 + o1), Expr(6), o1, row, Expr(2), Expr(3), 0);
}

runtime::LibraryCall gemm_call(DType dtype) {
  // C (m x 3) = A (m x 4) x B^T (B is 3 x 4), batch 1, m symbolic.
  runtime::LibraryCall call;
  call.op = "gemm";
  call.dtype = dtype;
  const Expr m = Expr::dim("m");
  call.params = {{"m", m},           {"n", Expr(3)},        {"k", Expr(4)},
                 {"batch", Expr(1)}, {"trans_a", Expr(0)},  {"trans_b", Expr(1)},
                 {"lda", Expr(4)},   {"ldb", Expr(4)},      {"ldc", Expr(3)},
                 {"stride_a", m * 4}, {"stride_b", Expr(12)}, {"stride_c", m * 3}};
  return call;
}

std::vector<double> random_values(std::mt19937& rng, std::int64_t n, DType dtype, int rows = 4) {
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, rows - 1);
  std::vector<double> out;
  for (std::int64_t i = 0; i < n; ++i) {
    out.push_back(graph::is_float(dtype) ? graph::round_to_dtype(real(rng), dtype)
                                         : integer(rng));
  }
  return out;
}

std::vector<double> interpret(const Body& body, const std::vector<std::vector<double>>& inputs,
                              const DimValues& dims) {
  std::vector<const std::vector<double>*> pointers;
  for (const auto& in : inputs) pointers.push_back(&in);
  std::vector<double> out(static_cast<std::size_t>(graph::evaluate(body.output_size(), dims)));
  if (body.output_aliases()) out = inputs[*body.output_aliases()];
  graph::interpret_body(body, pointers, dims, out);
  return out;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(1e-6));
  }
}

// A device that runs the reference device's kernels, then spoils element 0 of f32 outputs.
class SpoilingDevice final : public runtime::Device {
 public:
  explicit SpoilingDevice(runtime::Device& inner) : inner_(inner) {}
  void* allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void release(void* buffer) override { inner_.release(buffer); }
  void upload(void* d, const void* h, std::size_t n) override { inner_.upload(d, h, n); }
  void download(void* h, const void* d, std::size_t n) override { inner_.download(h, d, n); }
  void copy(void* to, const void* from, std::size_t n) override { inner_.copy(to, from, n); }
  void launch(const runtime::Kernel& kernel, const std::vector<void*>& buffers,
              const std::vector<long long>& dims) override {
    inner_.launch(kernel, buffers, dims);
    if (kernel.body().dtype() == DType::F32) *static_cast<float*>(buffers.back()) += 1.0f;
  }
  void call(const runtime::LibraryCall& call, const std::vector<void*>& buffers,
            const DimValues& dims) override {
    inner_.call(call, buffers, dims);
  }

 private:
  runtime::Device& inner_;
};

// A target that rejects Bodies with more than one input and whose kernels are wrong.
class FakeTarget final : public runtime::Target {
 public:
  FakeTarget() : inner_(targets::make_target("reference")), device_(inner_->device()) {}
  std::string name() const override { return "fake"; }
  const runtime::Capabilities& capabilities() const override { return inner_->capabilities(); }
  bool supports(const Body&) const override { return true; }
  bool supports(const runtime::LibraryCall& call) const override { return call.op == "gemm"; }
  std::vector<runtime::Prepared> prepare(const std::vector<Body>& bodies) override {
    ++batches;
    std::vector<runtime::Prepared> out;
    for (const Body& body : bodies) {
      if (body.inputs().size() > 1) {
        out.push_back({nullptr, "fake: too many inputs"});
      } else {
        out.push_back(inner_->prepare({body}).front());
      }
    }
    return out;
  }
  runtime::Device& device() override { return device_; }
  int batches = 0;

 private:
  std::unique_ptr<runtime::Target> inner_;
  SpoilingDevice device_;
};

// out[o0] = x[o0] * x[o0]: one input.
Body square_body() {
  BodyBuilder b({DType::F32});
  Expr o = b.output_loop(Expr::dim("n"));
  ScalarId x = b.load(0, o);
  return b.finish(b.binary(ScalarOp::Mul, x, x), Expr::dim("n"), o);
}

}  // namespace

TEST_CASE("measure: run() of a Body equals the Body interpreter", "[measure]") {
  const DimValues dims = {{"n", 5}, {"unused", 9}};
  std::mt19937 rng(7);
  const std::vector<Candidate> candidates = {
      compiler::body_candidate(dot_body(), {20, 4}, dims),
      compiler::body_candidate(gather_body(), {15, 5}, dims),
      compiler::body_candidate(scatter_body(), {6, 2, 4}, dims),
  };
  const std::vector<std::vector<std::vector<double>>> inputs = {
      {random_values(rng, 20, DType::F32), random_values(rng, 4, DType::F32)},
      {random_values(rng, 15, DType::F32), random_values(rng, 5, DType::I32, 5)},
      {random_values(rng, 6, DType::F32), {2, 0}, random_values(rng, 4, DType::F32)},
  };
  for (runtime::Target* target : {&cpu_target(), &reference_target()}) {
    INFO("target " << target->name());
    TempDir cache("run");
    Measurer measurer(*target, cache.path);
    const std::vector<std::string> errors = measurer.prepare(candidates, dims);
    CHECK(errors == std::vector<std::string>(3, ""));
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      INFO("candidate " << i);
      const Body& body = std::get<Body>(candidates[i].op);
      check_close(measurer.run(candidates[i], inputs[i], dims), interpret(body, inputs[i], dims));
      CHECK(measurer.check(candidates[i], dims) == "");
    }
    // Each candidate ran once in run() and once in check().
    CHECK(measurer.stats().runs == 6);
    CHECK(measurer.stats().measured == 0);
  }
}

TEST_CASE("measure: run() of a gemm call equals the gemm reference", "[measure]") {
  const DimValues dims = {{"m", 5}};
  std::mt19937 rng(11);
  for (DType dtype : {DType::F32, DType::F64}) {
    const Candidate gemm = compiler::gemm_candidate(gemm_call(dtype), dims);
    REQUIRE(gemm.input_elements == std::vector<std::int64_t>{20, 12});
    REQUIRE(gemm.output_elements == 15);
    const std::vector<double> a = random_values(rng, 20, dtype);
    const std::vector<double> b = random_values(rng, 12, dtype);
    std::vector<double> want(15, 0.0);
    targets::gemm_reference(std::get<runtime::LibraryCall>(gemm.op), dims, a, b, want);
    for (runtime::Target* target : {&cpu_target(), &reference_target()}) {
      INFO("target " << target->name() << " dtype " << graph::dtype_name(dtype));
      TempDir cache("gemm");
      Measurer measurer(*target, cache.path);
      CHECK(measurer.prepare({gemm}, dims) == std::vector<std::string>{""});
      check_close(measurer.run(gemm, {a, b}, dims), want);
      CHECK(measurer.check(gemm, dims) == "");
    }
  }
}

TEST_CASE("measure: times persist on disk and a second Measurer measures nothing", "[measure]") {
  TempDir cache("persist");
  const std::filesystem::path& dir = cache.path;
  const DimValues dims = {{"n", 64}};
  const Candidate dot = compiler::body_candidate(dot_body(), {256, 4}, dims);
  const Candidate gemm = compiler::gemm_candidate(gemm_call(DType::F32), {{"m", 64}});

  Measurer first(cpu_target(), dir);
  CHECK_FALSE(first.cached(dot, dims));
  const double t = first.time(dot, dims);
  const double g = first.time(gemm, {{"m", 64}});
  CHECK(t > 0.0);
  CHECK(g > 0.0);
  CHECK(first.stats().measured == 2);
  CHECK(first.stats().cache_hits == 0);
  CHECK(first.stats().runs >= 2 * 7);  // two warm-ups and at least five timed runs each
  CHECK(first.stats().seconds > 0.0);
  const std::string hex = Measurer::hex(Measurer::key(dot, dims, "cpu", first.fingerprint()));
  CHECK(hex.size() == 32);
  const auto file = dir / "measure" / "cpu" / (hex + ".time");
  REQUIRE(std::filesystem::exists(file));
  CHECK(first.cache_dir() == dir / "measure" / "cpu");

  Measurer second(cpu_target(), dir);
  CHECK(second.cached(dot, dims) == t);
  CHECK(second.time(dot, dims) == t);
  CHECK(second.stats().measured == 0);
  CHECK(second.stats().cache_hits == 1);
  CHECK(second.stats().runs == 0);

  // Another fingerprint (compiler flags, say) is another key: measured again.
  Measurer other_flags(cpu_target(), dir, "-O2");
  CHECK_FALSE(other_flags.cached(dot, dims));

  // A damaged file is a miss: measured again and rewritten.
  { std::ofstream(file) << "garbage\n"; }
  Measurer third(cpu_target(), dir);
  CHECK(third.time(dot, dims) > 0.0);
  CHECK(third.stats().measured == 1);
  CHECK(Measurer(cpu_target(), dir).cached(dot, dims));
}

// A candidate only worth knowing when faster than a known program: one run past the bound is
// its time; within the bound it is timed as usual.
TEST_CASE("measure: a bound stops timing after one run past it", "[measure]") {
  TempDir cache("bound");
  const DimValues dims = {{"n", 64}};
  const Candidate dot = compiler::body_candidate(dot_body(), {256, 4}, dims);
  Measurer bounded(cpu_target(), cache.path);
  compiler::TimeBound bound;
  bound.give_up_seconds = 1e-12;
  const auto over = bounded.try_time_all({dot}, dims, bound);
  REQUIRE(over.front().ok());
  CHECK(over.front().over_bound);
  CHECK(over.front().seconds > 0.0);
  CHECK(bounded.stats().runs == 1);

  TempDir other("unbounded");
  Measurer free(cpu_target(), other.path);
  bound.give_up_seconds = 10.0;
  const auto within = free.try_time_all({dot}, dims, bound);
  REQUIRE(within.front().ok());
  CHECK_FALSE(within.front().over_bound);
  CHECK(free.stats().runs >= 7);  // two warm-ups and at least five timed runs
}

// A kernel in place and the same kernel writing a copy have one key: timed once, one time, so
// the copy's charge decides between them and not two draws of the timing noise.
TEST_CASE("measure: candidates with one key in a batch are timed once and get one time",
          "[measure]") {
  TempDir cache("same-key");
  const DimValues dims = {{"n", 64}};
  const Candidate dot = compiler::body_candidate(dot_body(), {256, 4}, dims);
  const Candidate wider = compiler::body_candidate(dot_body(), {512, 8}, dims);
  Measurer measurer(cpu_target(), cache.path);
  const auto times = measurer.try_time_all({dot, wider, dot}, dims);
  REQUIRE(times.size() == 3);
  for (const auto& t : times) REQUIRE(t.ok());
  CHECK(times[0].seconds == times[2].seconds);
  CHECK(measurer.stats().measured == 2);
}

TEST_CASE("measure: random inputs are never zero and keep dynamic rows in range", "[measure]") {
  const DimValues dims = {{"n", 200}};
  const Candidate gather = compiler::body_candidate(gather_body(), {15, 200}, dims);
  const auto inputs = compiler::random_inputs(gather, dims, 1);
  REQUIRE(inputs.size() == 2);
  REQUIRE(inputs[0].size() == 15);
  REQUIRE(inputs[1].size() == 200);
  std::size_t bad = 0;
  for (double v : inputs[0]) bad += v == 0.0 || v < -1.0 || v > 1.0;
  CHECK(bad == 0);
  std::vector<int> seen(5, 0);
  for (double v : inputs[1]) {
    const bool row = v >= 0.0 && v < 5.0 && v == std::floor(v);  // under the table's row count
    bad += !row;
    if (row) ++seen[static_cast<std::size_t>(v)];
  }
  CHECK(bad == 0);
  for (int count : seen) CHECK(count > 0);
  CHECK(compiler::random_inputs(gather, dims, 1) == inputs);  // reproducible
  CHECK_FALSE(compiler::random_inputs(gather, dims, 2) == inputs);

  // f16 values that would round to 0 are drawn again.
  BodyBuilder b({DType::F16});
  Expr o = b.output_loop(Expr(4096));
  const Candidate half =
      compiler::body_candidate(b.finish(b.load(0, o), Expr(4096), o), {4096}, {});
  const auto halves = compiler::random_inputs(half, {}, 3);
  CHECK(std::count(halves.at(0).begin(), halves.at(0).end(), 0.0) == 0);
}

TEST_CASE("measure: an integer input that is not a row index is positions 0, 1, 2, ...",
          "[measure]") {
  // A causal mask over positions (j <= i, read from an i64 buffer like an Iota's): with small
  // random values it hid nothing, and a causal kernel was timed doing all its keys.
  BodyBuilder b({DType::I64, DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const ScalarId masked = b.select(b.less_than(b.load(0, i), b.constant(100, DType::I64), DType::Bool),
                                   b.load(1, i), b.constant(0, DType::F32));
  const Body body = b.finish(masked, Expr::dim("n"), i);
  const DimValues dims = {{"n", 300}};
  const auto inputs = compiler::random_inputs(compiler::body_candidate(body, {300, 300}, dims),
                                              dims, 5);
  REQUIRE(inputs.size() == 2);
  for (std::size_t e = 0; e < 300; ++e) CHECK(inputs[0][e] == static_cast<double>(e));
}

TEST_CASE("measure: keys follow the op, the sizes, the dims it uses and the target", "[measure]") {
  const DimValues dims = {{"n", 5}};
  const Candidate dot = compiler::body_candidate(dot_body(), {20, 4}, dims);
  const auto key = [](const Candidate& c, const DimValues& d, const std::string& target = "cpu",
                      const std::string& fingerprint = "x") {
    return Measurer::key(c, d, target, fingerprint);
  };
  const support::Hash128 base = key(dot, dims);
  CHECK(key(dot, dims) == base);
  CHECK(key(dot, {{"n", 5}, {"unused", 3}}) == base);  // a dim the Body does not mention
  CHECK_FALSE(key(dot, {{"n", 6}}) == base);
  CHECK_FALSE(key(dot, dims, "reference") == base);
  CHECK_FALSE(key(dot, dims, "cpu", "y") == base);
  Candidate bigger = dot;
  bigger.input_elements[0] = 40;  // a view into a larger buffer
  CHECK_FALSE(key(bigger, dims) == base);
  CHECK_FALSE(key(compiler::body_candidate(gather_body(), {15, 5}, dims), dims) == base);

  const Candidate gemm = compiler::gemm_candidate(gemm_call(DType::F32), {{"m", 5}});
  CHECK_FALSE(key(gemm, {{"m", 5}}) == key(gemm, {{"m", 6}}));
  const Candidate gemm64 = compiler::gemm_candidate(gemm_call(DType::F64), {{"m", 5}});
  CHECK_FALSE(key(gemm, {{"m", 5}}) == key(gemm64, {{"m", 5}}));
}

TEST_CASE("measure: prepare() reports rejected candidates and check() finds wrong kernels",
          "[measure]") {
  FakeTarget fake;
  TempDir cache("fake");
  Measurer measurer(fake, cache.path);
  const DimValues dims = {{"n", 5}, {"m", 5}};
  const Candidate square = compiler::body_candidate(square_body(), {5}, dims);
  const Candidate dot = compiler::body_candidate(dot_body(), {20, 4}, dims);
  runtime::LibraryCall conv;
  conv.op = "conv";
  const Candidate unknown{conv, {DType::F32}, {4}, DType::F32, 4};
  const Candidate gemm = compiler::gemm_candidate(gemm_call(DType::F32), dims);

  const std::vector<std::string> errors = measurer.prepare({square, dot, unknown, gemm}, dims);
  REQUIRE(errors.size() == 4);
  CHECK(errors[0] == "");
  CHECK(errors[1] == "fake: too many inputs");
  CHECK(contains(errors[2], "no library op conv"));
  CHECK(errors[3] == "");
  CHECK(fake.batches == 1);  // one batch for both Bodies
  // Prepared results are kept: no second batch.
  CHECK(measurer.prepare({square, dot}, dims) == std::vector<std::string>{"", "fake: too many inputs"});
  CHECK(fake.batches == 1);

  CHECK(contains(user_error_of([&] { measurer.run(dot, {{}, {}}, dims); }),
                 "fake: too many inputs"));
  CHECK(contains(user_error_of([&] { measurer.time(dot, dims); }), "fake: too many inputs"));

  // The fake device spoils element 0 of every kernel's output; its gemm is the reference's.
  CHECK(contains(measurer.check(square, dims), "element 0 is"));
  CHECK(measurer.check(gemm, dims) == "");
}

namespace {

// out[0] = in0[0], stored 2^36 elements past the end of its 4-element output: a kernel that
// bypassed the static bounds check and writes into unmapped memory.
Body wild_store_body() {
  BodyBuilder b({DType::F32});
  Expr o = b.output_loop(Expr(1));
  return b.finish(b.load(0, Expr(0)), Expr(4), o + (std::int64_t{1} << 36));
}

// out[0] = the sum of in0[0] added 2^50 times: a kernel that does not finish.
Body endless_body() {
  BodyBuilder b({DType::F32});
  Expr o = b.output_loop(Expr(1));
  std::string r = b.reduce_var();
  ScalarId total = b.reduce(b.sum_monoid(DType::F32), r, Expr(std::int64_t{1} << 50),
                            {b.load(0, o)}, DType::F32);
  return b.finish(total, Expr(1), o);
}

// out[o] = log2(in0[o] - 2): NaN for every input in [-1, 1].
Body nan_body() {
  BodyBuilder b({DType::F32});
  Expr o = b.output_loop(Expr(4));
  ScalarId shifted = b.binary(ScalarOp::Add, b.load(0, o), b.constant(-2.0, DType::F32));
  return b.finish(b.unary(ScalarOp::Log2, shifted), Expr(4), o);
}

}  // namespace

TEST_CASE("measure: a candidate that crashes, hangs or gives NaN is rejected, the next still runs",
          "[measure]") {
  TempDir cache("sandbox");
  compiler::SandboxOptions sandbox;
  sandbox.time_limit_seconds = 3.0;
  Measurer measurer(cpu_target(), cache.path, "", {}, sandbox);
  const DimValues dims = {{"n", 5}};
  const Candidate wild = compiler::body_candidate(wild_store_body(), {4}, dims);
  const Candidate endless = compiler::body_candidate(endless_body(), {1}, dims);
  const Candidate nan = compiler::body_candidate(nan_body(), {4}, dims);
  const Candidate dot = compiler::body_candidate(dot_body(), {20, 4}, dims);
  std::mt19937 rng(3);
  const std::vector<double> x = random_values(rng, 4, DType::F32);
  const std::vector<double> dot_x = random_values(rng, 20, DType::F32);
  const std::vector<double> dot_y = random_values(rng, 4, DType::F32);

  const std::vector<Measurer::RunResult> runs = measurer.try_run_all(
      {wild, dot, endless, nan, dot},
      {{x}, {dot_x, dot_y}, {{x[0]}}, {x}, {dot_x, dot_y}}, dims);
  REQUIRE(runs.size() == 5);
  CHECK(contains(runs[0].failure, "crashed: signal 11"));
  REQUIRE(runs[1].ok());
  CHECK(graph::mismatch(runs[1].output, interpret(dot_body(), {dot_x, dot_y}, dims),
                        DType::F32, 4) == "");
  CHECK(contains(runs[2].failure, "hung: no result within 3 s"));
  // The NaN candidate runs; where the reference (here log2(x + 2)) has none, it is rejected.
  REQUIRE(runs[3].ok());
  std::vector<double> want;
  for (double v : x) want.push_back(graph::round_to_dtype(std::log2(v + 2.0), DType::F32));
  CHECK(std::isnan(runs[3].output.at(0)));
  CHECK(contains(graph::mismatch(runs[3].output, want, DType::F32), "element 0 is"));
  CHECK(runs[4].output == runs[1].output);
  CHECK(measurer.stats().failures == 2);

  // run() and time() say why; check() of the endless kernel reports the hang (its reference,
  // interpreted in the worker too, would never finish either).
  CHECK(contains(user_error_of([&] { measurer.run(wild, {x}, dims); }), "crashed"));
  CHECK(contains(measurer.check(endless, dims), "hung"));
  CHECK(contains(measurer.check(wild, dims), "reference semantics fail"));
  const Measurer::TimeResult timed = measurer.try_time(wild, dims);
  CHECK(contains(timed.failure, "crashed"));
  CHECK_FALSE(measurer.cached(wild, dims).has_value());  // a failure is not a time
  CHECK(measurer.try_time(dot, dims).ok());
  // A batch of timings: the crash fails alone, the next is timed and cached.
  const Candidate gather = compiler::body_candidate(gather_body(), {15, 5}, dims);
  const std::vector<Measurer::TimeResult> times = measurer.try_time_all({wild, gather}, dims);
  CHECK(contains(times[0].failure, "crashed"));
  CHECK(times[1].ok());
  CHECK(times[1].seconds > 0.0);
  CHECK(measurer.cached(gather, dims) == times[1].seconds);
}

TEST_CASE("measure: sandboxed runs work after OpenMP and OpenBLAS ran in this process",
          "[measure]") {
  // A parallel kernel and a threaded gemm, run here first (their thread pools start), then in
  // workers: a worker whose OpenMP team still listed this process's threads would hang.
  BodyBuilder b({DType::F32});
  Expr i = b.output_loop(Expr::dim("n"));
  Expr j = b.output_loop(Expr(256));
  Body body = b.finish(b.unary(ScalarOp::Sqrt, b.load(0, i * 256 + j)), Expr::dim("n") * 256,
                       i * 256 + j);
  const DimValues dims = {{"n", 8192}, {"m", 512}};  // >= 4096 rows: an OpenMP team
  runtime::Target& target = cpu_target();
  const runtime::Prepared prepared = target.prepare({body}).front();
  REQUIRE(prepared.kernel);
  runtime::LibraryCall gemm;
  gemm.op = "gemm";
  gemm.params = {{"m", Expr::dim("m")}, {"n", Expr(512)}, {"k", Expr(512)}};
  std::vector<float> a(8192 * 256, 0.5f), out(8192 * 256, 0.0f), c(512 * 512, 0.0f);
  target.device().launch(*prepared.kernel, {a.data(), out.data()}, {8192});
  target.device().call(gemm, {a.data(), a.data(), c.data()}, dims);
  target.device().synchronize();
  CHECK(out[7] == std::sqrt(0.5f));
  CHECK(c[0] == 128.0f);

  TempDir cache("threads");
  compiler::SandboxOptions sandbox;
  sandbox.time_limit_seconds = 10.0;
  Measurer measurer(target, cache.path, "", {}, sandbox);
  const Candidate sqrt_candidate = compiler::body_candidate(body, {8192 * 256}, dims);
  const Candidate gemm_candidate = compiler::gemm_candidate(gemm, dims);
  CHECK(measurer.check_all({sqrt_candidate, gemm_candidate}, dims) ==
        std::vector<std::string>{"", ""});
  CHECK(measurer.try_time(sqrt_candidate, dims).ok());
  // And this process still runs both.
  target.device().launch(*prepared.kernel, {a.data(), out.data()}, {8192});
  target.device().call(gemm, {a.data(), a.data(), c.data()}, dims);
  CHECK(c[5] == 128.0f);
}
