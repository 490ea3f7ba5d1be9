// graph/body_bounds and compiler::library_call_in_bounds: every one-op Body of every example is
// proven in bounds; wrong bodies (extent, stride, offset, store, mask, row) and gemm calls are
// rejected with a reason; on random bodies, whatever is proven never reads or writes outside its
// buffers in the interpreter, at any dims tried.
#include <catch2/catch.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compiler/measure.hpp"
#include "examples/graphs.hpp"
#include "graph/body_bounds.hpp"
#include "graph/body_lower.hpp"
#include "graph/tensor.hpp"
#include "test_util.hpp"

using namespace kiln;
using namespace kiln::graph;
using kiln::testing::contains;

namespace {

Expr numel(const std::vector<Expr>& shape) {
  Expr n = 1;
  for (const Expr& d : shape) n = n * d;
  return n;
}

// The element count of each input buffer of node `id` (its producers' tensors).
std::vector<Expr> input_elements(const Graph& g, NodeId id) {
  std::vector<Expr> out;
  for (const Graph::Input& in : g.inputs(id)) out.push_back(numel(g.node(in.producer).shape));
  return out;
}

// Runs `body` in the interpreter on buffers of the given sizes at `dims`: true if no load or
// store left its buffer. Integer inputs hold 0, a row every table has.
bool runs_in_bounds(const Body& body, const std::vector<Expr>& elements, const DimValues& dims) {
  std::vector<std::vector<double>> buffers;
  std::vector<const std::vector<double>*> pointers;
  for (std::size_t k = 0; k < elements.size(); ++k) {
    const double fill = is_float(body.inputs()[k]) ? 0.5 : 0.0;
    buffers.emplace_back(static_cast<std::size_t>(evaluate(elements[k], dims)), fill);
  }
  for (const auto& b : buffers) pointers.push_back(&b);
  std::vector<double> out(static_cast<std::size_t>(evaluate(body.output_size(), dims)), 0.0);
  try {
    interpret_body(body, pointers, dims, out);
  } catch (const support::UserError& e) {
    const std::string what = e.what();
    if (contains(what, "outside")) return false;
    throw;
  }
  return true;
}

// A graph of symbolic size n through every kind of view: permute, slice, pad, expand, reshape,
// concat, reductions, softmax, matmul, gather and scatter.
void build_views(GraphBuilder& b) {
  const Expr n = Expr::dim("n");
  GraphTensor x = b.input("x", {n, 6});
  GraphTensor w = b.input("w", {6, 4});
  GraphTensor ids = b.input("ids", {n}, DType::I32);
  GraphTensor table = b.input("table", {5, 4});
  GraphTensor cache = b.input("cache", {8, 4});
  GraphTensor rows = b.input("rows", {2}, DType::I32);
  GraphTensor values = b.input("values", {2, 4});
  GraphTensor y = matmul(x, w);                                        // [n, 4]
  (permute(y, {1, 0}) * 2.0).output("transposed");                     // [4, n]
  GraphTensor sliced = slice(x, 1, 1, 5);                              // [n, 4]
  GraphTensor padded = exp(pad(x, 1, 2, 1));                           // [n, 9], masked
  GraphTensor row_sums = sum(padded, 1);                               // [n]
  (sliced + expand(unsqueeze(row_sums, 1), 1, 4)).output("broadcast");
  softmax(permute(y, {1, 0}), 1).output("softmax");
  relu(reshape(y, {n * 2, 2})).output("reshaped");
  concat({y, sliced}, 1).output("concat");
  max(pad(x, 0, 1, 2, -1.0), 0).output("padded_rows");
  gather(table, ids).output("gathered");
  scatter(cache, rows, values).output("scattered");
}

}  // namespace

// The dim ranges a model is valid for: a KV cache of C positions holds pos + seq <= C tokens
// (intervals cannot say that sum, so each gets half); without a cache, the defaults.
DimRanges model_ranges(const Graph& g) {
  std::optional<std::int64_t> positions;
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op != Op::Input || !n.persistent || n.shape.empty()) continue;
    if (auto c = n.shape[0].as_constant()) positions = std::min(positions.value_or(*c), *c);
  }
  if (!positions) return {};
  return {{"pos", Interval{0, *positions / 2}}, {"seq", Interval{1, *positions / 2}}};
}

