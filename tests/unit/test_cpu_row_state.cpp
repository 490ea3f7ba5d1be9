// targets/cpu: row-state reductions (row_state.hpp). Attention-shaped Bodies -- the online-
// softmax monoid (three state components), a plain sum over a c-invariant inner reduction
// (a fused matmul chain), causal and -inf masked rows -- compiled once and run at several
// values of their symbolic dims (below, at and past the key block, ragged) on one and two
// threads agree with the Body interpreter, the online softmax both in blocks of keys and key
// by key; the generated code has the row-state shape (state arrays, the shared work once per
// key, the rescaling once per key or per block, the column, max and weights' loops
// vectorized, masked keys skipping q.k); Bodies where it does not pay or apply keep the
// plain form.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/native.hpp"
#include "targets/cpu/codegen.hpp"
#include "targets/cpu/jit.hpp"
#include "targets/cpu/row_state.hpp"
#include "targets/cpu/threads.hpp"
#include "targets/node_homes.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/cpu_kernel_run.hpp"
#include "tests/unit/row_state_bodies.hpp"
#include "tests/unit/test_util.hpp"

using kiln::testing::fresh_dir;

using namespace kiln;
using namespace kiln::graph;
using kiln::testing::AttentionShape;
using kiln::testing::ScoreMask;
using kiln::testing::contains;

namespace {

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

struct Variant {
  std::string label;
  AttentionShape shape;
  DType dtype = DType::F32;
};

}  // namespace

TEST_CASE("cpu row state: attention-shaped reductions agree with the interpreter at several dims",
          "[cpu][row-state]") {
  std::vector<Variant> variants = {
      {"online softmax", {16, 16, ScoreMask::None, true}},
      {"online softmax causal", {16, 16, ScoreMask::Causal, true}},
      {"online softmax -inf mask", {8, 16, ScoreMask::Input, true}},
      {"online softmax d=64", {64, 64, ScoreMask::Causal, true}},
      {"online softmax d=64 c=48 computed values", {64, 48, ScoreMask::Causal, true, false, true}},
      {"online softmax c=80 -inf mask", {32, 80, ScoreMask::Input, true}},
      {"online softmax heads inside", {16, 16, ScoreMask::Causal, true, true}},
      {"online softmax heads inside -inf mask", {8, 16, ScoreMask::Input, true, true}},
      {"matmul chain", {16, 16, ScoreMask::None, false}},
      {"matmul chain causal", {8, 24, ScoreMask::Causal, false}},
      {"online softmax c=5", {3, 5, ScoreMask::None, true}},
      {"online softmax f64", {8, 16, ScoreMask::Input, true}, DType::F64},
      {"online softmax f16", {8, 16, ScoreMask::Causal, true}, DType::F16},
      {"online softmax bf16", {8, 16, ScoreMask::Input, true}, DType::BF16},
  };
  // Each Body rendered as chosen (f32 online softmax: in blocks of keys, for tiles of rows
  // with key products), in blocks row by row, and key by key.
  const std::vector<targets::cpu::RenderOptions> forms = {
      {}, {.key_products = false}, {.key_blocks = false}};
  std::vector<Body> bodies;
  std::vector<targets::cpu::KernelSource> sources;
  for (const Variant& v : variants) {
    bodies.push_back(kiln::testing::attention_body(v.shape, v.dtype));
    for (const targets::cpu::RenderOptions& form : forms) {
      sources.push_back(targets::cpu::render_kernel(bodies.back(), form));
      INFO(v.label << "\n" << sources.back().code);
      CHECK(contains(sources.back().code, "// row state of %"));
      const bool blocked = v.shape.softmax && v.dtype == DType::F32 && form.key_blocks;
      CHECK(contains(sources.back().code, ", keys in blocks of ") == blocked);
      CHECK(contains(sources.back().code, "with key products") == (blocked && form.key_products));
    }
  }
  const auto cache = fresh_dir("row-state");
  targets::cpu::JitCompiler jit(cache);
  targets::cpu::load_thread_pool(jit);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile(sources);
  std::mt19937 rng(11);
  for (std::size_t v = 0; v < variants.size(); ++v) {
    // seq around the key block and the row tiles: below them, ragged (a last block of 1, 18
    // and 11 keys: below and past a pass of key products), a multiple, ragged past two blocks.
    for (std::int64_t heads : {1, 3}) {
      for (std::int64_t seq : {1, 2, 7, 33, 50, 64, 75}) {
        if (heads > 1 && seq > 33) continue;  // the interpreter's time
        const kiln::testing::BodyCase c = kiln::testing::attention_case(
            variants[v].label, bodies[v], variants[v].shape, heads, seq, rng);
        const std::vector<double> expected = kiln::testing::expected_output(c);
        for (int threads : {1, 2}) {
          targets::cpu::set_threads(threads);
          std::vector<std::vector<double>> outputs;
          for (std::size_t form = 0; form < forms.size(); ++form) {
            const std::size_t k = forms.size() * v + form;
            REQUIRE(kernels[k].fn != nullptr);
            INFO(c.label << " threads=" << threads << "\n" << sources[k].code);
            outputs.push_back(kiln::testing::run_cpu_kernel(kernels[k], sources[k], c));
            const std::vector<double>& got = outputs.back();
            REQUIRE(got.size() == expected.size());
            // Half types: both round every node, but the score's reduction vectorizes (another
            // summation order), and a last-place difference there moves the weights.
            const double tolerance = variants[v].dtype == DType::F32 ? 2e-5 : 4 * kiln::testing::case_tolerance(variants[v].dtype);
            std::size_t wrong = 0, first = 0;
            for (std::size_t e = 0; e < got.size(); ++e) {
              const bool same = got[e] == expected[e] ||
                                std::fabs(got[e] - expected[e]) <= tolerance * (1.0 + std::fabs(expected[e]));
              if (!same && wrong++ == 0) first = e;
            }
            INFO("first wrong element " << first << ": " << got[first] << " vs " << expected[first]);
            CHECK(wrong == 0);
          }
          // The blocked and the key-by-key folds agree with each other too (no NaN in any).
          for (std::size_t form = 0; form + 1 < forms.size(); ++form) {
            std::size_t apart = 0;
            for (std::size_t e = 0; e < outputs[form].size(); ++e) {
              apart += !(std::fabs(outputs[form][e] - outputs.back()[e]) <=
                         4e-5 * (1.0 + std::fabs(outputs.back()[e])));
            }
            INFO(c.label << " threads=" << threads << " form " << form);
            CHECK(apart == 0);
          }
        }
      }
    }
  }
  targets::cpu::set_threads(0);
  std::filesystem::remove_all(cache);
}

