// Inlining producers into consumers (graph/body_inline): every node of a graph, fused with a
// random subset of its producers (transitively), computes what its one-op Body computes, on
// random inputs at several dim values; structure where it matters (no div/mod where the
// position solves exactly, reductions reading producers in their inner loop).
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_inline.hpp"
#include "graph/body_lower.hpp"
#include "graph/body_merge_inputs.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::random_tensor;
using kiln::testing::user_error_of;

namespace {

// A node's kernel: a Body and the graph nodes whose buffers it reads, by slot.
struct Fused {
  Body body;
  std::vector<NodeId> reads;
};

std::vector<double> run(const Body& body, const std::vector<NodeId>& reads,
                        const std::vector<std::vector<double>>& values, const DimValues& dims) {
  std::vector<const std::vector<double>*> ins;
  for (NodeId id : reads) ins.push_back(&values[id]);
  std::vector<double> out(static_cast<std::size_t>(evaluate(body.output_size(), dims)), 0.0);
  if (body.output_aliases()) out = *ins[*body.output_aliases()];
  interpret_body(body, ins, dims, out);
  return out;
}

// Fuses every compute node with its compute producers, each slot with probability
// `p_inline` (and only where inline_input accepts), merges slots that read one buffer, checks
// each fused kernel against the one-op values, and returns how many inlinings happened.
std::size_t check_fusion(const Graph& g, const DimValues& dims,
                         const std::map<std::string, Tensor>& inputs, std::mt19937& rng,
                         double p_inline) {
  std::vector<std::vector<double>> values(g.size());
  std::map<NodeId, Fused> fused;
  std::bernoulli_distribution coin(p_inline);
  std::size_t inlined = 0;
  std::size_t merged = 0;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Input) {
      values[id] = inputs.at(n.name).data;
      continue;
    }
    Fused k{one_op_body(g, id), {}};
    for (const Graph::Input& in : g.inputs(id)) k.reads.push_back(in.producer);
    values[id] = run(k.body, k.reads, values, dims);  // the reference: one op
    // Inline producers, last slot first so earlier slot numbers stay put.
    for (std::size_t slot = k.reads.size(); slot-- > 0;) {
      auto p = fused.find(k.reads[slot]);
      if (p == fused.end() || !coin(rng)) continue;
      try {
        Body b = inline_input(k.body, slot, p->second.body);
        std::vector<NodeId> reads(k.reads.begin(), k.reads.begin() + slot);
        reads.insert(reads.end(), p->second.reads.begin(), p->second.reads.end());
        reads.insert(reads.end(), k.reads.begin() + slot + 1, k.reads.end());
        k = Fused{std::move(b), std::move(reads)};
        ++inlined;
      } catch (const kiln::support::UserError&) {
        // refused (a dynamic-row read, a scatter): the slot stays a buffer
      }
    }
    // Merge slots that read the same buffer (as the fusion rules do).
    for (std::size_t j = k.reads.size(); j-- > 1;) {
      for (std::size_t i = 0; i < j; ++i) {
        if (k.reads[i] != k.reads[j]) continue;
        k.body = merge_inputs(k.body, i, j);
        k.reads.erase(k.reads.begin() + static_cast<std::ptrdiff_t>(j));
        ++merged;
        break;
      }
    }
    const std::vector<double> got = run(k.body, k.reads, values, dims);
    REQUIRE(got.size() == values[id].size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO(op_name(n.op) << " %" << id << " [" << i << "]\n" << to_text(k.body));
      const double want = values[id][i];
      if (std::isnan(want)) {
        CHECK(std::isnan(got[i]));
      } else {
        CHECK(std::fabs(got[i] - want) <= 1e-9 * (1.0 + std::fabs(want)));
      }
    }
    fused.emplace(id, std::move(k));
  }
  if (p_inline == 1.0) CHECK(merged > 0);  // x * relu(x) and the norms read one buffer twice
  return inlined;
}

}  // namespace