TEST_CASE("body bounds: every one-op Body of every example is proven in bounds") {
  for (const examples::Example& example : examples::examples()) {
    GraphBuilder b;
    example.build(b);
    const Graph& g = b.graph();
    const DimRanges ranges = model_ranges(g);
    std::size_t proven = 0;
    for (NodeId id = 0; id < g.size(); ++id) {
      if (!has_one_op_body(g.node(id).op)) continue;
      const Body body = one_op_body(g, id);
      INFO(example.name << " %" << id << " " << op_name(g.node(id).op) << "\n" << to_text(body));
      CHECK(prove_in_bounds(body, input_elements(g, id), numel(g.node(id).shape), ranges) == "");
      ++proven;
    }
    CHECK(proven >= 5);  // the smallest example, the chain, has five compute ops
  }
  // Without the model's range, reading pos + seq rows of a cache is (rightly) not proven.
  GraphBuilder b;
  examples::find_example("smollm2-135m")->build(b);
  std::size_t unproven = 0;
  for (NodeId id = 0; id < b.graph().size(); ++id) {
    if (!has_one_op_body(b.graph().node(id).op)) continue;
    const std::string why = prove_in_bounds(one_op_body(b.graph(), id), input_elements(b.graph(), id));
    if (!why.empty()) {
      CHECK(contains(why, "pos"));
      ++unproven;
    }
  }
  CHECK(unproven > 0);
}

TEST_CASE("body bounds: one-op Bodies through every kind of view, proven and run in bounds") {
  GraphBuilder b;
  build_views(b);
  const Graph& g = b.graph();
  validate(g);
  std::size_t bodies = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (!has_one_op_body(g.node(id).op)) continue;
    const Body body = one_op_body(g, id);
    const std::vector<Expr> elements = input_elements(g, id);
    INFO("%" << id << " " << op_name(g.node(id).op) << "\n" << to_text(body));
    REQUIRE(prove_in_bounds(body, elements) == "");
    for (std::int64_t n = 1; n <= 5; ++n) CHECK(runs_in_bounds(body, elements, {{"n", n}}));
    ++bodies;
  }
  CHECK(bodies > 15);
}

TEST_CASE("body bounds: a buffer one element short is rejected, naming the load") {
  GraphBuilder b;
  build_views(b);
  const Graph& g = b.graph();
  std::size_t rejected = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    const Op op = g.node(id).op;
    // Elementwise ops and reductions of contiguous inputs read every element of input 0.
    if (op != Op::Exp2 && op != Op::SumReduce && op != Op::Softmax) continue;
    if (!g.inputs(id)[0].edge->view.is_contiguous()) continue;
    std::vector<Expr> elements = input_elements(g, id);
    elements[0] = elements[0] - 1;
    const std::string why = prove_in_bounds(one_op_body(g, id), elements);
    INFO("%" << id << " " << op_name(op));
    CHECK(contains(why, "load of in0"));
    CHECK(contains(why, "outside"));
    ++rejected;
  }
  CHECK(rejected >= 2);
}

TEST_CASE("body bounds: wrong extents, strides, offsets, masks and rows are rejected") {
  const Expr n = Expr::dim("n");
  auto copy = [&](const Expr& extent, auto index_of, const Expr& valid = Expr(1)) {
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(extent);
    return b.finish(b.load(0, index_of(o), valid), extent, o);
  };
  auto same = [](const Expr& o) { return o; };
  CHECK(prove_in_bounds(copy(n, same), {n}) == "");
  // The loop runs one element too far.
  CHECK(contains(prove_in_bounds(copy(n + 1, same), {n}, n + 1), "load of in0 at `o0`"));
  // An offset past the end, and one before the start.
  CHECK(contains(prove_in_bounds(copy(n, [](const Expr& o) { return o + 1; }), {n}), "outside"));
  CHECK(contains(prove_in_bounds(copy(n, [](const Expr& o) { return o - 1; }), {n}),
                 "may be negative"));
  // A padded read: in bounds where the mask holds, which is where it reads.
  auto padded = [&](const Expr& shift) {
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(n + 4);
    const Expr valid = le(Expr(2), o) * lt(o, n + 2);
    return b.finish(b.load(0, o - shift, valid), n + 4, o);
  };
  CHECK(prove_in_bounds(padded(2), {n}) == "");
  CHECK(contains(prove_in_bounds(padded(1), {n}), "outside"));
  CHECK(contains(prove_in_bounds(padded(3), {n}), "may be negative"));
  // Rows of a table: a wrong stride, and a table with a row too few.
  auto rows = [&](const Expr& stride) {
    BodyBuilder b({DType::F32, DType::I32});
    Expr i = b.output_loop(n);
    Expr j = b.output_loop(4);
    ScalarId row = b.load(1, i);
    return b.finish(b.load_row(0, j, row, stride, Expr(10)), n * 4, i * 4 + j);
  };
  CHECK(prove_in_bounds(rows(4), {Expr(40), n}) == "");
  CHECK(contains(prove_in_bounds(rows(5), {Expr(40), n}), "load of in0"));
  CHECK(contains(prove_in_bounds(rows(4), {Expr(36), n}), "outside its `36` elements"));
  // The index buffer itself is read through its own load.
  CHECK(contains(prove_in_bounds(rows(4), {Expr(40), n - 1}), "load of in1"));
  // A store past the output.
  {
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(n);
    CHECK(contains(prove_in_bounds(b.finish(b.load(0, o), n, o + 1), {n}), "store at `o0 + 1`"));
  }
  // A reduction whose extent is too long for its row stride.
  {
    BodyBuilder b({DType::F32});
    Expr o = b.output_loop(n);
    std::string r = b.reduce_var();
    ScalarId total = b.reduce(b.sum_monoid(DType::F32), r, Expr(9),
                              {b.load(0, o * 8 + Expr::dim(r))}, DType::F32);
    CHECK(contains(prove_in_bounds(b.finish(total, n, o), {n * 8}), "load of in0"));
  }
}

