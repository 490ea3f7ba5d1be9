// The online-softmax monoid (graph/monoid_online_softmax) and rewrite (graph/body_online_softmax):
// the monoid's laws on random states, -inf ones included; a softmax-weighted sum, fused as the
// fusion rules fuse it, computes the same values in its online form on random inputs at
// several dims (causal -inf masks included); bodies without the pattern are refused.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_inline.hpp"
#include "graph/body_lower.hpp"
#include "graph/body_merge_inputs.hpp"
#include "graph/body_online_softmax.hpp"
#include "graph/interpret.hpp"
#include "graph/monoid_online_softmax.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::random_tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A Body holding the online-softmax monoid over `dtype` (its monoid 0).
Body monoid_body(DType dtype) {
  BodyBuilder b({dtype, dtype});
  const std::size_t m = online_softmax_monoid(b, dtype);
  const std::string r = b.reduce_var();
  const ScalarId x = b.load(0, Expr::dim(r));
  const ScalarId y = b.load(1, Expr::dim(r));
  return b.finish(b.reduce(m, r, Expr(3), {x, y}, dtype), Expr(1), Expr(0));
}

bool close(double got, double want, double tolerance) {
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tolerance * (1.0 + std::fabs(want));
}

void check_state(const std::vector<double>& got, const std::vector<double>& want,
                 double tolerance) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("component " << k << ": " << got[k] << " vs " << want[k]);
    CHECK_FALSE(std::isnan(got[k]));
    CHECK(close(got[k], want[k], tolerance));
  }
}

// A state reached by folding 0..4 random elements, a third of whose x are -inf (masked).
std::vector<double> random_state(const Body& body, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-6.0, 6.0);
  std::vector<double> state = body.monoids()[0].identity;
  const int count = static_cast<int>(rng() % 5);
  for (int i = 0; i < count; ++i) {
    const double x = rng() % 3 == 0 ? -kInf : value(rng);
    state = monoid_combine(body, 0, state, monoid_lift(body, 0, {x, value(rng)}));
  }
  return state;
}

// The kernel computing `id` with every compute producer inlined (transitively), the slots that
// read one buffer merged, as the fusion rules build it; `reads` are the nodes read, by slot.
struct Fused {
  Body body;
  std::vector<NodeId> reads;
};
Fused fuse_all(const Graph& g, NodeId id, const std::vector<NodeId>& keep = {}) {
  Fused k{one_op_body(g, id), {}};
  for (const Graph::Input& in : g.inputs(id)) k.reads.push_back(in.producer);
  for (std::size_t slot = k.reads.size(); slot-- > 0;) {
    const NodeId p = k.reads[slot];
    bool kept = g.node(p).op == Op::Input;
    for (NodeId n : keep) kept = kept || n == p;
    if (kept) continue;
    const Fused producer = fuse_all(g, p, keep);
    std::vector<NodeId> reads(k.reads.begin(), k.reads.begin() + slot);
    reads.insert(reads.end(), producer.reads.begin(), producer.reads.end());
    reads.insert(reads.end(), k.reads.begin() + slot + 1, k.reads.end());
    k = Fused{inline_input(k.body, slot, producer.body), std::move(reads)};
  }
  for (std::size_t j = k.reads.size(); j-- > 1;) {
    for (std::size_t i = 0; i < j; ++i) {
      if (k.reads[i] != k.reads[j]) continue;
      k.body = merge_inputs(k.body, i, j);
      k.reads.erase(k.reads.begin() + static_cast<std::ptrdiff_t>(j));
      break;
    }
  }
  return k;
}

std::vector<double> run(const Body& body, const std::vector<NodeId>& reads,
                        const std::vector<std::vector<double>>& values, const DimValues& dims) {
  std::vector<const std::vector<double>*> ins;
  for (NodeId id : reads) ins.push_back(&values[id]);
  std::vector<double> out(static_cast<std::size_t>(evaluate(body.output_size(), dims)), 0.0);
  interpret_body(body, ins, dims, out);
  return out;
}

std::size_t reduces_with(const Body& body, const std::string& monoid) {
  std::size_t n = 0;
  for (const Scalar& s : body.scalars()) {
    if (s.op == ScalarOp::Reduce && body.monoids()[s.slot].name == monoid) ++n;
  }
  return n;
}

