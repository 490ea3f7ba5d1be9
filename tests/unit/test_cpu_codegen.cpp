// targets/cpu: every one-op Body of a set of graphs, rendered to C++, compiled in one batch and
// run on native buffers, agrees with the Body interpreter; the cache makes a second compile
// free; a broken source is rejected with the compiler's message; the cache folder is keyed by
// the compiler, its flags and the code generator's version.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_lower.hpp"
#include "graph/interpret.hpp"
#include "graph/tensor.hpp"
#include "graph/native.hpp"
#include "support/hash.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/jit.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/cpu_kernel_run.hpp"
#include "tests/unit/schedule_cases.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::random_tensor;

namespace {

std::filesystem::path fresh_cache(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("kiln-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

// Renders, compiles (one batch, in `cache`) and runs every case, checking each output against
// the Body interpreter; the sources, for the cache checks, and the compiler's runs.
std::vector<targets::cpu::KernelSource> check_kernels(
    const std::vector<kiln::testing::BodyCase>& cases, const std::filesystem::path& cache,
    std::size_t& compiler_runs) {
  std::vector<targets::cpu::KernelSource> sources;
  for (const kiln::testing::BodyCase& c : cases) {
    sources.push_back(targets::cpu::render_kernel(c.body));
  }
  targets::cpu::JitCompiler jit(cache);
  std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  compiler_runs = jit.stats().compiler_runs;

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const kiln::testing::BodyCase& c = cases[i];
    INFO(c.label << "\n" << to_text(c.body) << sources[i].code);
    REQUIRE(kernels[i].fn != nullptr);
    const auto size = static_cast<std::size_t>(evaluate(c.body.output_size(), c.dims));
    std::vector<double> expected(size);
    std::vector<const std::vector<double>*> ins;
    for (const auto& in : c.inputs) ins.push_back(&in);
    if (c.body.output_aliases()) expected = c.inputs[*c.body.output_aliases()];
    interpret_body(c.body, ins, c.dims, expected);
    const std::vector<double> got = kiln::testing::run_cpu_kernel(kernels[i], sources[i], c);
    for (std::size_t j = 0; j < size; ++j) {
      INFO("element " << j << ": " << got[j] << " vs " << expected[j]);
      // Equal infinities too (an empty chunk of a split max holds -inf).
      CHECK((got[j] == expected[j] ||
             std::fabs(got[j] - expected[j]) <=
                 kiln::testing::case_tolerance(c.body.dtype()) * (1.0 + std::fabs(expected[j]))));
    }
  }
  return sources;
}

}  // namespace

TEST_CASE("CPU kernels agree with the Body interpreter", "[cpu]") {
  std::vector<kiln::testing::BodyCase> cases = kiln::testing::conformance_cases();
  const auto cache = fresh_cache("codegen");
  std::size_t runs = 0;
  const std::vector<targets::cpu::KernelSource> sources = check_kernels(cases, cache, runs);
  CHECK(runs == 1);

  // A second compiler over the same cache compiles nothing.
  targets::cpu::JitCompiler again(cache);
  std::vector<targets::cpu::CompiledKernel> cached = again.compile(sources);
  CHECK(again.stats().compiler_runs == 0);
  CHECK(again.stats().cache_hits == sources.size());
  for (const auto& k : cached) CHECK(k.fn != nullptr);
  std::filesystem::remove_all(cache);
}

TEST_CASE("CPU kernels of tiled, reordered and split Bodies agree with the interpreter",
          "[cpu][schedule]") {
  // Loop extents of 1, below the tile, and ragged (seq 1, 3, 17 against tiles of 4 and 16);
  // the Bodies do not depend on seq, so one batch compiles them all.
  std::vector<kiln::testing::BodyCase> cases;
  std::size_t tiled = 0, split = 0;
  for (std::int64_t rows : {1, 3, 17}) {
    std::vector<kiln::testing::BodyCase> base;
    for (kiln::testing::BodyCase& c : kiln::testing::conformance_cases(rows)) {
      if (c.label.rfind("f32 ", 0) == 0 || c.label.rfind("index ", 0) == 0) base.push_back(c);
    }
    for (auto& c : kiln::testing::tiled_cases(base, {4, 16})) {
      cases.push_back(std::move(c));
      ++tiled;
    }
    for (auto& c : kiln::testing::reordered_cases(kiln::testing::tiled_cases(base, {4}))) {
      cases.push_back(std::move(c));
    }
    for (auto& s : kiln::testing::split_cases(base, {2, 3, 8})) {
      cases.push_back(std::move(s.partial));
      cases.push_back(std::move(s.combine));
      ++split;
    }
  }
  CHECK(tiled > 60);
  CHECK(split > 20);
  CHECK(cases.size() > tiled + 2 * split + 60);
  const auto cache = fresh_cache("schedule");
  std::size_t runs = 0;
  check_kernels(cases, cache, runs);
  CHECK(runs == 1);
  std::filesystem::remove_all(cache);
}

TEST_CASE("a kernel that does not compile is rejected, the others load", "[cpu]") {
  BodyBuilder b({DType::F32});
  Expr i = b.output_loop(Expr(4));
  Body body = b.finish(b.load(0, i), Expr(4), i);
  targets::cpu::KernelSource good = targets::cpu::render_kernel(body);
  targets::cpu::KernelSource bad{"kiln_broken", "extern \"C\" void kiln_broken() { oops; }\n", {}};
  const auto cache = fresh_cache("broken");
  targets::cpu::JitCompiler jit(cache);
  std::vector<targets::cpu::CompiledKernel> out = jit.compile({good, bad});
  CHECK(out[0].fn != nullptr);
  CHECK(out[1].fn == nullptr);
  CHECK(contains(out[1].error, "the C++ compiler rejected kernel kiln_broken"));
  CHECK(contains(out[1].error, "oops"));
  std::filesystem::remove_all(cache);
}

TEST_CASE("the kernel cache is keyed by the compiler, its flags and the code generator's version",
          "[cpu]") {
  const auto cache = fresh_cache("identity");
  targets::cpu::JitCompiler jit(cache);
  const std::string& identity = jit.identity();
  // Kernels are cached by the hash of their Body, so everything that turns a Body into machine
  // code must be in the folder's key: a changed code generator must not load old kernels.
  CHECK(identity.rfind("compiler=", 0) == 0);
  CHECK(contains(identity, std::string(";flags=") + targets::cpu::JitCompiler::flags() + ";"));
  const std::size_t codegen = identity.find(";codegen=");
  REQUIRE(codegen != std::string::npos);
  const std::string version = identity.substr(codegen + 9);
  CHECK(version.size() == 16);
  CHECK(version.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(identity.find('\n') == std::string::npos);
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(support::hash64(identity)));
  CHECK(jit.cache_dir() == cache / "cpu" / hex);
  std::filesystem::remove_all(cache);
}

TEST_CASE("float exp2, log2 and sin of the generated code are within 4 ulps over their range",
          "[cpu]") {
  // The prelude's branch-free versions (they vectorize, libm's do not): random arguments over
  // every exponent, plus the edges (subnormal results and arguments, overflow, 0, negatives,
  // infinities, NaN); sin over rotary-position arguments, small ones, and near multiples of
  // pi/2 and pi, where the reduction must keep the result's digits.
  std::vector<float> exp_args, log_args, sin_args;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> power(-155.0f, 130.0f);
  for (int i = 0; i < 100000; ++i) {
    exp_args.push_back(power(rng));
    log_args.push_back(std::exp2(power(rng)));
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 127.99f, 128.0f, -126.0f, -149.0f, -149.5f,
                  -151.0f, -1000.0f, 1000.0f, inf, -inf, nan, 1e-8f, -1e-8f}) {
    exp_args.push_back(v);
  }
  for (float v : {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 1.4142135f, 1.4142137f, 1e-45f, 1e-40f,
                  1.17549435e-38f, 3.4e38f, inf, -inf, nan, 0.999999f, 1.000001f}) {
    log_args.push_back(v);
  }
  std::uniform_real_distribution<float> position(-20000.0f, 20000.0f), small(-4.0f, 4.0f);
  std::uniform_real_distribution<float> magnitude(-30.0f, 29.5f);  // below 8e8, see the prelude
  for (int i = 0; i < 100000; ++i) {
    sin_args.push_back(position(rng));
    sin_args.push_back(small(rng));
    sin_args.push_back(std::exp2(magnitude(rng)) * (i % 2 ? 1.0f : -1.0f));
  }
  for (int k = -3000; k <= 3000; ++k) {
    for (double at : {0.5 * M_PI * k, M_PI * k}) {
      const float f = static_cast<float>(at);
      sin_args.insert(sin_args.end(), {f, std::nextafter(f, inf), std::nextafter(f, -inf)});
    }
  }
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-45f, 0.7853982f, 1.5707964f, 3.1415927f, 1e6f, 1e8f,
                  7.9e8f, 8191.5f, inf, -inf, nan}) {
    sin_args.push_back(v);
  }
  auto check = [inf](ScalarOp op, const std::vector<float>& args, double (*reference)(double)) {
    BodyBuilder b({DType::F32});
    const Expr i = b.output_loop(Expr::dim("n"));
    const Body body = b.finish(b.unary(op, b.load(0, i)), Expr::dim("n"), i);
    const targets::cpu::KernelSource source = targets::cpu::render_kernel(body);
    CHECK(contains(source.code, std::string("kiln_") + scalar_op_name(op) + "f("));
    const auto cache = fresh_cache("vector-math");
    targets::cpu::JitCompiler jit(cache);
    std::vector<targets::cpu::CompiledKernel> k = jit.compile({source});
    REQUIRE(k[0].fn != nullptr);
    std::vector<float> out(args.size());
    void* buffers[] = {const_cast<float*>(args.data()), out.data()};
    const long long n = static_cast<long long>(args.size());
    k[0].fn(buffers, &n);
    for (std::size_t j = 0; j < args.size(); ++j) {
      const double want = reference(static_cast<double>(args[j]));
      const float w = static_cast<float>(want);
      INFO(scalar_op_name(op) << "(" << args[j] << ") = " << out[j] << ", want " << want);
      if (std::isnan(want)) {
        CHECK(std::isnan(out[j]));
      } else if (std::isinf(w) || w == 0.0f) {
        CHECK((out[j] == w || std::fabs(out[j] - w) <= 1.5e-45));  // or the least subnormal
      } else {
        const double ulp = std::fabs(std::nextafter(w, inf) - w);
        CHECK(std::fabs(out[j] - want) <= 4 * ulp);
      }
    }
    std::filesystem::remove_all(cache);
  };
  check(ScalarOp::Exp2, exp_args, [](double x) { return std::exp2(x); });
  check(ScalarOp::Log2, log_args, [](double x) { return std::log2(x); });
  check(ScalarOp::Sin, sin_args, [](double x) { return std::sin(x); });
}