TEST_CASE("inlining keeps every node's value: elementwise, views, reductions, softmax",
          "[body][inline]") {
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {n, 5}, DType::F64);
  GraphTensor w = gb.input("w", {5}, DType::F64);
  GraphTensor b = gb.input("b", {5, 3}, DType::F64);
  GraphTensor h = silu(x * w + 0.5);                           // broadcast, chain
  (sqrt(h * h + 1.0) - h).output("chain");
  transpose(exp(h), 0, 1).output("transposed");                // permuted reads
  softmax(h, 1).output("softmax_rows");
  softmax(transpose(h, 0, 1), 1).output("softmax_cols");
  rms_norm(h).output("rms");                                   // reduction broadcast back
  layer_norm(x).output("layer_norm");
  matmul(h, b).output("matmul");                               // producer in a reduction
  pad(slice(h, 1, 1, 4), 1, 2, 1).output("slice_pad");         // offsets and zero padding
  (sum(h, 0) * 2.0).output("column_sums");
  reshape(h, {Expr(5), n}).output("reshaped");
  concat({exp(slice(h, 1, 0, 2)) + 1.0, slice(h, 1, 2, 5) * 3.0}, 1).output("concat");
  GraphTensor positions = gb.input("positions", {n}, DType::F64);
  rotary(transpose(reshape(slice(h, 1, 0, 4), {n, Expr(2), Expr(2)}), 0, 1), positions)
      .output("rotary");
  validate(gb.graph());
  for (std::uint32_t seed : {1u, 2u, 3u, 4u}) {
    std::mt19937 rng(seed);
    const std::int64_t rows = 1 + seed % 4;
    DimValues dims{{"n", rows}};
    std::map<std::string, Tensor> inputs{{"x", random_tensor({rows, 5}, seed)},
                                         {"w", random_tensor({5}, seed + 10)},
                                         {"b", random_tensor({5, 3}, seed + 20)},
                                         {"positions", random_tensor({rows}, seed + 30)}};
    const double p = seed == 1 ? 1.0 : 0.6;
    const std::size_t inlined = check_fusion(gb.graph(), dims, inputs, rng, p);
    if (p == 1.0) CHECK(inlined > 20);
  }
}

TEST_CASE("inlining around gathers and scatters refuses only the indexed reads",
          "[body][inline]") {
  std::mt19937 rng(5);
  GraphBuilder gb;
  const auto feeds = kiln::testing::build_index_ops(gb, rng);
  CHECK(check_fusion(gb.graph(), {}, feeds, rng, 0.99) > 0);
}

TEST_CASE("an exactly solved position has no division; a reduction reads its producer inline",
          "[body][inline]") {
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  Expr d = Expr::dim("d");
  GraphTensor x = gb.input("x", {n, d}, DType::F32);
  GraphTensor y = gb.input("y", {n, d}, DType::F32);
  NodeId prod = (x * y).node();
  GraphTensor e = exp(GraphTensor(x * y));
  NodeId ex = e.node();
  NodeId total = sum(e, 1).node();
  const Graph& g = gb.graph();
  Body fused = inline_input(one_op_body(g, ex), 0, one_op_body(g, prod));
  CHECK(fused.inputs().size() == 2);
  auto positions_divide = [](const Body& body) {
    for (const Scalar& s : body.scalars()) {
      const std::string at = to_string(s.index);
      if (s.op == ScalarOp::Load && (contains(at, "/") || contains(at, "%"))) return true;
    }
    return false;
  };
  CHECK_FALSE(positions_divide(fused));
  Body reduced = inline_input(one_op_body(g, total), 0, fused);
  const std::string text = to_text(reduced);
  CHECK(contains(text, "reduce"));
  CHECK(contains(text, "exp2"));
  CHECK_FALSE(positions_divide(reduced));
  CHECK(inline_read_factor(one_op_body(g, total), 0, fused) == 1);
}