// Attention over [heads, n, d]: softmax(q k^T * scale + mask) v, with a causal mask or none.
struct AttentionGraph {
  GraphBuilder gb;
  NodeId scores = 0, weights = 0, out = 0;
  NodeId scaled_q = 0;
  AttentionGraph(std::int64_t heads, std::int64_t d, bool causal) {
    const Expr n = Expr::dim("n");
    GraphTensor q = gb.input("q", {Expr(heads), n, Expr(d)}, DType::F64) * 2.0;
    scaled_q = q.node();
    GraphTensor k = gb.input("k", {Expr(heads), n, Expr(d)}, DType::F64);
    GraphTensor v = gb.input("v", {Expr(heads), n, Expr(d)}, DType::F64);
    GraphTensor s = matmul(q, transpose(k, 1, 2)) * (1.0 / std::sqrt(static_cast<double>(d)));
    if (causal) s = s + gb.causal_mask(n, n, Expr(0), std::nullopt, DType::F64);
    GraphTensor w = softmax(s, 2);
    GraphTensor o = matmul(w, v);
    o.output("o");
    scores = s.node();
    weights = w.node();
    out = o.node();
  }
};

// Checks the online form of the fused kernel of `a.out` (keeping `keep` as buffers) against
// the interpreter at several sizes; returns the online Body at the last one.
Body check_online(AttentionGraph& a, std::int64_t heads, std::int64_t d,
                  const std::vector<NodeId>& keep) {
  const Graph& g = a.gb.graph();
  const Fused fused = fuse_all(g, a.out, keep);
  std::string why;
  const std::optional<Body> online = online_softmax(fused.body, why);
  INFO(to_text(fused.body) << why);
  REQUIRE(online.has_value());
  INFO(to_text(*online));
  CHECK(online->inputs() == fused.body.inputs());
  CHECK(reduces_with(*online, "online_softmax") == 1);
  CHECK(reduces_with(*online, "max") == 0);  // no pass for the max any more
  for (std::int64_t n : {1, 2, 5, 9}) {
    const DimValues dims{{"n", n}};
    std::map<std::string, Tensor> feeds;
    std::uint32_t seed = static_cast<std::uint32_t>(n) * 7;
    for (const char* name : {"q", "k", "v"}) feeds[name] = random_tensor({heads, n, d}, ++seed);
    const std::vector<std::vector<double>> values = interpret_all(g, dims, feeds);
    const std::vector<double> before = run(fused.body, fused.reads, values, dims);
    const std::vector<double> after = run(*online, fused.reads, values, dims);
    REQUIRE(after.size() == values[a.out].size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      INFO("n = " << n << " [" << i << "]");
      CHECK_FALSE(std::isnan(after[i]));
      CHECK(close(after[i], values[a.out][i], 1e-9));
      CHECK(close(before[i], values[a.out][i], 1e-9));
    }
  }
  return *online;
}

}  // namespace

TEST_CASE("online softmax monoid: identity and associativity on random states, -inf included",
          "[body][online_softmax]") {
  for (DType dtype : {DType::F64, DType::F32}) {
    const double tolerance = dtype == DType::F64 ? 1e-12 : 1e-5;
    const Body body = monoid_body(dtype);
    const std::vector<double> identity = body.monoids()[0].identity;
    std::mt19937 rng(11);
    for (int trial = 0; trial < 500; ++trial) {
      const std::vector<double> a = random_state(body, rng);
      const std::vector<double> b = random_state(body, rng);
      const std::vector<double> c = random_state(body, rng);
      check_state(monoid_combine(body, 0, identity, a), a, tolerance);
      check_state(monoid_combine(body, 0, a, identity), a, tolerance);
      check_state(monoid_combine(body, 0, monoid_combine(body, 0, a, b), c),
                  monoid_combine(body, 0, a, monoid_combine(body, 0, b, c)), tolerance);
    }
  }
}