TEST_CASE("cpu row state: row inputs, a second reduction and work after the reduction",
          "[cpu][row-state]") {
  // value[i, c] = sum_j score_j * v[j, c] * w[c] * scale_c + (sum_k v[k, c]) * w[c], with
  // score_j = sum_t x[i, t] * x[j, t] (shared by every c) and scale_c = sum_t u[c, t]: w[c] and
  // scale_c are read by the row-state reduction (arrays, computed before it), the second
  // reduction has no shared work (computed plainly, after), and w[c] is read again after it.
  const std::int64_t E = 8, D = 4;
  const DType f = DType::F32;
  BodyBuilder b({f, f, f, f});
  const Expr seq = Expr::dim("seq");
  const Expr i = b.output_loop(seq), c = b.output_loop(E);
  const std::string j = b.reduce_var(), t = b.reduce_var(), k = b.reduce_var(), s = b.reduce_var();
  const ScalarId scale = b.reduce(b.sum_monoid(f), s, D, {b.load(3, c * D + Expr::dim(s))}, f);
  const ScalarId w = b.load(2, c);
  const ScalarId score = b.reduce(
      b.sum_monoid(f), t, D,
      {b.binary(ScalarOp::Mul, b.load(0, i * D + Expr::dim(t)), b.load(0, Expr::dim(j) * D + Expr::dim(t)))}, f);
  const ScalarId y = b.binary(ScalarOp::Mul, b.binary(ScalarOp::Mul, b.load(1, Expr::dim(j) * E + c), w), scale);
  const ScalarId first = b.reduce(b.sum_monoid(f), j, seq, {b.binary(ScalarOp::Mul, score, y)}, f);
  const ScalarId second = b.reduce(b.sum_monoid(f), k, seq, {b.load(1, Expr::dim(k) * E + c)}, f);
  const Body body = b.finish(b.binary(ScalarOp::Add, first, b.binary(ScalarOp::Mul, second, w)),
                             seq * E, i * E + c);

  const std::optional<targets::cpu::RowStatePlan> plan =
      targets::cpu::plan_row_state(body, targets::NodeHomes(body));
  REQUIRE(plan);
  CHECK(plan->row_inputs.size() == 2);  // w[c] and scale_c
  const targets::cpu::KernelSource source = targets::cpu::render_kernel(body);
  INFO(source.code);
  for (ScalarId id : plan->row_inputs) {
    CHECK(contains(source.code, "float p" + std::to_string(id) + "[8];"));
  }
  const auto cache = fresh_dir("row-state-inputs");
  targets::cpu::JitCompiler jit(cache);
  const std::vector<targets::cpu::CompiledKernel> kernels = jit.compile({source});
  REQUIRE(kernels[0].fn != nullptr);
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (std::int64_t n : {1, 4, 17}) {
    kiln::testing::BodyCase one{"seq=" + std::to_string(n), body, {}, {{"seq", n}}};
    for (std::int64_t size : {n * D, n * E, E, E * D}) {
      std::vector<double> data(static_cast<std::size_t>(size));
      for (double& x : data) x = value(rng);
      one.inputs.push_back(data);
    }
    INFO(one.label);
    const std::vector<double> expected = kiln::testing::expected_output(one);
    const std::vector<double> got = kiln::testing::run_cpu_kernel(kernels[0], source, one);
    REQUIRE(got.size() == expected.size());
    for (std::size_t e = 0; e < got.size(); ++e) {
      INFO("element " << e);
      CHECK(std::fabs(got[e] - expected[e]) <= 2e-5 * (1.0 + std::fabs(expected[e])));
    }
  }
  std::filesystem::remove_all(cache);
}