TEST_CASE("the 16-float exp2 of the online softmax's weights is within 4 ulps for arguments "
          "at most 0, and 0 below 2^-126",
          "[cpu]") {
  // kiln_exp2_x16 (the prelude's, for the key products' weights and rescales): random
  // arguments over [-130, 0], the edges of its clamp and rounding, -0 and -inf.
  std::vector<float> args;
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> power(-130.0f, 0.0f);
  for (int i = 0; i < 100000; ++i) args.push_back(power(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, -1e-8f, -0.5f, -1.0f, -125.5f, -126.0f, -126.4f, -126.6f, -127.0f,
                  -127.5f, -149.0f, -1000.0f, -inf}) {
    args.push_back(v);
  }
  while (args.size() % 16 != 0) args.push_back(-1.0f);
  const targets::cpu::KernelSource source{
      "kiln_test_exp2_x16",
      "extern \"C\" void kiln_test_exp2_x16(void* const* b, const long long* n) {\n"
      "  for (long long i = 0; i < n[0]; i += 16) {\n"
      "    kiln_f32x16 x;\n"
      "    __builtin_memcpy(&x, (const float*)b[0] + i, sizeof x);\n"
      "    x = kiln_exp2_x16(x);\n"
      "    __builtin_memcpy((float*)b[1] + i, &x, sizeof x);\n"
      "  }\n"
      "}\n",
      {"n"}};
  const auto cache = fresh_cache("vector-exp2");
  targets::cpu::JitCompiler jit(cache);
  std::vector<targets::cpu::CompiledKernel> k = jit.compile({source});
  REQUIRE(k[0].fn != nullptr);
  std::vector<float> out(args.size());
  void* buffers[] = {args.data(), out.data()};
  const long long n = static_cast<long long>(args.size());
  k[0].fn(buffers, &n);
  for (std::size_t j = 0; j < args.size(); ++j) {
    const double want = std::exp2(static_cast<double>(args[j]));
    INFO("exp2(" << args[j] << ") = " << out[j] << ", want " << want);
    if (want < 0x1p-126) {
      // Below the least normal float: 0, or the value (the argument rounds up to -126).
      CHECK((out[j] == 0.0f || std::fabs(out[j] - want) <= 4 * 0x1p-149));
    } else {
      const float w = static_cast<float>(want);
      CHECK(std::fabs(out[j] - want) <= 4 * std::fabs(std::nextafter(w, inf) - w));
    }
  }
  std::filesystem::remove_all(cache);
}