TEST_CASE("online softmax monoid: a fold is the softmax-weighted sum, and masked prefixes give no NaN",
          "[body][online_softmax]") {
  const Body body = monoid_body(DType::F64);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> value(-30.0, 30.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t count = 1 + rng() % 8;
    const std::size_t masked = rng() % count;  // a masked prefix, then live elements
    std::vector<double> x, y;
    for (std::size_t i = 0; i < count; ++i) {
      x.push_back(i < masked ? -kInf : value(rng));
      y.push_back(value(rng));
    }
    std::vector<double> state = body.monoids()[0].identity;
    for (std::size_t i = 0; i < count; ++i) {
      state = monoid_combine(body, 0, state, monoid_lift(body, 0, {x[i], y[i]}));
    }
    double max = -kInf, weights = 0, weighted = 0;
    for (double v : x) max = std::max(max, v);
    for (std::size_t i = 0; i < count; ++i) {
      weights += std::exp(x[i] - max);
      weighted += std::exp(x[i] - max) * y[i];
    }
    const double got = monoid_finalize(body, 0, state);
    CHECK_FALSE(std::isnan(got));
    CHECK(close(got, weighted / weights, 1e-12));
  }
}

TEST_CASE("online softmax: softmax(x) v with x inlined or read from a buffer, masked or not",
          "[body][online_softmax]") {
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    AttentionGraph a(2, 3, causal);
    // The scores read from a buffer (the softmax inlined into the weighted sum) ...
    check_online(a, 2, 3, {a.scores});
    // ... and computed in the kernel: q, k, v (and the mask's positions) read, never n x n.
    const Body whole = check_online(a, 2, 3, {});
    CHECK(whole.inputs().size() == 3);
  }
}

TEST_CASE("online softmax: a Body without a softmax-weighted sum is refused, saying why",
          "[body][online_softmax]") {
  AttentionGraph a(1, 2, false);
  const Graph& g = a.gb.graph();
  std::string why;
  // The softmax on its own: a product, but no weighted sum.
  CHECK_FALSE(online_softmax(one_op_body(g, a.weights), why));
  CHECK(contains(why, "no sum"));
  // A weighted sum of e^(x - max x) without the normalizer.
  GraphBuilder gb;
  const Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {Expr(2), n}, DType::F64);
  GraphTensor y = gb.input("y", {Expr(2), n}, DType::F64);
  GraphTensor shifted = exp(x - unsqueeze(max(x, 1), 1));
  const NodeId unnormalized = sum(shifted * y, 1).node();
  const Fused f = fuse_all(gb.graph(), unnormalized);
  CHECK_FALSE(online_softmax(f.body, why));
  // A softmax over one axis weighting a sum over another is not a weighted sum of it.
  GraphTensor across = sum(softmax(x, 0) * y, 1);
  CHECK_FALSE(online_softmax(fuse_all(gb.graph(), across.node()).body, why));
}

TEST_CASE("row read factor: a one-pass kernel computes its scores once per key, not per column",
          "[body][online_softmax][inline]") {
  AttentionGraph a(2, 3, true);
  const Graph& g = a.gb.graph();
  std::string why;
  auto slot_of = [](const Fused& f, NodeId node) {
    for (std::size_t k = 0; k < f.reads.size(); ++k) {
      if (f.reads[k] == node) return k;
    }
    FAIL("the kernel does not read %" << node);
    return std::size_t{0};
  };
  // Reading the scores: once per column of the head dim (3), once per key when folded.
  const Fused reads_scores = fuse_all(g, a.out, {a.scores, a.scaled_q});
  const Body online = *online_softmax(reads_scores.body, why);
  const Body scores = one_op_body(g, a.scores);
  const std::size_t s = slot_of(reads_scores, a.scores);
  CHECK(inline_read_factor(online, s, scores) == 3);
  CHECK(inline_read_factor(online, s, scores, /*fold_rows=*/true) == 1);
  // q, read inside the product nested in the fold: once per key, a factor growing with n,
  // folded or not.
  const Fused whole = fuse_all(g, a.out, {a.scaled_q});
  const Body whole_online = *online_softmax(whole.body, why);
  const Body q = one_op_body(g, a.scaled_q);
  const std::size_t slot_q = slot_of(whole, a.scaled_q);
  CHECK_FALSE(inline_read_factor(whole_online, slot_q, q));
  CHECK_FALSE(inline_read_factor(whole_online, slot_q, q, /*fold_rows=*/true));
}
