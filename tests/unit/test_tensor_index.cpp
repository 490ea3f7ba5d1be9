// GraphTensor movement, indexing and attention-position ops (slice, pad, concat, gather,
// scatter, iota, arange, causal_mask, rotary) and broadcast matmul, run by the reference
// interpreter against hand-computed values and direct loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::user_error_of;

using kiln::testing::random_tensor;
using kiln::testing::tensor;
using kiln::testing::dims;
using kiln::testing::run_all;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using Shape = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("tensor: slice is a view and reads the chosen range [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 5}), DType::F64);
  const std::size_t before = b.graph().size();
  GraphTensor s = slice(x, 1, 1, 4);
  CHECK(b.graph().size() == before);
  CHECK(s.shape() == dims({2, 3}));
  s.output("s");
  slice(slice(x, 0, 1, 2), 1, 3, 5).output("corner");
  auto out = run_all(b, {{"x", tensor({2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14})}});
  CHECK(out.at("s").data == std::vector<double>{1, 2, 3, 11, 12, 13});
  CHECK(out.at("corner").data == std::vector<double>{13, 14});
}

TEST_CASE("tensor: pad with zero, a value, -inf and +inf, and the slice round trip [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 2}), DType::F64);
  GraphTensor i = b.input("i", dims({3}), DType::I32);
  const std::size_t before = b.graph().size();
  GraphTensor zero = pad(x, 1, 1, 2);
  CHECK(b.graph().size() == before);  // a view
  CHECK(zero.shape() == dims({2, 5}));
  zero.output("zero");
  pad(x, 0, 1, 0, 3.5).output("value");
  pad(x, 1, 0, 1, -kInf).output("neg_inf");
  pad(x, 1, 1, 0, kInf).output("pos_inf");
  pad(i, 0, 2, 1, 7).output("int");
  slice(pad(x, 1, 2, 3, 9.0), 1, 2, 4).output("round");
  const std::vector<double> xs = {1, kInf, -2, 0.5};
  auto out = run_all(b, {{"x", tensor({2, 2}, xs)}, {"i", tensor({3}, {4, 5, 6}, DType::I32)}});
  CHECK(out.at("zero").data == std::vector<double>{0, 1, kInf, 0, 0, 0, -2, 0.5, 0, 0});
  CHECK(out.at("value").data == std::vector<double>{3.5, 3.5, 1, kInf, -2, 0.5});
  CHECK(out.at("neg_inf").data == std::vector<double>{1, kInf, -kInf, -2, 0.5, -kInf});
  CHECK(out.at("pos_inf").data == std::vector<double>{kInf, 1, kInf, kInf, -2, 0.5});
  CHECK(out.at("int").data == std::vector<double>{7, 7, 4, 5, 6, 7});
  CHECK(out.at("round").data == xs);
}

TEST_CASE("tensor: concat joins along a dim, and slices concat back [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}), DType::F64);
  GraphTensor y = b.input("y", dims({1, 3}), DType::F64);
  GraphTensor z = b.input("z", dims({2, 1}), DType::F64);
  GraphTensor rows = concat({x, y, x}, 0);
  CHECK(rows.shape() == dims({5, 3}));
  rows.output("rows");
  concat({z, x}, 1).output("cols");
  concat({slice(x, 1, 0, 1), slice(x, 1, 1, 3)}, 1).output("round");
  Tensor tx = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  auto out =
      run_all(b, {{"x", tx}, {"y", tensor({1, 3}, {7, 8, 9})}, {"z", tensor({2, 1}, {-1, -2})}});
  CHECK(out.at("rows").data == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6});
  CHECK(out.at("cols").data == std::vector<double>{-1, 1, 2, 3, -2, 4, 5, 6});
  CHECK(out.at("round").data == tx.data);
}