TEST_CASE("a vectorized max reduction keeps NaN, -inf rows and the largest value", "[cpu]") {
  // Rows: all -inf (a fully masked row), one NaN among finite values, finite values with
  // -FLT_MAX and +inf, and plain finite values (longer than a vector).
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float lowest = std::numeric_limits<float>::lowest();
  std::vector<float> rows(4 * 37, -inf);
  for (int j = 0; j < 37; ++j) {
    rows[37 + j] = static_cast<float>(j) - 5.0f;
    rows[2 * 37 + j] = lowest;
    rows[3 * 37 + j] = static_cast<float>((j * 7) % 37) - 20.0f;
  }
  rows[37 + 11] = nan;
  rows[2 * 37 + 30] = inf;
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr(4));
  const std::string r = b.reduce_var();
  const ScalarId m = b.reduce(b.max_monoid(DType::F32), r, Expr(37),
                              {b.load(0, i * Expr(37) + Expr::dim(r))}, DType::F32);
  const Body body = b.finish(m, Expr(4), i);
  const targets::cpu::KernelSource source = targets::cpu::render_kernel(body);
  CHECK(contains(source.code, "reduction(max:"));
  const auto cache = fresh_cache("vector-max");
  targets::cpu::JitCompiler jit(cache);
  std::vector<targets::cpu::CompiledKernel> k = jit.compile({source});
  REQUIRE(k[0].fn != nullptr);
  std::vector<float> out(4);
  void* buffers[] = {rows.data(), out.data()};
  k[0].fn(buffers, nullptr);
  CHECK(out[0] == -inf);
  CHECK(std::isnan(out[1]));
  CHECK(out[2] == inf);
  CHECK(out[3] == 16.0f);
  std::filesystem::remove_all(cache);
}

