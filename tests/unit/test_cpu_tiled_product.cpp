// targets/cpu: tiled products (tiled_product.hpp). Matrix-product Bodies -- a sum over k of
// a[i, k] * b[k, j] with batch loops, a transposed a or b, b shared by the batch, an epilogue
// that reads the row and the column, a transposed or f16 store, inputs cast from f16 -- are
// recognized, rendered as register-blocked products, and agree with the Body interpreter at
// ragged sizes (1, 7, 33, 100, past a block of rows, columns and k) on one and two threads;
// f64 and f16 products and Bodies that are not products keep the plain form; the micro-kernel
// runs on 16-float FMAs where the machine has AVX-512, and the kernel, built for x86 levels
// without it, still agrees; a thread with a small stack runs it; the graph's own matmuls, once
// fused, are tiled products.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_inline.hpp"
#include "graph/body_lower.hpp"
#include "graph/native.hpp"
#include "graph/tensor.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/jit.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/cpu/tiled_product.hpp"
#include "targets/node_homes.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/cpu_kernel_run.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::fresh_dir;

namespace {

struct ProductShape {
  std::string label;
  bool batch = false;          // a batch loop outside the rows and columns
  bool shared_b = false;       // with a batch: b the same for every entry
  bool a_transposed = false;   // a stored [k, m]
  bool b_transposed = false;   // b stored [n, k]
  bool epilogue = false;       // (sum + bias[j]) * scale[i], then ReLU as the graph writes it
  bool store_transposed = false;
  DType inputs = DType::F32;   // the inputs' dtype, cast to `compute` where they differ
  DType compute = DType::F32;  // the product's and the sum's dtype
  DType output = DType::F32;
};

// y[(batch,) i, j] = epilogue(sum_k a[(batch,) i, k] * b[(batch,) k, j]) over dims m, n, k.
Body product_body(const ProductShape& p) {
  const Expr m = Expr::dim("m"), n = Expr::dim("n"), k = Expr::dim("k"),
             batches = Expr::dim("batch");
  std::vector<DType> inputs{p.inputs, p.inputs};
  if (p.epilogue) inputs.insert(inputs.end(), {p.compute, p.compute});
  BodyBuilder b(inputs);
  const Expr batch = p.batch ? b.output_loop(batches) : Expr(0);
  const Expr i = b.output_loop(m);
  const Expr j = b.output_loop(n);
  const std::string r = b.reduce_var();
  const Expr t = Expr::dim(r);
  const Expr a_at = batch * m * k + (p.a_transposed ? t * m + i : i * k + t);
  const Expr b_at = (p.shared_b ? Expr(0) : batch * k * n) + (p.b_transposed ? j * k + t : t * n + j);
  auto load = [&](std::size_t slot, const Expr& at) {
    const ScalarId x = b.load(slot, at);
    return p.inputs == p.compute ? x : b.cast(x, p.compute);
  };
  const ScalarId product = b.binary(ScalarOp::Mul, load(0, a_at), load(1, b_at));
  ScalarId value = b.reduce(b.sum_monoid(p.compute), r, k, {product}, p.compute);
  if (p.epilogue) {
    const ScalarId biased = b.binary(ScalarOp::Add, value, b.load(2, j));
    const ScalarId scaled = b.binary(ScalarOp::Mul, biased, b.load(3, i));
    const ScalarId positive = b.less_than(b.constant(0.0, p.compute), scaled, p.compute);
    value = b.binary(ScalarOp::Mul, scaled, positive);
  }
  if (p.output != p.compute) value = b.cast(value, p.output);
  const Expr at = batch * m * n + (p.store_transposed ? j * m + i : i * n + j);
  return b.finish(value, (p.batch ? batches : Expr(1)) * m * n, at);
}

kiln::testing::BodyCase product_case(const ProductShape& p, const Body& body, std::int64_t batches,
                                     std::int64_t m, std::int64_t n, std::int64_t k,
                                     std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  auto fill = [&](std::int64_t count) {
    std::vector<double> v(static_cast<std::size_t>(count));
    for (double& x : v) x = value(rng);
    return v;
  };
  const std::int64_t entries = p.batch ? batches : 1;
  kiln::testing::BodyCase c{p.label + " " + std::to_string(entries) + "x" + std::to_string(m) +
                                "x" + std::to_string(n) + "x" + std::to_string(k),
                            body, {}, {{"m", m}, {"n", n}, {"k", k}}};
  if (p.batch) c.dims["batch"] = batches;
  c.inputs.push_back(fill(entries * m * k));
  c.inputs.push_back(fill((p.shared_b ? 1 : entries) * k * n));
  if (p.epilogue) {
    c.inputs.push_back(fill(n));
    c.inputs.push_back(fill(m));
  }
  return c;
}

bool tiled(const Body& body) {
  return targets::cpu::plan_tiled_product(body, targets::NodeHomes(body)).has_value();
}

}  // namespace