TEST_CASE("tensor: concat over symbolic sizes (a KV cache append) [graph]") {
  GraphBuilder b;
  Expr past = Expr::dim("past");
  Expr seq = Expr::dim("seq");
  GraphTensor cache = b.input("cache", {past, Expr(2)}, DType::F64);
  GraphTensor fresh = b.input("new", {seq, Expr(2)}, DType::F64);
  GraphTensor all = concat({cache, fresh}, 0);
  CHECK(all.shape()[0] == past + seq);
  all.output("y");
  auto out = run_all(b, {{"cache", tensor({2, 2}, {1, 2, 3, 4})}, {"new", tensor({1, 2}, {5, 6})}},
                     {{"past", 2}, {"seq", 1}});
  CHECK(out.at("y").shape == Shape{3, 2});
  CHECK(out.at("y").data == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("tensor: gather looks up rows, scatter replaces them [graph]") {
  GraphBuilder b;
  GraphTensor table = b.input("table", dims({4, 2}), DType::F64);
  GraphTensor ids = b.input("ids", dims({2, 2}), DType::I32);
  GraphTensor e = gather(table, ids);
  CHECK(e.shape() == dims({2, 2, 2}));
  e.output("emb");
  GraphTensor at = b.input("at", dims({2}), DType::I64);
  GraphTensor rows = b.input("rows", dims({2, 2}), DType::F64);
  scatter(table, at, rows).output("upd");
  Tensor tt = tensor({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  auto out = run_all(b, {{"table", tt},
                         {"ids", tensor({2, 2}, {3, 0, 3, 2}, DType::I32)},
                         {"at", tensor({2}, {2, 0}, DType::I64)},
                         {"rows", tensor({2, 2}, {-1, -2, -3, -4})}});
  CHECK(out.at("emb").data == std::vector<double>{30, 31, 0, 1, 30, 31, 20, 21});
  CHECK(out.at("upd").data == std::vector<double>{-3, -4, 10, 11, -1, -2, 30, 31});
}

TEST_CASE("tensor: iota and arange [graph]") {
  GraphBuilder b;
  Expr n = Expr::dim("n");
  b.iota(n).output("iota");
  b.iota(4, DType::F32).output("iota_f");
  b.arange(2, 11, 3).output("up");
  b.arange(5, 0, -2, DType::I32).output("down");
  GraphTensor empty = b.arange(3, 3);
  CHECK(empty.shape() == dims({0}));
  auto out = run_all(b, {}, {{"n", 5}});
  CHECK(out.at("iota").dtype == DType::I64);
  CHECK(out.at("iota").data == std::vector<double>{0, 1, 2, 3, 4});
  CHECK(out.at("iota_f").data == std::vector<double>{0, 1, 2, 3});
  CHECK(out.at("up").data == std::vector<double>{2, 5, 8});
  CHECK(out.at("down").data == std::vector<double>{5, 3, 1});
}

TEST_CASE("tensor: causal_mask, with a KV-cache offset and a sliding window [graph]") {
  GraphBuilder b;
  b.causal_mask(3, 3).output("plain");
  b.causal_mask(2, 5, 3).output("offset");
  b.causal_mask(3, 5, 2, 2).output("window");
  Expr past = Expr::dim("past");
  Expr seq = Expr::dim("seq");
  b.causal_mask(seq, past + seq, past).output("symbolic");
  const double o = -kInf;
  auto out = run_all(b, {}, {{"past", 3}, {"seq", 2}});
  CHECK(out.at("plain").data == std::vector<double>{0, o, o, 0, 0, o, 0, 0, 0});
  // Queries at positions 3 and 4 see keys 0..3 and 0..4.
  CHECK(out.at("offset").data == std::vector<double>{0, 0, 0, 0, o, 0, 0, 0, 0, 0});
  CHECK(out.at("symbolic").shape == Shape{2, 5});
  CHECK(out.at("symbolic").data == out.at("offset").data);
  // Queries at positions 2, 3, 4 with window 2 see keys {1, 2}, {2, 3}, {3, 4}.
  CHECK(out.at("window").data == std::vector<double>{o, 0, 0, o, o, o, o, 0, 0, o, o, o, o, 0, 0});

  GraphBuilder empty_cache;  // past = 0: the first prefill
  empty_cache.causal_mask(seq, past + seq, past).output("m");
  auto first = run_all(empty_cache, {}, {{"past", 0}, {"seq", 2}});
  CHECK(first.at("m").data == std::vector<double>{0, o, 0, 0});
}

TEST_CASE("tensor: rotary matches a direct rotate-half loop [graph]") {
  const std::int64_t heads = 2, seq_len = 3, d = 6, h = d / 2;
  const double base = 500.0;
  GraphBuilder b;
  Expr seq = Expr::dim("seq");
  GraphTensor x = b.input("x", {Expr(heads), seq, Expr(d)}, DType::F64);
  GraphTensor pos_i = b.input("pos_i", {seq}, DType::I32);
  GraphTensor pos_f = b.input("pos_f", {seq}, DType::F64);
  rotary(x, pos_i, base).output("ri");
  rotary(x, pos_f, base).output("rf");
  Tensor tx = random_tensor({heads, seq_len, d}, 31);
  const std::vector<double> positions = {0, 5, 17};
  auto out = run_all(b,
                     {{"x", tx},
                      {"pos_i", tensor({seq_len}, positions, DType::I32)},
                      {"pos_f", tensor({seq_len}, positions)}},
                     {{"seq", seq_len}});
  REQUIRE(out.at("ri").shape == Shape{heads, seq_len, d});
  for (std::int64_t n = 0; n < heads; ++n) {
    for (std::int64_t s = 0; s < seq_len; ++s) {
      const double* row = &tx.data[static_cast<std::size_t>((n * seq_len + s) * d)];
      for (std::int64_t j = 0; j < d; ++j) {
        const std::int64_t i = j % h;
        const double angle = positions[s] * std::pow(base, -2.0 * i / d);
        const double rotated = j < h ? -row[j + h] : row[j - h];
        const double want = row[j] * std::cos(angle) + rotated * std::sin(angle);
        const auto k = static_cast<std::size_t>((n * seq_len + s) * d + j);
        INFO("head " << n << " pos " << positions[s] << " j " << j);
        CHECK(out.at("ri").data[k] == Approx(want).margin(1e-12));
        CHECK(out.at("rf").data[k] == Approx(want).margin(1e-12));
      }
    }
  }
  // Position 0 is the identity.
  for (std::int64_t j = 0; j < d; ++j) CHECK(out.at("ri").data[j] == Approx(tx.data[j]));
}

TEST_CASE("tensor: rotary on f32 keeps the dtype [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 4}), DType::F32);
  GraphTensor p = b.input("p", dims({2}), DType::I64);
  GraphTensor r = rotary(x, p);
  CHECK(r.dtype() == DType::F32);
  r.output("y");
  auto out = run_all(b, {{"x", tensor({2, 4}, {1, 0, 0, 0, 1, 0, 0, 0}, DType::F32)},
                         {"p", tensor({2}, {0, 1}, DType::I64)}});
  // Row 1: x = e0 at position 1: out[0] = cos(1), out[2] = x1 * sin(1) = sin(1).
  CHECK(out.at("y").data[4] == Approx(std::cos(1.0)).epsilon(1e-6));
  CHECK(out.at("y").data[6] == Approx(std::sin(1.0)).epsilon(1e-6));
  CHECK(out.at("y").data[0] == 1.0);
}

TEST_CASE("tensor: matmul broadcasts batch dims of any rank [graph]") {
  GraphBuilder b;
  GraphTensor a = b.input("a", dims({2, 1, 3, 4}), DType::F64);
  GraphTensor w = b.input("w", dims({3, 4, 5}), DType::F64);
  GraphTensor m = b.input("m", dims({3, 4}), DType::F64);
  GraphTensor y = matmul(a, w);
  CHECK(y.shape() == dims({2, 3, 3, 5}));
  y.output("y");
  matmul(m, w).output("z");  // [3, 4] x [3, 4, 5] -> [3, 3, 5]
  Tensor ta = random_tensor({2, 1, 3, 4}, 41), tw = random_tensor({3, 4, 5}, 42),
         tm = random_tensor({3, 4}, 43);
  auto out = run_all(b, {{"a", ta}, {"w", tw}, {"m", tm}});
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 5; ++j) {
          double want = 0, want_z = 0;
          for (int k = 0; k < 4; ++k) {
            want += ta.data[n * 12 + i * 4 + k] * tw.data[c * 20 + k * 5 + j];
            want_z += tm.data[i * 4 + k] * tw.data[c * 20 + k * 5 + j];
          }
          CHECK(out.at("y").data[((n * 3 + c) * 3 + i) * 5 + j] == Approx(want).epsilon(1e-12));
          if (n == 0) CHECK(out.at("z").data[(c * 3 + i) * 5 + j] == Approx(want_z).epsilon(1e-12));
        }
      }
    }
  }
}