TEST_CASE("cpu row state: key by key, the online softmax keeps max and sum scalar, rescales "
          "once per key",
          "[cpu][row-state]") {
  const Body body = kiln::testing::attention_body({16, 32, ScoreMask::Causal, true});
  const targets::NodeHomes homes(body);
  const std::optional<targets::cpu::RowStatePlan> plan = targets::cpu::plan_row_state(body, homes);
  REQUIRE(plan);
  CHECK(plan->columns == 32);
  CHECK(plan->column_var == body.loops().back().var);
  CHECK(plan->shared_element == std::vector<bool>{true, false});  // x_j shared, y_j per column
  CHECK(plan->shared_lift == std::vector<bool>{true, true, false});
  CHECK(plan->shared_state == std::vector<bool>{true, true, false});  // m, l scalars; a per column
  CHECK(plan->row_inputs.empty());
  CHECK(!plan->shared_nodes.empty());  // the score reduction, the mask
  CHECK(!plan->shared_combine.empty());
  CHECK(plan->key_block == targets::cpu::kKeyBlock);

  const std::string code = targets::cpu::render_kernel(body, {.key_blocks = false}).code;
  INFO(code);
  const std::string a = "a" + std::to_string(plan->reduce) + "_";
  CHECK(contains(code, "float " + a + "0 = (-__builtin_inff());"));
  CHECK(contains(code, "float " + a + "1 = (0.0f);"));
  CHECK(contains(code, "float " + a + "2[32];"));
  // exp2 twice per key (both sides' rescaling), outside the column loop; the score's
  // multiply-add loop appears once.
  CHECK(count(code, "kiln_exp2f(") == 2);
  const std::string column_loop = "for (kiln_i64 L_" + plan->column_var + " = 0;";
  const std::size_t key_loop = code.find("for (kiln_i64 L_" + body.scalar(plan->reduce).var);
  REQUIRE(key_loop != std::string::npos);
  const std::size_t inner = code.find(column_loop, key_loop);
  REQUIRE(inner != std::string::npos);
  CHECK(code.rfind("kiln_exp2f(", inner) > key_loop);
  CHECK(code.find("kiln_exp2f(", inner) == std::string::npos);
  CHECK(count(code, "reduction(+:") == 1);
  CHECK(code.find("reduction(+:") > key_loop);
  CHECK(code.find("reduction(+:") < inner);
}

