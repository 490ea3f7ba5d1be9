// Reading back a Body's text: every one-op Body (views, masks, reductions, softmax, matmul,
// gather and scatter rows, casts) and a user-defined monoid round-trip exactly and compute the
// same; malformed text and text that would build another Body are errors with a location.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_lower.hpp"
#include "graph/body_parse.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::user_error_of;

namespace {

// The one-op Body of every non-Input node of a graph that uses every kind of Scalar node.
std::vector<Body> one_op_bodies() {
  std::mt19937 rng(3);
  GraphBuilder gb;
  const Expr n = Expr::dim("n");
  GraphTensor x = gb.input("x", {n, 5}, DType::F32);
  GraphTensor w = gb.input("w", {5, 4}, DType::F32);
  (x * 2.5 + 1.0).output("affine");
  exp(transpose(x, 0, 1)).output("exp");
  log(x * x + 1.0).output("log");
  sqrt(x * x).output("sqrt");
  recip(x + 10.0).output("recip");
  sin(x).output("sin");
  relu(x).output("relu");
  (x.with_view(x.view().pad(1, 1, 2)) + 1.0).output("pad");  // a validity mask
  softmax(x, 1).output("softmax");
  max(x, 0).output("max");
  matmul(x, w).output("matmul");
  mean(x, 0).output("mean");
  kiln::testing::build_index_ops(gb, rng);  // gather, scatter (dynamic rows), mod, cast
  std::vector<Body> out;
  for (NodeId id = 0; id < gb.graph().size(); ++id) {
    if (gb.graph().node(id).op != Op::Input) out.push_back(one_op_body(gb.graph(), id));
  }
  return out;
}

// sum(exp(x - max x)) per row in one pass: a monoid of two components with constants -inf.
Body online_sum_exp() {
  const DType f = DType::F64;
  BodyBuilder b({f});
  Expr row = b.output_loop(Expr(2));
  Monoid online;
  online.name = "online_sum_exp";
  online.identity = {-INFINITY, 0.0};
  online.lift = {b.param(0, f), b.constant(1.0, f)};
  ScalarId m1 = b.param(0, f), l1 = b.param(1, f), m2 = b.param(2, f), l2 = b.param(3, f);
  ScalarId m = b.binary(ScalarOp::Max, m1, m2);
  auto scaled = [&](ScalarId l, ScalarId mk) {
    ScalarId d = b.binary(ScalarOp::Add, mk, b.binary(ScalarOp::Mul, m, b.constant(-1.0, f)));
    ScalarId zero = b.constant(0.0, f);
    return b.select(b.less_than(zero, l, f), b.binary(ScalarOp::Mul, l, b.unary(ScalarOp::Exp2, d)),
                    zero);
  };
  online.combine = {m, b.binary(ScalarOp::Add, scaled(l1, m1), scaled(l2, m2))};
  online.finalize = l1;
  std::size_t id = b.add_monoid(online);
  std::string r = b.reduce_var();
  ScalarId total = b.reduce(id, r, Expr(5), {b.load(0, row * 5 + Expr::dim(r))}, f);
  return b.finish(total, Expr(2), row);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("body text: every one-op Body and a user monoid read back as themselves", "[body]") {
  std::vector<Body> bodies = one_op_bodies();
  bodies.push_back(online_sum_exp());
  REQUIRE(bodies.size() > 20);
  bool saw_row = false, saw_mask = false, saw_monoid = false, saw_alias = false;
  for (const Body& body : bodies) {
    const std::string text = to_text(body);
    INFO(text);
    const Body back = parse_body(text);
    CHECK(to_text(back) == text);
    CHECK(back.key() == body.key());
    CHECK(back.inputs() == body.inputs());
    CHECK(back.dtype() == body.dtype());
    CHECK(body_dims(back) == body_dims(body));
    saw_row = saw_row || contains(text, "(rows ");
    saw_mask = saw_mask || contains(text, "] if ");
    saw_monoid = saw_monoid || contains(text, "online_sum_exp");
    saw_alias = saw_alias || back.output_aliases().has_value();
  }
  CHECK(saw_row);
  CHECK(saw_mask);
  CHECK(saw_monoid);
  CHECK(saw_alias);
}

TEST_CASE("body text: a read-back Body computes what the original computes", "[body]") {
  const Body body = online_sum_exp();
  const Body back = parse_body(to_text(body));
  std::vector<double> x = {0.5, -1.0, 3.0, 2.0, 0.25, 10.0, 9.5, -3.0, 0.0, 1.0};
  std::vector<double> want(2), got(2);
  interpret_body(body, {&x}, {}, want);
  interpret_body(back, {&x}, {}, got);
  CHECK(got == want);
}

TEST_CASE("body text: malformed or different text is an error with a location", "[body]") {
  BodyBuilder b({DType::F32});
  Expr i = b.output_loop(Expr::dim("n"));
  ScalarId x = b.load(0, i);
  const std::string text = to_text(b.finish(b.binary(ScalarOp::Mul, x, x), Expr::dim("n"), i));
  REQUIRE(text ==
          "body f32 (in0 f32)\n"
          "  %0 = load f32 in0[o0]\n"
          "  %1 = mul f32 %0 %0\n"
          "  loop o0 < n\n"
          "  store [o0] of n = %1\n");
  auto error = [](const std::string& t) { return user_error_of([&] { parse_body(t, "cache"); }); };
  CHECK(contains(error(replaced(text, "mul", "mull")), "cache:3:"));
  CHECK(contains(error(replaced(text, "mul", "mull")), "unknown op 'mull'"));
  CHECK(contains(error(replaced(text, "%0 %0", "%0 %7")), "%7 is used before it is defined"));
  CHECK(contains(error(replaced(text, "in0[o0]", "in3[o0]")), "unknown input in3"));
  CHECK(contains(error(replaced(text, "f32 (in0", "f32 (in1")), "in0, in1"));
  CHECK(contains(error(replaced(text, "< n", "< n +")), "bad expression"));
  CHECK(contains(error(replaced(text, "loop o0", "loop o1")), "o0, o1"));
  CHECK(contains(error(replaced(text, "= %1\n", "= %1\nmore\n")), "after the store"));
  CHECK(contains(error(text.substr(0, text.size() - 20)), "cache:"));
  CHECK(contains(error(""), "expected 'body'"));
  // Parses, but builds another Body: the load's dtype is the input's, so it prints otherwise.
  CHECK(contains(error(replaced(text, "load f32", "load f64")), "does not read back"));
}