TEST_CASE("cpu tiled product: matrix products agree with the interpreter at ragged sizes",
          "[cpu][tiled-product]") {
  const std::vector<ProductShape> shapes = {
      {"plain"},
      {"transposed b", false, false, false, true},
      {"transposed a", false, false, true},
      {"transposed store", false, false, false, false, false, true},
      {"batch", true},
      {"batch, shared transposed b", true, true, false, true},
      {"epilogue, transposed f16 store", false, false, false, false, true, true, DType::F32,
       DType::F32, DType::F16},
      {"f16 inputs cast to f32", false, false, false, true, false, false, DType::F16},
      {"f64", false, false, false, false, true, false, DType::F64, DType::F64, DType::F64},
      {"f16", false, false, false, false, false, false, DType::F16, DType::F16, DType::F16},
  };
  std::vector<Body> bodies;
  std::vector<targets::cpu::KernelSource> sources;
  for (const ProductShape& p : shapes) {
    bodies.push_back(product_body(p));
    const bool expect_tiled = p.compute == DType::F32;
    INFO(p.label);
    CHECK(tiled(bodies.back()) == expect_tiled);
    sources.push_back(targets::cpu::render_kernel(bodies.back()));
    INFO(sources.back().code);
    CHECK(contains(sources.back().code, "// tiled product of %") == expect_tiled);
    CHECK(contains(sources.back().code, "kiln_tiles<") == expect_tiled);
    // A row-major f32 a is read where it is; a transposed or converted one is packed.
    const bool direct = expect_tiled && !p.a_transposed && p.inputs == DType::F32;
    CHECK(contains(sources.back().code, "const float* const kp_ad = in0 + ") == direct);
    CHECK(contains(sources.back().code, "// a's block") == (expect_tiled && !direct));
    // A transposed f32 b's whole panels go through register transposes.
    CHECK(contains(sources.back().code, "kiln_transpose_panel<") ==
          (expect_tiled && p.b_transposed && p.inputs == DType::F32));
    // The sum itself, stored in f32 along the columns, is stored by the micro-kernel; any
    // other value or layout goes through the task's array of sums and the epilogue.
    CHECK(contains(sources.back().code, "kp_o = out + ") ==
          (expect_tiled && !p.epilogue && !p.store_transposed && p.output == DType::F32));
  }
  const auto cache = fresh_dir("tiled-product");
  targets::cpu::JitCompiler jit(cache);
  targets::cpu::load_thread_pool(jit);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  struct Size {
    std::int64_t batches, m, n, k;
  };
  // Ragged everywhere: single elements, below a panel, past a panel, past a block of rows
  // (96), of a task's rows (528), of columns (256) and of k (512), an empty k.
  const std::vector<Size> sizes = {{1, 1, 1, 1},     {2, 7, 33, 100}, {3, 33, 7, 9},
                                   {2, 100, 40, 7},  {1, 97, 17, 260}, {1, 13, 70, 530},
                                   {1, 400, 9, 20},  {1, 533, 70, 30}, {1, 9, 257, 30},
                                   {2, 5, 3, 0}};
  std::mt19937 rng(5);
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    REQUIRE(kernels[s].fn != nullptr);
    for (const Size& size : sizes) {
      const kiln::testing::BodyCase c =
          product_case(shapes[s], bodies[s], size.batches, size.m, size.n, size.k, rng);
      const std::vector<double> expected = kiln::testing::expected_output(c);
      for (int threads : {1, 2}) {
        targets::cpu::set_threads(threads);
        const std::vector<double> got = kiln::testing::run_cpu_kernel(kernels[s], sources[s], c);
        REQUIRE(got.size() == expected.size());
        // FMAs and blocks of k sum in another order than the interpreter: f32 agrees to a few
        // ulps of the sum's magnitude (up to sqrt(k) * 4); half types round every node alike.
        // An f16 store rounds the sum once more (a last-place difference may cross a step).
        const double tolerance =
            std::max(shapes[s].compute == DType::F32 ? 8e-6 * (1.0 + std::sqrt(double(size.k)))
                                                     : 0.0,
                     shapes[s].output == DType::F32
                         ? 0.0
                         : kiln::testing::case_tolerance(shapes[s].output) * 4);
        std::size_t wrong = 0, first = 0;
        for (std::size_t e = 0; e < got.size(); ++e) {
          const bool same = got[e] == expected[e] ||
                            std::fabs(got[e] - expected[e]) <= tolerance * (1.0 + std::fabs(expected[e]));
          if (!same && wrong++ == 0) first = e;
        }
        INFO(c.label << " threads=" << threads << "\n" << sources[s].code);
        INFO("first wrong element " << first << ": " << (got.empty() ? 0.0 : got[first]) << " vs "
                                    << (expected.empty() ? 0.0 : expected[first]));
        CHECK(wrong == 0);
      }
    }
  }
  targets::cpu::set_threads(0);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cpu tiled product: only products of a row factor and a column factor are tiled",
          "[cpu][tiled-product]") {
  const Expr m = Expr::dim("m"), n = Expr::dim("n"), k = Expr::dim("k");
  const DType f = DType::F32;
  // A factor that reads the row and the column: a[i, t] * b[t, j] * a[j, t].
  {
    BodyBuilder b({f, f});
    const Expr i = b.output_loop(m), j = b.output_loop(n);
    const std::string r = b.reduce_var();
    const Expr t = Expr::dim(r);
    const ScalarId both = b.binary(ScalarOp::Mul, b.load(0, i * k + t), b.load(0, j * k + t));
    const ScalarId product = b.binary(ScalarOp::Mul, both, b.load(1, t * n + j));
    const Body body = b.finish(b.reduce(b.sum_monoid(f), r, k, {product}, f), m * n, i * n + j);
    CHECK_FALSE(tiled(body));
    CHECK_FALSE(contains(targets::cpu::render_kernel(body).code, "kiln_tiles<"));
  }
  // A max, not a sum; and a sum whose extent depends on the row (a causal product).
  for (bool causal : {false, true}) {
    BodyBuilder b({f, f});
    const Expr i = b.output_loop(m), j = b.output_loop(n);
    const std::string r = b.reduce_var();
    const Expr t = Expr::dim(r);
    const ScalarId product = b.binary(ScalarOp::Mul, b.load(0, i * k + t), b.load(1, t * n + j));
    const std::size_t monoid = causal ? b.sum_monoid(f) : b.max_monoid(f);
    const Body body =
        b.finish(b.reduce(monoid, r, causal ? i + 1 : k, {product}, f), m * n, i * n + j);
    CHECK_FALSE(tiled(body));
  }
  // A product along one loop only (an outer product summed: no column loop of its own).
  {
    BodyBuilder b({f, f});
    const Expr i = b.output_loop(m);
    const std::string r = b.reduce_var();
    const Expr t = Expr::dim(r);
    const ScalarId product = b.binary(ScalarOp::Mul, b.load(0, i * k + t), b.load(1, t));
    CHECK_FALSE(tiled(b.finish(b.reduce(b.sum_monoid(f), r, k, {product}, f), m, i)));
  }
  // Fewer constant columns than a vector's lanes: a matrix-vector product stays plain.
  {
    BodyBuilder b({f, f});
    const Expr i = b.output_loop(m), j = b.output_loop(Expr(15));
    const std::string r = b.reduce_var();
    const Expr t = Expr::dim(r);
    const ScalarId product = b.binary(ScalarOp::Mul, b.load(0, i * k + t), b.load(1, t * 15 + j));
    CHECK_FALSE(tiled(b.finish(b.reduce(b.sum_monoid(f), r, k, {product}, f), m * 15, i * 15 + j)));
  }
  // The untiled form on request.
  const Body plain = product_body({"plain"});
  const targets::cpu::KernelSource untiled =
      targets::cpu::render_kernel(plain, {.tiled_products = false});
  CHECK_FALSE(contains(untiled.code, "kiln_tiles<"));
  CHECK(contains(untiled.symbol, "_untiled"));
}