TEST_CASE("cpu row state: in blocks of keys, row by row, the online softmax rescales once per "
          "block",
          "[cpu][row-state]") {
  const Body body = kiln::testing::attention_body({16, 32, ScoreMask::Causal, true});
  const std::optional<targets::cpu::RowStatePlan> plan =
      targets::cpu::plan_row_state(body, targets::NodeHomes(body));
  REQUIRE(plan);
  REQUIRE(plan->key_block == targets::cpu::kKeyBlock);
  CHECK(plan->tiles_rows);
  const std::string code = targets::cpu::render_kernel(body, {.key_products = false}).code;
  INFO(code);
  const std::string id = std::to_string(plan->reduce);
  const std::string block = std::to_string(targets::cpu::kKeyBlock);
  // The state as key by key, for each row of a tile of kRowTile rows that take each block in
  // turn; the block's scores and weights in arrays of the block's keys.
  const std::string tile = std::to_string(targets::cpu::kRowTile);
  CHECK(contains(code, "float a" + id + "_0[" + tile + "];"));
  CHECK(contains(code, "a" + id + "_0[ki] = (-__builtin_inff());"));
  CHECK(contains(code, "float a" + id + "_2[" + tile + "][32];"));
  CHECK(contains(code, "for (kiln_i64 kt_" + body.loops()[1].var + " = 0; kt_" +
                           body.loops()[1].var + " < D_seq; kt_" + body.loops()[1].var + " += " +
                           tile + ") {"));
  CHECK(contains(code, "float ks" + id + "[" + block + "];"));
  CHECK(contains(code, "float kw" + id + "[" + block + "];"));
  // The ragged last block: the keys of a block are the block's size or what is left.
  CHECK(contains(code, "const kiln_i64 kn" + id + " = kiln_imin(" + block + ", ke" + id + " - kb" + id + ");"));
  // Two exp2 in the text: the state's rescale, once a block, and the weights' loop; neither in
  // a column loop (the weighted values' loop reads the weights array).
  CHECK(count(code, "kiln_exp2f(") == 2);
  const std::size_t blocks = code.find("for (kiln_i64 kb" + id);
  REQUIRE(blocks != std::string::npos);
  const std::size_t weighted = code.find("const float w = kw" + id + "[kj" + id + "];");
  REQUIRE(weighted != std::string::npos);
  CHECK(code.find("kiln_exp2f(", weighted) == std::string::npos);
  const std::size_t rescale = code.find("a" + id + "_2[ki][L_" + plan->column_var + "] *= kc" + id + ";");
  CHECK(rescale > blocks);
  CHECK(rescale < weighted);
  // q.k for kKeyGroup keys in one loop, an accumulator each; the weighted values of
  // kValueGroup keys in one pass over the columns; the keys left after the groups one by one.
  CHECK(contains(code, "for (; kf" + id + " + " + std::to_string(targets::cpu::kKeyGroup) + " <= kn" + id));
  CHECK(contains(code, "_g" + std::to_string(targets::cpu::kKeyGroup - 1) + " = (0.0f);"));
  CHECK(contains(code, "for (; kv" + id + " + " + std::to_string(targets::cpu::kValueGroup) + " <= kn" + id));
  CHECK(contains(code, "for (kiln_i64 kj" + id + " = kf" + id + "; kj" + id + " < kn" + id));
  CHECK(contains(code, "for (kiln_i64 kj" + id + " = kv" + id + "; kj" + id + " < kn" + id));
  // The causal select guards q.k: a key it masks skips the dot product and scores -inf.
  REQUIRE(plan->key_guard);
  CHECK(plan->guard_selects);
  CHECK(contains(code, "if (kg" + id + "[kj" + id + "]) {"));
  CHECK(contains(code, "ks" + id + "[kj" + id + "] = kg" + id + "[kj" + id + "] ? -__builtin_inff() : "));
  // An additive mask guards it too (the mask's -inf), and no mask guards nothing.
  for (ScoreMask mask : {ScoreMask::Input, ScoreMask::None}) {
    const Body other = kiln::testing::attention_body({16, 32, mask, true});
    const std::optional<targets::cpu::RowStatePlan> p =
        targets::cpu::plan_row_state(other, targets::NodeHomes(other));
    REQUIRE(p);
    CHECK(p->key_block == targets::cpu::kKeyBlock);
    CHECK(p->key_guard.has_value() == (mask == ScoreMask::Input));
    CHECK(!p->guard_selects);
  }
}