TEST_CASE("body bounds: what cannot be bounded is rejected, saying why") {
  const Expr n = Expr::dim("n");
  BodyBuilder b({DType::F32});
  Expr o = b.output_loop(n);
  // A modulus by a divisor that may be 0 (at n = 1).
  const Body modulus = b.finish(b.load(0, mod(o, n - 1)), n, o);
  CHECK(contains(prove_in_bounds(modulus, {n}), "cannot show that the divisor of `o0%(n - 1)`"));
  // With the range given where the divisor is positive, the same Body is proven.
  CHECK(prove_in_bounds(modulus, {n}, {{"n", Interval{2, 100}}}) == "");
}

TEST_CASE("body bounds: gemm calls are checked against their buffers") {
  const Expr m = Expr::dim("m"), n = Expr::dim("n"), k = Expr::dim("k");
  runtime::LibraryCall call{"gemm", DType::F32, {{"m", m}, {"n", n}, {"k", k}}};
  CHECK(compiler::library_call_in_bounds(call, {m * k, k * n, m * n}) == "");
  CHECK(contains(compiler::library_call_in_bounds(call, {m * k - 1, k * n, m * n}), "gemm A"));
  CHECK(contains(compiler::library_call_in_bounds(call, {m * k, k * n, m * (n - 1)}), "gemm C"));
  call.params["lda"] = k + 1;  // rows farther apart than A holds
  CHECK(contains(compiler::library_call_in_bounds(call, {m * k, k * n, m * n}), "gemm A"));
  call.params["lda"] = k;
  call.params["batch"] = 3;
  call.params["stride_b"] = 0;  // one B shared by the batch
  CHECK(compiler::library_call_in_bounds(call, {3 * m * k, k * n, 3 * m * n}) == "");
  CHECK(contains(compiler::library_call_in_bounds(call, {3 * m * k, k * n, 2 * m * n}),
                 "gemm C"));
  call.params.erase("k");
  CHECK(contains(compiler::library_call_in_bounds(call, {m, n, m * n}), "k is required"));
  // A strided access on its own.
  CHECK(prove_in_bounds(StridedAccess{"rows", 3, {{n, 4}, {Expr(4), 1}}}, 4 * n + 3) == "");
  CHECK(contains(prove_in_bounds(StridedAccess{"rows", 4, {{n, 4}, {Expr(4), 1}}}, 4 * n + 3),
                 "rows at"));
}

TEST_CASE("body bounds: on random bodies, what is proven runs in bounds at every dim tried") {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const Expr n = Expr::dim("n");
  std::size_t proven = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    BodyBuilder b({DType::F32});
    const Expr outer = pick(0, 1) ? n : Expr(pick(1, 4));
    const Expr inner = pick(0, 1) ? n : Expr(pick(1, 4));
    Expr i = b.output_loop(outer);
    Expr j = b.output_loop(inner);
    Expr index;
    switch (pick(0, 3)) {
      case 0: index = i * pick(0, 5) + j * pick(-1, 3) + pick(-2, 2); break;
      case 1: index = i * inner + j + pick(-1, 1); break;
      case 2: index = mod(i * inner + j, Expr(pick(1, 6))) + floor_div(j, Expr(pick(1, 3))); break;
      default: index = floor_div(i * inner + j + pick(0, 2), Expr(2)) * pick(1, 2); break;
    }
    Expr valid = 1;
    if (pick(0, 3) == 0) valid = le(Expr(pick(0, 2)), j) * lt(j, inner - pick(0, 1));
    const Body body = b.finish(b.load(0, index, valid), outer * inner, i * inner + j);
    const Expr elements = pick(0, 1) ? n * pick(0, 5) + pick(0, 4) : outer * inner + pick(-1, 1);
    const std::string why = prove_in_bounds(body, {elements});
    bool always = true;
    for (std::int64_t value = 1; value <= 6; ++value) {
      if (evaluate(elements, {{"n", value}}) < 0) { always = false; continue; }
      always = runs_in_bounds(body, {elements}, {{"n", value}}) && always;
    }
    INFO(to_text(body) << "elements " << to_string(elements) << ": " << why);
    if (why.empty()) {
      CHECK(always);  // soundness: a proof is never wrong
      ++proven;
    } else {
      ++rejected;
    }
  }
  CHECK(proven > 50);
  CHECK(rejected > 50);
}