TEST_CASE("a concatenation's parts inline exactly: no division, no select, one loop nest",
          "[body][inline]") {
  // RoPE's rotate-half: concat(x1 * c - x2 * s, x2 * c + x1 * s) over [heads, n, 4] reads
  // each half through a padded view (valid where 0 <= j < 2, or 2 <= j < 4): under that mask
  // the digits are exact (j, or j - 2 clamped at 0), and the inlined parts are 0 there
  // already (their loads read nothing), so no select wraps them (only constants get one).
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {Expr(3), n, Expr(4)}, DType::F64);
  GraphTensor c = gb.input("c", {n, Expr(2)}, DType::F64);
  GraphTensor s = gb.input("s", {n, Expr(2)}, DType::F64);
  GraphTensor x1 = slice(x, 2, 0, 2), x2 = slice(x, 2, 2, 4);
  GraphTensor out = concat({x1 * c - x2 * s, x2 * c + x1 * s}, 2);
  out.output("out");
  const Graph& g = gb.graph();
  // Inline every compute producer, first slot first, as the fusion rules do.
  Body body = one_op_body(g, out.node());
  std::vector<NodeId> reads;
  for (const Graph::Input& in : g.inputs(out.node())) reads.push_back(in.producer);
  for (bool again = true; again;) {
    again = false;
    for (std::size_t k = 0; k < reads.size() && !again; ++k) {
      if (g.node(reads[k]).op == Op::Input) continue;
      body = inline_input(body, k, one_op_body(g, reads[k]));
      std::vector<NodeId> next(reads.begin(), reads.begin() + static_cast<std::ptrdiff_t>(k));
      for (const Graph::Input& in : g.inputs(reads[k])) next.push_back(in.producer);
      next.insert(next.end(), reads.begin() + static_cast<std::ptrdiff_t>(k) + 1, reads.end());
      reads = std::move(next);
      again = true;
    }
  }
  for (NodeId r : reads) CHECK(g.node(r).op == Op::Input);
  const std::string text = to_text(body);
  INFO(text);
  CHECK_FALSE(contains(text, "/"));
  std::size_t wrapped = 0;  // selects of a computed value (the constant -1 of x2 * -1 is one)
  for (const Scalar& sc : body.scalars()) {
    wrapped += sc.op == ScalarOp::Select && body.scalar(sc.args[1]).op != ScalarOp::Const;
  }
  CHECK(wrapped == 0);
  CHECK(contains(text, "max(o2, 2) - 2"));
  for (std::int64_t rows : {1, 3, 6}) {
    DimValues dims{{"n", rows}};
    std::map<std::string, Tensor> inputs{{"x", random_tensor({3, rows, 4}, 7)},
                                         {"c", random_tensor({rows, 2}, 8)},
                                         {"s", random_tensor({rows, 2}, 9)}};
    const Tensor want = interpret(g, dims, inputs).at("out");
    std::vector<std::vector<double>> values(g.size());
    for (NodeId r : reads) values[r] = inputs.at(g.node(r).name).data;
    const std::vector<double> got = run(body, reads, values, dims);
    REQUIRE(got.size() == want.data.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CHECK(std::fabs(got[i] - want.data[i]) <= 1e-6 * (1.0 + std::fabs(want.data[i])));
    }
  }
}

TEST_CASE("inlining the same producers in either order builds the same Body",
          "[body][inline]") {
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {n}, DType::F32);
  GraphTensor a = x + 1.0;
  GraphTensor b = exp(a);
  GraphTensor c = b * 3.0;
  const Graph& g = gb.graph();
  const Body ba = inline_input(one_op_body(g, b.node()), 0, one_op_body(g, a.node()));
  const Body left = inline_input(one_op_body(g, c.node()), 0, ba);
  const Body cb = inline_input(one_op_body(g, c.node()), 0, one_op_body(g, b.node()));
  const Body right = inline_input(cb, 0, one_op_body(g, a.node()));
  CHECK(to_text(left) == to_text(right));
}