TEST_CASE("cpu tiled product: the micro-kernel runs on 16-float FMAs with AVX-512",
          "[cpu][tiled-product]") {
  const Body body = product_body({"transposed b", false, false, false, true});
  const std::string code = targets::cpu::render_kernel(body).code;
  REQUIRE(contains(code, "kiln_tiles<"));
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) {
    SUCCEED("no AVX-512 here: the rendered text is checked, not its instructions");
    return;
  }
  const auto dir = fresh_dir("tiled-product-asm");
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "product.cpp");
    out << targets::cpu::cpu_prelude() << code;
  }
  const std::string command = std::string("g++ ") + targets::cpu::JitCompiler::flags() + " -S " +
                              (dir / "product.cpp").string() + " -o " +
                              (dir / "product.s").string() + " 2>&1";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(dir / "product.s");
  // The full tile's loop: kPanelRows x kPanelColumns / 16 FMAs on zmm registers, no spills of
  // the sums (every FMA accumulates into a register).
  std::size_t fmas = 0;
  for (std::string l; std::getline(in, l);) {
    fmas += contains(l, "vfmadd231ps") && contains(l, "%zmm") && !contains(l, "(%rsp)");
  }
  CHECK(fmas >= static_cast<std::size_t>(targets::cpu::kPanelRows *
                                         targets::cpu::kPanelColumns / 16));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu tiled product: compiled for x86 levels without AVX-512, it still agrees",
          "[cpu][tiled-product]") {
  // The JIT compiles for the machine it runs on (-march=native); the 16-float vectors are then
  // two AVX2 registers, or four SSE ones. Built here for those levels (which this machine also
  // runs), the kernel agrees with the interpreter.
  const ProductShape shape{"epilogue, transposed a", true, false, true, false, true};
  const Body body = product_body(shape);
  const targets::cpu::KernelSource source = targets::cpu::render_kernel(body);
  REQUIRE(contains(source.code, "kiln_tiles<"));
  std::mt19937 rng(9);
  const kiln::testing::BodyCase c = product_case(shape, body, 2, 37, 45, 70, rng);
  const std::vector<double> expected = kiln::testing::expected_output(c);
  const auto dir = fresh_dir("tiled-product-levels");
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "product.cpp");
    out << targets::cpu::cpu_prelude() << source.code;
  }
  std::string flags = targets::cpu::JitCompiler::flags();
  const std::string native = "-march=native";
  REQUIRE(flags.find(native) != std::string::npos);
  for (const std::string level : {"x86-64-v3", "x86-64"}) {
    const std::string library = (dir / (level + ".so")).string();
    std::string level_flags = flags;
    level_flags.replace(level_flags.find(native), native.size(), "-march=" + level);
    const std::string command = "g++ " + level_flags + " " + (dir / "product.cpp").string() +
                                " -o " + library + " 2>&1";
    INFO(level);
    REQUIRE(std::system(command.c_str()) == 0);
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle != nullptr);
    targets::cpu::CompiledKernel kernel;
    kernel.fn = reinterpret_cast<decltype(kernel.fn)>(dlsym(handle, source.symbol.c_str()));
    REQUIRE(kernel.fn != nullptr);
    const std::vector<double> got = kiln::testing::run_cpu_kernel(kernel, source, c);
    REQUIRE(got.size() == expected.size());
    std::size_t wrong = 0;
    for (std::size_t e = 0; e < got.size(); ++e) {
      wrong += !(std::fabs(got[e] - expected[e]) <= 1e-4 * (1.0 + std::fabs(expected[e])));
    }
    CHECK(wrong == 0);
    dlclose(handle);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cpu tiled product: a thread with a small stack runs it", "[cpu][tiled-product]") {
  // A task's packs and sums take 1.2 MB: they live in heap scratch, so a caller's thread with a
  // 256 KB stack (smaller than them) runs the product to the same result.
  const ProductShape shape{"plain"};
  const Body body = product_body(shape);
  const std::vector<targets::cpu::KernelSource> sources = {targets::cpu::render_kernel(body)};
  REQUIRE(contains(sources[0].code, "kiln_tiles<"));
  const auto cache = fresh_dir("tiled-product-stack");
  targets::cpu::JitCompiler jit(cache);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  std::mt19937 rng(11);
  // Past a task's rows, a block of columns and a block of k: every part of the scratch is used.
  const kiln::testing::BodyCase c = product_case(shape, body, 1, 400, 300, 300, rng);
  const std::vector<double> expected = kiln::testing::expected_output(c);
  struct Run {
    const targets::cpu::CompiledKernel* kernel;
    const targets::cpu::KernelSource* source;
    const kiln::testing::BodyCase* c;
    std::vector<double> got;
  } run{&kernels[0], &sources[0], &c, {}};
  targets::cpu::set_threads(1);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  REQUIRE(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, [](void* arg) -> void* {
            auto* r = static_cast<Run*>(arg);
            r->got = kiln::testing::run_cpu_kernel(*r->kernel, *r->source, *r->c);
            return nullptr;
          }, &run) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  targets::cpu::set_threads(0);
  REQUIRE(run.got.size() == expected.size());
  std::size_t wrong = 0;
  for (std::size_t e = 0; e < expected.size(); ++e) {
    wrong += !(std::fabs(run.got[e] - expected[e]) <= 2e-4 * (1.0 + std::fabs(expected[e])));
  }
  CHECK(wrong == 0);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cpu tiled product: the graph's matmuls, fused, are tiled products and agree",
          "[cpu][tiled-product]") {
  // matmul writes a broadcast Mul and a SumReduce; the fusion rules inline the Mul into the
  // reduction (inline_input). The fused Body of a plain, a batched and a Linear-layer product
  // (x times the transposed weights) is recognized and agrees with the interpreter.
  const Expr m = Expr::dim("m");
  struct Case {
    std::string label;
    std::vector<Expr> x, w;
    bool transposed_w;
  };
  const std::vector<Case> cases = {{"matmul", {m, Expr(40)}, {Expr(40), Expr(70)}, false},
                                   {"batched", {Expr(3), m, Expr(20)}, {Expr(3), Expr(20), Expr(19)}, false},
                                   {"linear", {m, Expr(300)}, {Expr(33), Expr(300)}, true}};
  const auto cache = fresh_dir("tiled-product-graph");
  targets::cpu::JitCompiler jit(cache);
  targets::cpu::load_thread_pool(jit);
  std::mt19937 rng(13);
  for (const Case& k : cases) {
    INFO(k.label);
    GraphBuilder gb;
    GraphTensor x = gb.input("x", k.x);
    GraphTensor w = gb.input("w", k.w);
    matmul(x, k.transposed_w ? transpose(w, 0, 1) : w).output("y");
    const Graph& g = gb.graph();
    std::optional<NodeId> sum;
    for (NodeId id = 0; id < g.size(); ++id) {
      if (g.node(id).op == Op::SumReduce) sum = id;
    }
    REQUIRE(sum);
    const NodeId mul = g.inputs(*sum)[0].producer;
    REQUIRE(g.node(mul).op == Op::Mul);
    const Body fused = inline_input(one_op_body(g, *sum), 0, one_op_body(g, mul));
    INFO(to_text(fused));
    REQUIRE(tiled(fused));
    const targets::cpu::KernelSource source = targets::cpu::render_kernel(fused);
    CHECK(contains(source.code, "kiln_tiles<"));
    const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile({source});
    REQUIRE(kernels[0].fn != nullptr);
    for (std::int64_t rows : {1, 13, 100}) {
      kiln::testing::BodyCase c{k.label, fused, {}, {{"m", rows}}};
      std::uniform_real_distribution<double> value(-1.0, 1.0);
      for (std::size_t slot = 0; slot < fused.inputs().size(); ++slot) {
        const std::vector<Expr>& shape = g.node(g.inputs(mul)[slot].producer).shape;
        Expr elements = 1;
        for (const Expr& d : shape) elements = elements * d;
        std::vector<double> data(static_cast<std::size_t>(evaluate(elements, c.dims)));
        for (double& e : data) e = value(rng);
        c.inputs.push_back(data);
      }
      const std::vector<double> expected = kiln::testing::expected_output(c);
      for (int threads : {1, 2}) {
        targets::cpu::set_threads(threads);
        const std::vector<double> got = kiln::testing::run_cpu_kernel(kernels[0], source, c);
        REQUIRE(got.size() == expected.size());
        std::size_t wrong = 0;
        for (std::size_t e = 0; e < got.size(); ++e) {
          wrong += !(std::fabs(got[e] - expected[e]) <= 1e-4 * (1.0 + std::fabs(expected[e])));
        }
        INFO("rows " << rows << " threads " << threads);
        CHECK(wrong == 0);
      }
    }
  }
  targets::cpu::set_threads(0);
  std::filesystem::remove_all(cache);
}