TEST_CASE("cpu row state: in blocks of keys, tiles of rows compute the inner reductions that are "
          "key products as a small matrix product",
          "[cpu][row-state]") {
  const Body body = kiln::testing::attention_body({16, 32, ScoreMask::Causal, true});
  const std::optional<targets::cpu::RowStatePlan> plan =
      targets::cpu::plan_row_state(body, targets::NodeHomes(body));
  REQUIRE(plan);
  REQUIRE(plan->key_products.size() == 1);
  const targets::cpu::KeyProduct& p = plan->key_products[0];
  CHECK(p.reduce == plan->key_reductions[0]);
  CHECK(p.extent == 16);
  // q's load is the row operand, k's the key operand, whichever way the product reads them.
  CHECK(body.scalar(p.row_operand).op == ScalarOp::Load);
  CHECK(body.scalar(p.row_operand).slot == 0);
  CHECK(body.scalar(p.key_operand).op == ScalarOp::Load);
  CHECK(body.scalar(p.key_operand).slot == 1);

  const std::string code = targets::cpu::render_kernel(body).code;
  INFO(code);
  const std::string id = std::to_string(plan->reduce), n = std::to_string(p.reduce);
  const std::string rows = std::to_string(targets::cpu::kKeyTileRows);
  const std::string row = body.loops()[1].var;
  // Rows kKeyTileRows at a time, a state per row; the row operands set out [t][row] once per
  // tile, before the blocks of keys.
  CHECK(contains(code, "for (kiln_i64 kt_" + row + " = 0; kt_" + row + " < D_seq; kt_" + row +
                           " += " + rows + ") {"));
  CHECK(contains(code, "float a" + id + "_2[" + rows + "][32];"));
  const std::size_t operands = code.find("float ka" + n + "[16][" + rows + "]");
  const std::size_t blocks = code.find("for (kiln_i64 kb" + id);
  REQUIRE(operands != std::string::npos);
  REQUIRE(blocks != std::string::npos);
  CHECK(operands < blocks);
  // kKeyTileKeys keys by the tile's vectors of rows, an accumulator vector each, adding row
  // operands times a key's operand (read once for the vectors); a short block's keys clamped
  // to its last.
  const std::string last = std::to_string(targets::cpu::kKeyTileKeys - 1);
  const std::string last_vector =
      std::to_string(targets::cpu::kKeyTileRows / targets::cpu::kLanes - 1);
  CHECK(contains(code, "kiln_f32x16 kd" + n + "_" + last + "_" + last_vector + " = {};"));
  CHECK(contains(code, "kd" + n + "_" + last + "_" + last_vector + " += q" + last_vector +
                           " * kk;"));
  CHECK(contains(code, "kiln_imin(kp" + n + " + " + last + ", kn" + id + " - 1)"));
  // The max, the rescale and the weights on vectors of rows, the exps kiln_exp2_x16.
  CHECK(contains(code, "const kiln_f32x16 w = e < km" + id + " ? kiln_exp2_x16((e - km" + id));
  // The values are a plain load along the columns: read where they are, not copied.
  REQUIRE(plan->value_load);
  CHECK(*plan->value_load == body.scalar(plan->reduce).args[1]);
  CHECK(!contains(code, "float kv" + id + "["));
  {
    // A computed value (v * 2) is copied per block before it is weighted.
    const Body computed =
        kiln::testing::attention_body({16, 32, ScoreMask::Causal, true, false, true});
    const std::optional<targets::cpu::RowStatePlan> c_plan =
        targets::cpu::plan_row_state(computed, targets::NodeHomes(computed));
    REQUIRE(c_plan);
    CHECK(!c_plan->key_products.empty());
    CHECK(!c_plan->value_load);
    CHECK(contains(targets::cpu::render_kernel(computed).code,
                   "float kv" + std::to_string(c_plan->reduce) + "["));
  }
  // The weighted values of kValueRows rows by the 32 columns' two vectors held in vectors
  // across the block's keys.
  const std::string last_row = std::to_string(targets::cpu::kValueRows - 1);
  CHECK(contains(code, "y" + last_row + "_1 += x1 * w" + last_row + ";"));
  // The rows are the lanes: no sum or max across lanes anywhere (no horizontal reductions).
  CHECK(!contains(code, "reduction("));
  // A block the mask hides from every row of the tile is skipped; the scan of its mask ends
  // at the first chunk of keys a row sees.
  CHECK(contains(code, "if (!seen && finite) continue;"));
  CHECK(contains(code, " && !seen; kgc" + id));

  // The key products' loop runs on 16-float FMAs where the machine has AVX-512
  // (-march=native), each key's operand broadcast into a register once and used by an FMA for
  // each vector of rows.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    const auto dir = fresh_dir("row-state-asm");
    std::filesystem::create_directories(dir);
    {
      std::ofstream out(dir / "attention.cpp");
      out << targets::cpu::cpu_prelude() << code;
    }
    const std::string command = std::string("g++ ") + targets::cpu::JitCompiler::flags() +
                                " -S " + (dir / "attention.cpp").string() + " -o " +
                                (dir / "attention.s").string() + " 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    std::ifstream in(dir / "attention.s");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::size_t shared_broadcasts = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::size_t comma = lines[i].rfind(',');
      if (!contains(lines[i], "vbroadcastss") || comma == std::string::npos) continue;
      const std::string reg = lines[i].substr(lines[i].find('%', comma));
      std::size_t fmas = 0;
      for (std::size_t j = i + 1; j < std::min(lines.size(), i + 4); ++j) {
        fmas += contains(lines[j], "vfmadd") && contains(lines[j], "ps") &&
                contains(lines[j], reg + ",") && contains(lines[j], "%zmm");
      }
      shared_broadcasts += reg.find("%zmm") != std::string::npos &&
                           fmas >= static_cast<std::size_t>(targets::cpu::kKeyTileRows /
                                                            targets::cpu::kLanes);
    }
    CHECK(shared_broadcasts >= static_cast<std::size_t>(targets::cpu::kKeyTileKeys));
    std::filesystem::remove_all(dir);
  }

  // Loops (i, head, c): the keys differ between heads, so the tile is of query positions i;
  // the heads go outside the tiles (both collapsed for the threads), so that a head's keys
  // and values stay in cache for all its tiles.
  {
    const Body inside = kiln::testing::attention_body({16, 32, ScoreMask::Causal, true, true});
    const std::optional<targets::cpu::RowStatePlan> i_plan =
        targets::cpu::plan_row_state(inside, targets::NodeHomes(inside));
    REQUIRE(i_plan);
    REQUIRE(i_plan->key_products.size() == 1);
    CHECK(i_plan->key_tile_loop == 0);
    const std::string inside_code = targets::cpu::render_kernel(inside).code;
    INFO(inside_code);
    const std::string i = inside.loops()[0].var, h = inside.loops()[1].var;
    const std::size_t tile = inside_code.find("for (kiln_i64 kt_" + i + " = 0; kt_" + i +
                                              " < D_seq; kt_" + i + " += " + rows + ") {");
    const std::size_t heads = inside_code.find("for (kiln_i64 L_" + h + " = 0;");
    REQUIRE(tile != std::string::npos);
    REQUIRE(heads != std::string::npos);
    CHECK(heads < tile);
    CHECK(contains(inside_code, "#pragma omp parallel for collapse(2)"));
  }

  // Not a key product: a factor that reads both the row and the key (q[i, t] * (k[j, t] *
  // q[i, 0])); the rows then take each block row by row.
  {
    const DType f = DType::F32;
    BodyBuilder b({f, f, f});
    const Expr heads = Expr::dim("heads"), seq = Expr::dim("seq");
    const Expr h = b.output_loop(heads), i = b.output_loop(seq), c = b.output_loop(Expr(16));
    const std::string j = b.reduce_var(), t = b.reduce_var();
    const ScalarId q = b.load(0, (h * seq + i) * 16 + Expr::dim(t));
    const ScalarId k = b.load(1, (h * seq + Expr::dim(j)) * 16 + Expr::dim(t));
    const ScalarId q0 = b.load(0, (h * seq + i) * 16);
    const ScalarId dot = b.reduce(b.sum_monoid(f), t, Expr(16),
                                  {b.binary(ScalarOp::Mul, q, b.binary(ScalarOp::Mul, k, q0))}, f);
    const ScalarId y = b.load(2, (h * seq + Expr::dim(j)) * 16 + c);
    const ScalarId value = b.reduce(kiln::testing::online_softmax_monoid(b, f), j, seq, {dot, y}, f);
    const Body other = b.finish(value, heads * seq * 16, (h * seq + i) * 16 + c);
    const std::optional<targets::cpu::RowStatePlan> q_plan =
        targets::cpu::plan_row_state(other, targets::NodeHomes(other));
    REQUIRE(q_plan);
    CHECK(q_plan->key_block == targets::cpu::kKeyBlock);
    CHECK(q_plan->tiles_rows);
    CHECK(q_plan->key_products.empty());
    CHECK(!contains(targets::cpu::render_kernel(other).code, "with key products"));
  }
}