// GCC's vectorizer report on `body`'s kernel compiled with the JIT's flags.
std::string vectorizer_report(const Body& body, const std::string& name) {
  const auto dir = fresh_cache("vectorize-" + name);
  std::filesystem::create_directories(dir);
  const auto file = dir / (name + ".cpp");
  {
    std::ofstream out(file);
    out << targets::cpu::cpu_prelude() << targets::cpu::render_kernel(body).code;
  }
  const std::string command = std::string("g++ ") + targets::cpu::JitCompiler::flags() +
                              " -fopt-info-vec-optimized -c " + file.string() + " -o " +
                              (dir / (name + ".o")).string() + " 2>&1";
  std::string report;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) report += line;
    CHECK(::pclose(pipe) == 0);
  }
  std::filesystem::remove_all(dir);
  return report;
}

TEST_CASE("a comparison cast to float vectorizes (ReLU's mask in a fused loop)", "[cpu]") {
  // GCC has no vector form of unsigned char to float; the generated code goes through int. A
  // loop that stays scalar ran the fused chain example at half the triad bandwidth.
  GraphBuilder b;
  GraphTensor x = b.input("x", {Expr::dim("n"), Expr(4096)});
  GraphTensor mask = cast(greater(x, b.constant(0.0)), DType::F32);
  const Body body = one_op_body(b.graph(), mask.node());
  const std::string report = vectorizer_report(body, "mask");
  INFO(targets::cpu::render_kernel(body).code << report);
  CHECK(contains(report, "loop vectorized"));
}