TEST_CASE("a broadcast read of a reduction recomputes it unless hoisted: inline_read_factor says how often",
          "[body][inline]") {
  GraphBuilder gb;
  Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {n, 4}, DType::F32);
  GraphTensor s = sum(x, 1);                                  // [n]
  GraphTensor per_row = unsqueeze(s, 1) + x;                  // [n, 4]: hoisted out of j
  GraphTensor per_column = unsqueeze(s, 0) + transpose(x, 0, 1);  // [4, n]: inside the j loop
  GraphTensor t = exp(x);
  GraphTensor u = t + 1.0;                                    // read once per element
  const Graph& g = gb.graph();
  CHECK(inline_read_factor(one_op_body(g, per_row.node()), 0, one_op_body(g, s.node())) == 1);
  CHECK(inline_read_factor(one_op_body(g, per_column.node()), 0, one_op_body(g, s.node())) == 4);
  GraphTensor wide = unsqueeze(s, 0) + gb.input("y", {n, n}, DType::F32);  // [n, n]
  CHECK_FALSE(inline_read_factor(one_op_body(g, wide.node()), 0, one_op_body(g, s.node())));
  CHECK(inline_read_factor(one_op_body(g, u.node()), 0, one_op_body(g, t.node())) == 1);
  CHECK(body_compute_nodes(one_op_body(g, u.node())) == 1);  // the add
  // A matmul's left operand is read inside the reduction, which runs once per output column:
  // inlining its producer there recomputes it once per column.
  GraphTensor w = gb.input("w", {Expr(4), Expr(6)}, DType::F32);
  GraphTensor product = matmul(t, w);                         // Mul [n, 4, 6], SumReduce
  const NodeId sum_id = product.node();
  const NodeId mul_id = g.inputs(sum_id)[0].producer;
  const Body fused_product = inline_input(one_op_body(g, sum_id), 0, one_op_body(g, mul_id));
  CHECK(inline_read_factor(fused_product, 0, one_op_body(g, t.node())) == 6);
}

TEST_CASE("merge_inputs refuses slots it cannot merge", "[body][inline]") {
  GraphBuilder gb;
  GraphTensor x = gb.input("x", {Expr(3)}, DType::F32);
  GraphTensor y = x * x;
  const Graph& g = gb.graph();
  CHECK(merge_inputs(one_op_body(g, y.node()), 0, 1).inputs().size() == 1);
  CHECK(contains(user_error_of([&] { merge_inputs(one_op_body(g, y.node()), 0, 0); }),
                 "cannot merge"));
  CHECK(contains(user_error_of([&] { merge_inputs(one_op_body(g, y.node()), 0, 2); }),
                 "cannot merge"));
}

TEST_CASE("inline_input refuses what it cannot do, saying why", "[body][inline]") {
  std::mt19937 rng(3);
  GraphBuilder gb;
  GraphTensor table = gb.input("table", {6, 4}, DType::F32);
  GraphTensor ids = gb.input("ids", {3}, DType::I32);
  GraphTensor values = gb.input("values", {3, 4}, DType::F32);
  GraphTensor doubled = table * 2.0;
  GraphTensor g1 = gather(doubled, ids);
  GraphTensor sc = scatter(table, ids, values);
  GraphTensor after = sc + 1.0;
  const Graph& g = gb.graph();
  CHECK(contains(user_error_of([&] {
                   inline_input(one_op_body(g, g1.node()), 0, one_op_body(g, doubled.node()));
                 }),
                 "through an index"));
  CHECK(contains(user_error_of([&] {
                   inline_input(one_op_body(g, after.node()), 0, one_op_body(g, sc.node()));
                 }),
                 "Scatter"));
  CHECK(contains(user_error_of([&] {
                   inline_input(one_op_body(g, after.node()), 3, one_op_body(g, sc.node()));
                 }),
                 "no input 3"));
}