TEST_CASE("tensor: misuse of movement and indexing ops is a UserError naming the op [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", dims({2, 3}));
  GraphTensor i = b.input("i", dims({2}), DType::I32);
  GraphTensor f = b.input("f", dims({2}));
  CHECK(contains(user_error_of([&] { slice(x, 1, 2, 5); }),
                 "slice: [2, 5) is not within dim 1 of [2, 3]"));
  CHECK(contains(user_error_of([&] { slice(x, 2, 0, 1); }), "slice: axis 2 is out of range"));
  CHECK(contains(user_error_of([&] { pad(x, 0, -1, 0); }), "pad: negative padding"));
  CHECK(contains(user_error_of([&] { pad(x, 0, 1, 0, NAN); }), "pad: a NaN pad value"));
  CHECK(contains(user_error_of([&] { pad(i, 0, 1, 0, INFINITY); }),
                 "pad: an infinite pad value needs a float tensor, got i32 [2]"));
  CHECK(contains(user_error_of([&] {
                   concat({x, f}, 0);
                 }),
                 "concat: along dim 0 needs one dtype and equal sizes in the other dims, got "
                 "f32 [2, 3], f32 [2]"));
  CHECK(contains(user_error_of([&] { concat({x, i}, 0); }), "concat"));
  CHECK(contains(user_error_of([&] { concat({}, 0); }), "concat: needs at least one tensor"));
  CHECK(contains(user_error_of([&] { gather(x, f); }),
                 "gather: indices must be an integer tensor, got f32 [2]"));
  CHECK(contains(user_error_of([&] { scatter(x, f, x); }), "scatter: indices must be an integer"));
  CHECK(contains(user_error_of([&] { scatter(x, i, f); }),
                 "scatter: values [2] should be [2, 3] for dest [2, 3] and indices [2]"));
  CHECK(contains(user_error_of([&] { b.arange(0, 5, 0); }), "arange: step is 0"));
  CHECK(contains(user_error_of([&] { b.iota(-1); }), "iota: negative size -1"));
  CHECK(contains(user_error_of([&] { b.causal_mask(2, 2, 0, 0); }),
                 "causal_mask: window must be at least 1"));
  CHECK(contains(user_error_of([&] { b.causal_mask(2, 2, 0, std::nullopt, DType::I32); }),
                 "causal_mask: needs a float dtype, got i32"));
  GraphTensor odd = b.input("odd", dims({2, 5}));
  CHECK(contains(user_error_of([&] { rotary(odd, f); }),
                 "rotary: head_dim must be a positive even constant, got f32 [2, 5]"));
  GraphTensor q = b.input("q", dims({4, 6}));
  CHECK(contains(user_error_of([&] { rotary(q, i); }),
                 "rotary: positions must be [seq] with seq = dim 0 of x, got f32 [4, 6] and "
                 "positions i32 [2]"));
  CHECK(contains(user_error_of([&] {
                   matmul(b.input("a", dims({2, 3, 4})), b.input("w", dims({5, 4, 2})));
                 }),
                 "matmul: batch dims differ (2 vs 5)"));
  CHECK(contains(user_error_of([&] { matmul(f, x); }), "matmul: expects [..., m, k] x"));
}