TEST_CASE("cpu row state: the column loop inside the key loop vectorizes, and in blocks of keys "
          "the max, weights and weighted values' loops",
          "[cpu][row-state]") {
  struct Form {
    bool softmax;
    targets::cpu::RenderOptions options;
    std::vector<std::string> after;  // each loop: texts found in turn, the last its `for`
  };
  const targets::cpu::RenderOptions keywise{.key_blocks = false}, rowwise{.key_products = false};
  const std::vector<Form> forms = {
      {true, keywise, {"for (kiln_i64 L_r0", "for (kiln_i64 L_o2"}},
      {false, {}, {"for (kiln_i64 L_r0", "for (kiln_i64 L_o2"}},
      {true, rowwise, {"reduction(max: kx", "for ("}},
      {true, rowwise, {"reduction(+: kt", "for ("}},
      {true, rowwise, {"const float w = kw", "for (kiln_i64 L_o2"}},
      // With key products: the loop over the tile's rows of the scores.
      {true, {}, {"float ks", "for (kiln_i64 kj", "for (kiln_i64 ki"}},
  };
  const std::string prelude = targets::cpu::cpu_prelude();
  for (const Form& form : forms) {
    const Body body = kiln::testing::attention_body({16, 64, ScoreMask::Causal, form.softmax});
    const std::string code = targets::cpu::render_kernel(body, form.options).code;
    // The lines of the loop in the file below (GCC reports a loop at its first statement or
    // its condition).
    std::size_t inner = 0;
    for (const std::string& text : form.after) {
      inner = code.find(text, inner);
      INFO(text << "\n" << code);
      REQUIRE(inner != std::string::npos);
    }
    const std::size_t indent = inner - code.rfind('\n', inner) - 1;
    const std::size_t end = code.find("\n" + std::string(indent, ' ') + "}", inner);
    REQUIRE(end != std::string::npos);
    const std::size_t first = count(prelude, "\n") + count(code.substr(0, inner), "\n") + 1;
    const std::size_t last = count(prelude, "\n") + count(code.substr(0, end), "\n") + 2;
    const auto dir = fresh_dir("row-state-vec");
    std::filesystem::create_directories(dir);
    const auto file = dir / "attention.cpp";
    {
      std::ofstream out(file);
      out << prelude << code;
    }
    const std::string command = std::string("g++ ") + targets::cpu::JitCompiler::flags() +
                                " -fopt-info-vec-optimized -c " + file.string() + " -o " +
                                (dir / "attention.o").string() + " 2>&1";
    std::string report;
    if (FILE* pipe = ::popen(command.c_str(), "r")) {
      char text[512];
      while (std::fgets(text, sizeof text, pipe)) report += text;
      CHECK(::pclose(pipe) == 0);
    }
    INFO(code << report);
    INFO("loop after " << form.after.front() << " at lines " << first << " to " << last);
    bool vectorized = false;
    std::istringstream lines(report);
    for (std::string l; std::getline(lines, l);) {
      const std::size_t at = l.find("attention.cpp:");
      if (at == std::string::npos || !contains(l, "loop vectorized")) continue;
      const std::size_t number = std::stoul(l.substr(at + 14));
      vectorized = vectorized || (number >= first && number <= last);
    }
    CHECK(vectorized);
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("cpu row state: not taken where no work is shared, the columns are too few for shared "
          "loads or too many",
          "[cpu][row-state]") {
  // sum_j v[j, c]: nothing in the key loop is the same for every column.
  {
    BodyBuilder b({DType::F32});
    const Expr seq = Expr::dim("seq");
    const Expr i = b.output_loop(seq), c = b.output_loop(Expr(16));
    const std::string j = b.reduce_var();
    const ScalarId total = b.reduce(b.sum_monoid(DType::F32), j, seq,
                                    {b.load(0, Expr::dim(j) * 16 + c)}, DType::F32);
    const Body body = b.finish(total, seq * 16, i * 16 + c);
    CHECK(!targets::cpu::plan_row_state(body, targets::NodeHomes(body)));
    CHECK(!contains(targets::cpu::render_kernel(body).code, "row state"));
  }
  // A matmul row: the shared work is a load of A, which pays from a vector's width of columns.
  for (std::int64_t columns : {targets::cpu::kMinColumnsForSharedLoads - 1,
                               targets::cpu::kMinColumnsForSharedLoads}) {
    BodyBuilder b({DType::F32, DType::F32});
    const Expr seq = Expr::dim("seq");
    const Expr i = b.output_loop(seq), c = b.output_loop(columns);
    const std::string k = b.reduce_var();
    const ScalarId product = b.binary(ScalarOp::Mul, b.load(0, i * 32 + Expr::dim(k)),
                                      b.load(1, Expr::dim(k) * columns + c));
    const Body body = b.finish(b.reduce(b.sum_monoid(DType::F32), k, Expr(32), {product}, DType::F32),
                               seq * columns, i * columns + c);
    INFO(columns << " columns");
    CHECK(targets::cpu::plan_row_state(body, targets::NodeHomes(body)).has_value() ==
          (columns >= targets::cpu::kMinColumnsForSharedLoads));
  }
  // More columns than the state arrays hold.
  {
    const Body body = kiln::testing::attention_body(
        {16, targets::cpu::kMaxRowStateColumns + 1, ScoreMask::None, true});
    CHECK(!targets::cpu::plan_row_state(body, targets::NodeHomes(body)));
  }
  // A symbolic innermost extent; a constant one with no loop outside it to share among threads.
  for (bool symbolic : {true, false}) {
    BodyBuilder b({DType::F32, DType::F32});
    const Expr n = symbolic ? Expr::dim("n") : Expr(16);
    const Expr rows = symbolic ? b.output_loop(Expr(4)) : Expr(0);
    const Expr c = b.output_loop(n);
    const std::string j = b.reduce_var();
    const ScalarId product = b.binary(ScalarOp::Mul, b.unary(ScalarOp::Exp2, b.load(0, Expr::dim(j))),
                                      b.load(1, Expr::dim(j) * n + c));
    const Body body = b.finish(b.reduce(b.sum_monoid(DType::F32), j, n, {product}, DType::F32),
                               4 * n, rows * n + c);
    INFO((symbolic ? "symbolic" : "one loop"));
    CHECK(!targets::cpu::plan_row_state(body, targets::NodeHomes(body)));
  }
}