TEST_CASE("a rotary embedding's sin vectorizes", "[cpu]") {
  // libm's sinf is a call per element: RoPE's kernels at seq 512 took 1.2 ms each that way.
  BodyBuilder b({DType::F32, DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const Expr j = b.output_loop(Expr(32));
  const auto angle = b.binary(ScalarOp::Mul, b.index(i, DType::F32), b.load(1, j));
  const auto rotated = b.binary(ScalarOp::Mul, b.load(0, i * 32 + j), b.unary(ScalarOp::Sin, angle));
  const Body body = b.finish(rotated, Expr::dim("n") * 32, i * 32 + j);
  const std::string report = vectorizer_report(body, "rotary");
  INFO(targets::cpu::render_kernel(body).code << report);
  CHECK(contains(targets::cpu::render_kernel(body).code, "kiln_sinf("));
  CHECK(contains(report, "loop vectorized"));
}

TEST_CASE("a concatenation's fused loop runs in parts that each vectorize and match the interpreter",
          "[cpu]") {
  // RoPE's rotate-half, concat(x1 * sin, x2 * sin) fused into one Body (the angle a position
  // times a frequency): its loads are valid on j < 16 or 16 <= j (clamped max(j, 16)); with
  // conditional loads GCC vectorized nothing (a fused RoPE kernel ran 30x slower than its
  // unfused parts). The loop over j is split at 16, where every validity and clamp is a
  // constant (and the other half's loads are zeros).
  const Expr n = Expr::dim("n");
  BodyBuilder b({DType::F32, DType::F32, DType::F32});
  const Expr i = b.output_loop(n);
  const Expr j = b.output_loop(Expr(32));
  const Expr low = le(j, Expr(15)), high = le(Expr(16), j);
  const Expr jh = max(j, Expr(16)) - Expr(16);
  auto part = [&](const Expr& col, const Expr& valid) {
    const ScalarId angle = b.binary(ScalarOp::Mul, b.load(1, i, valid), b.load(2, col, valid));
    return b.binary(ScalarOp::Mul, b.load(0, i * 16 + col, valid), b.unary(ScalarOp::Sin, angle));
  };
  const Body body = b.finish(b.binary(ScalarOp::Add, part(j, low), part(jh, high)), n * 32,
                             i * 32 + j);
  const std::string code = targets::cpu::render_kernel(body).code;
  const std::string report = vectorizer_report(body, "concat");
  INFO(code << report);
  CHECK(contains(code, "L_o1 = 0; L_o1 < 16;"));
  CHECK(contains(code, "L_o1 = 16; L_o1 < 32;"));
  const std::string split = code.substr(0, code.find("} else {"));  // not the collapsed form
  CHECK_FALSE(contains(split, "kiln_imax"));
  CHECK_FALSE(contains(split, "? in"));
  std::size_t vectorized = 0;
  for (std::size_t at = report.find("loop vectorized"); at != std::string::npos;
       at = report.find("loop vectorized", at + 1)) {
    ++vectorized;
  }
  CHECK(vectorized >= 2);
  const auto cache = fresh_cache("concat");
  targets::cpu::JitCompiler jit(cache);
  std::vector<targets::cpu::CompiledKernel> k = jit.compile({targets::cpu::render_kernel(body)});
  REQUIRE(k[0].fn != nullptr);
  for (std::int64_t rows : {1, 5}) {
    std::vector<float> x(static_cast<std::size_t>(rows * 16)), pos, freq;
    for (std::size_t e = 0; e < x.size(); ++e) x[e] = 0.1f * static_cast<float>(e) - 0.7f;
    for (std::int64_t r = 0; r < rows; ++r) pos.push_back(static_cast<float>(r));
    for (int c = 0; c < 16; ++c) freq.push_back(1.0f / static_cast<float>(1 + c));
    std::vector<float> out(static_cast<std::size_t>(rows * 32));
    void* buffers[] = {x.data(), pos.data(), freq.data(), out.data()};
    const long long dims[] = {rows};
    k[0].fn(buffers, dims);
    const std::vector<double> xd(x.begin(), x.end()), pd(pos.begin(), pos.end()),
        fd(freq.begin(), freq.end());
    std::vector<double> want(out.size());
    interpret_body(body, {&xd, &pd, &fd}, {{"n", rows}}, want);
    for (std::size_t e = 0; e < out.size(); ++e) CHECK(out[e] == Approx(want[e]).margin(1e-6));
  }
  std::filesystem::remove_all(cache);
}
