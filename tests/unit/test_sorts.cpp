// The Expr, Shape and View engine sorts (compiler/sorts.hpp): every primitive through small
// programs, failures that filter matches, and a graph round trip through rules/hlir.egg.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/sorts.hpp"
#include "graph/hlir.hpp"
#include "tests/unit/graph_program.hpp"

using namespace kiln;
using graph::Expr;
using graph::View;

using kiln::testing::GraphProgram;

namespace {


std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string hlir_rules() { return read_file(std::string(KILN_SOURCE_DIR) + "/rules/hlir.egg"); }

}  // namespace

TEST_CASE("sorts: Expr literals, arithmetic and constants", "[compiler]") {
  GraphProgram p;
  CHECK(p.holds("(= (expr \"2*seq + 1\") (expr-add (expr-mul (expr 2) (dim \"seq\")) (expr 1)))"));
  CHECK(p.holds("(= (expr 4) (expr-const 4))"));
  CHECK(p.holds("(= (expr-sub (dim \"n\") (dim \"n\")) (expr 0))"));
  CHECK(p.holds("(= (expr-div (expr 7) (expr 2)) (expr 3))"));
  CHECK(p.holds("(= (expr-div (expr -7) (expr 2)) (expr -4))"));  // floor
  CHECK(p.holds("(= (expr-ceil-div (expr 7) (expr 2)) (expr 4))"));
  CHECK(p.holds("(= (expr-mod (expr -7) (expr 2)) (expr 1))"));
  CHECK(p.holds("(= (expr-min (dim \"n\") (expr 0)) (expr 0))"));
  CHECK(p.holds("(= (expr-max (expr 3) (expr 5)) (expr 5))"));
  CHECK(p.holds("(= (expr-lt (expr 3) (expr 5)) (expr 1))"));
  CHECK(p.holds("(= (expr-le (expr 5) (expr 5)) (expr 1))"));
  CHECK(p.holds("(= (expr-eq (expr 3) (expr 5)) (expr 0))"));
  CHECK(p.holds("(= (expr-simplify (expr \"(x*8 + 3)/8\")) (dim \"x\"))"));
  CHECK(p.holds("(expr-const? (expr \"4*2\"))"));
  CHECK_FALSE(p.holds("(expr-const? (dim \"n\"))"));
  CHECK(p.holds("(= (expr-value (expr \"ceil_div(10, 4)\")) 3)"));
  CHECK(p.holds("(= (expr-to-string (expr \"1 + 2*seq\")) \"2*seq + 1\")"));
  // Symbolic comparisons stay symbolic; expr-value fails on them.
  CHECK_FALSE(p.holds("(= (expr-value (expr-lt (dim \"a\") (dim \"b\"))) 1)"));
}

TEST_CASE("sorts: values are interned and print as literals that read back", "[compiler]") {
  GraphProgram p;
  p.run("(function e (String) Expr :no-merge)\n"
        "(set (e \"b\") (expr \"seq*2 + 1\"))\n"
        "(set (e \"a\") (expr-add (dim \"seq\") (dim \"seq\")))\n"
        "(function v (i64) View :no-merge)\n"
        "(set (v 0) (view-contiguous \"[seq, 64]\"))\n");
  std::string printed = p.print("(print-function e)");
  CHECK(printed == "(\n   (e \"b\") -> (expr \"2*seq + 1\")\n   (e \"a\") -> (expr \"2*seq\")\n)\n");
  CHECK(p.print("(print-function v)") ==
        "(\n   (v 0) -> (view \"View(shape=[seq, 64], strides=[64, 1], offset=0)\")\n)\n");
  // The printed literals read back as the same values.
  CHECK(p.holds("(= (e \"b\") (expr \"2*seq + 1\"))"));
  CHECK(p.holds("(= (v 0) (view \"View(shape=[seq, 64], strides=[64, 1], offset=0)\"))"));
  // Interning: one value per distinct Expr, whatever the spelling.
  CHECK(p.sorts().expr_sort->make(Expr::dim("seq") * 2 + 1) ==
        p.sorts().expr_sort->make(graph::parse_expr("1 + seq*2")));
}

TEST_CASE("sorts: Shape and View primitives", "[compiler]") {
  GraphProgram p;
  p.run("(let s (shape \"[seq, 64]\"))\n"
        "(let v (view-contiguous s))\n");
  CHECK(p.holds("(= s (shape (dim \"seq\") (expr 64)))"));
  CHECK(p.holds("(= (shape-rank s) 2)"));
  CHECK(p.holds("(= (shape-dim s 0) (dim \"seq\"))"));
  CHECK(p.holds("(= (shape-numel s) (expr \"64*seq\"))"));
  CHECK(p.holds("(= (view-shape v) s)"));
  CHECK(p.holds("(= v (view-contiguous \"[seq, 64]\"))"));
  CHECK(p.holds("(view-contiguous? v)"));
  CHECK(p.holds("(= (view-rank v) 2)"));
  CHECK(p.holds("(= (view-dim v 1) (expr 64))"));
  CHECK(p.holds("(= (view-stride v 0) (expr 64))"));
  CHECK(p.holds("(= (view-offset v) (expr 0))"));
  CHECK(p.holds("(= (view-numel v) (expr \"seq*64\"))"));
  CHECK(p.holds("(= (view-permute v 1 0) "
                "(view \"View(shape=[64, seq], strides=[1, 64], offset=0)\"))"));
  CHECK_FALSE(p.holds("(view-contiguous? (view-permute v 1 0))"));
  CHECK(p.holds("(= (view-expand (view-contiguous \"[1, 64]\") 0 (dim \"seq\")) "
                "(view \"View(shape=[seq, 64], strides=[0, 1], offset=0)\"))"));
  CHECK(p.holds("(= (view-reshape v (shape \"[seq, 8, 8]\")) (view-contiguous \"[seq, 8, 8]\"))"));
  CHECK(p.holds("(= (view-slice v 1 (expr 8) (expr 16)) "
                "(view \"View(shape=[seq, 8], strides=[64, 1], offset=8)\"))"));
  CHECK(p.holds("(= (view-pad (view-contiguous \"[4]\") 0 (expr 1) (expr 2)) "
                "(view \"View(shape=[7], strides=[1], offset=-1, mask=[[1, 5)])\"))"));
  CHECK(p.holds("(= (view-to-string v) \"View(shape=[seq, 64], strides=[64, 1], offset=0)\")"));
  // Reading a permuted tensor through its transpose reads the buffer contiguously.
  CHECK(p.holds("(= (view-compose (view-permute (view-contiguous \"[64, 32]\") 1 0) "
                "(view-permute (view-contiguous \"[32, 64]\") 1 0)) (view-contiguous \"[32, 64]\"))"));
}

TEST_CASE("sorts: failing primitives filter matches in queries", "[compiler]") {
  GraphProgram p;
  p.run("(relation viewed (View))\n"
        "(relation flat (View))\n"
        "(viewed (view-contiguous \"[4, 6]\"))\n"
        "(viewed (view-permute (view-contiguous \"[4, 6]\") 1 0))\n"
        "(rule ((viewed v) (= f (view-reshape v (shape \"[24]\")))) ((flat f)))\n"
        "(run 1)\n");
  CHECK(p.rows("flat") == 1);  // the permuted view needs a copy to flatten
  CHECK(p.holds("(flat (view-contiguous \"[24]\"))"));
  // Out-of-range dims, a zero divisor and non-constant values fail rather than throw.
  p.run("(relation ok (i64))\n"
        "(rule ((viewed v) (= d (view-dim v 2))) ((ok 1)))\n"
        "(rule ((viewed v) (= d (view-permute v 0 0))) ((ok 2)))\n"
        "(rule ((viewed v) (= d (expr-div (view-dim v 0) (expr 0)))) ((ok 3)))\n"
        "(rule ((viewed v) (= x (expr-value (dim \"n\")))) ((ok 4)))\n"
        "(rule ((viewed v) (= x (expr \"2 +\"))) ((ok 5)))\n"
        "(run 1)\n");
  CHECK(p.rows("ok") == 0);
}

TEST_CASE("sorts: bad literals in actions are located run-time failures", "[compiler]") {
  GraphProgram p;
  std::string error = p.error("(let e (expr \"2 * * seq\"))");
  CHECK(kiln::testing::contains(error, "t.egg:1:8: error: primitive 'expr' failed"));
  CHECK_THROWS_AS(p.run("(let v (view \"View(shape=[4], strides=[1, 2], offset=0)\"))"),
                  support::RuntimeFailure);
  CHECK_THROWS_AS(p.run("(let d (dim \"not a name\"))"), support::RuntimeFailure);
  CHECK_NOTHROW(p.run("(fail (let s (shape \"[4,\")))"));  // an expected run-time failure
}

TEST_CASE("sorts: a rule computes with Expr in its query and its action", "[compiler]") {
  GraphProgram p;
  p.run("(datatype T (Tensor String Shape) (Flat T))\n"
        "(relation numel (T Expr))\n"
        "(let x (Tensor \"x\" (shape \"[seq, 64]\")))\n"
        "(let y (Tensor \"y\" (shape \"[3]\")))\n"
        // Tensors whose dim 1 is a constant: flatten, keeping the element count.
        "(rule ((= t (Tensor name s)) (= n (shape-numel s)) (= last (shape-dim s 1))\n"
        "       (expr-const? last))\n"
        "      ((numel t (expr-mul (expr-div n last) last))\n"
        "       (union (Flat t) (Tensor name (shape n))))\n"
        "      :name \"flatten-constant-last\")\n"
        "(run 1)\n");
  CHECK(p.holds("(numel x (expr \"64*seq\"))"));
  CHECK(p.holds("(= (Flat x) (Tensor \"x\" (shape \"[64*seq]\")))"));
  CHECK_FALSE(p.holds("(numel y e)"));  // rank 1: shape-dim 1 fails
}

TEST_CASE("sorts: a C++ graph loads through to_egglog and rules/hlir.egg", "[compiler]") {
  using graph::DType;
  using graph::Node;
  using graph::Op;
  graph::Graph g;
  Expr seq = Expr::dim("seq");
  auto make = [](Op op, std::vector<Expr> shape, std::string name = "") {
    Node n;
    n.op = op;
    n.dtype = DType::F32;
    n.shape = std::move(shape);
    n.name = std::move(name);
    return n;
  };
  graph::NodeId x = g.add_node(make(Op::Input, {seq, 64}, "x"));
  graph::NodeId w = g.add_node(make(Op::Input, {64, 32}, "w"));
  graph::NodeId mul = g.add_node(make(Op::Mul, {seq, 64, 32}));
  g.add_edge(x, mul, 0, View::contiguous({seq, 64}).reshape({seq, 64, 1})->expand(2, 32));
  g.add_edge(w, mul, 1, View::contiguous({64, 32}).reshape({1, 64, 32})->expand(0, seq));
  Node reduce = make(Op::SumReduce, {seq, 32});
  reduce.axis = 1;
  graph::NodeId sum = g.add_node(reduce);
  g.add_edge(mul, sum, 0, View::contiguous({seq, 64, 32}));
  Node c = make(Op::Constant, {});
  c.value = 1.0;
  graph::NodeId one = g.add_node(c);
  Node state = make(Op::Input, {16}, "cache");
  state.persistent = true;
  g.add_node(state);
  graph::NodeId custom = g.add_node(make(Op::CustomOp, {seq, 32}, "my_op"));
  g.add_edge(sum, custom, 0, View::contiguous({seq, 32}));
  g.add_edge(one, custom, 1, View::contiguous({}).reshape({1, 1})->expand(0, seq).expand(1, 32));
  graph::NodeId out = g.add_node(make(Op::Output, {seq, 32}, "y"));
  g.add_edge(custom, out, 0, View::contiguous({seq, 32}));
  graph::validate(g);

  std::string egg = graph::to_egglog(g);
  CHECK(kiln::testing::contains(egg, "(let $t0 (Input \"x\" (F32) (shape \"[seq, 64]\")))\n"));
  CHECK(kiln::testing::contains(
      egg, "(let $t3 (SumReduce $t2 (view \"View(shape=[seq, 64, 32], strides=[2048, 32, 1], "
           "offset=0)\") 1))\n"));
  CHECK(kiln::testing::contains(egg, "(let $t4 (Constant 1.0 (F32) (shape \"[]\")))\n"));
  CHECK(kiln::testing::contains(egg, "(Persistent $t5)\n"));
  CHECK(graph::to_egglog(g) == egg);

  GraphProgram p;
  p.run(hlir_rules());
  p.run(egg);
  CHECK(p.holds("(= $t7 (Output $t6 (view-contiguous \"[seq, 32]\") \"y\"))"));
  CHECK(p.holds("(= $t1 (Input \"w\" (F32) (shape (expr 64) (expr 32))))"));
  CHECK(p.holds("(Persistent (Input \"cache\" (F32) (shape \"[16]\")))"));
  CHECK(p.holds("(= $t6 (CustomOp \"my_op\" (HCons $t3 (view-contiguous \"[seq, 32]\") "
                "(HCons $t4 (view \"View(shape=[seq, 32], strides=[0, 0], offset=0)\") (HNil))) "
                "(F32) (shape \"[seq, 32]\")))"));
  // A rule over the loaded terms: the Mul reads x broadcast along its last dim.
  p.run("(relation broadcast-last (HLIR))\n"
        "(rule ((= m (Mul a va b vb)) (= (view-stride va 2) (expr 0))) ((broadcast-last a)))\n"
        "(run 1)\n");
  CHECK(p.holds("(broadcast-last $t0)"));
  CHECK_FALSE(p.holds("(broadcast-last $t1)"));
}

TEST_CASE("sorts: Body values intern by content and answer body-* primitives", "[compiler]") {
  GraphProgram p;
  const compiler::GraphSorts& s = p.sorts();
  auto softmax_body = [] {
    graph::BodyBuilder b({graph::DType::F32});
    Expr i = b.output_loop(Expr(4));
    std::string r = b.reduce_var();
    graph::ScalarId total =
        b.reduce(b.sum_monoid(graph::DType::F32), r, Expr(8), {b.load(0, i * 8 + Expr::dim(r))},
                 graph::DType::F32);
    return b.finish(total, Expr(4), i);
  };
  const engine::Value a = s.body_sort->make(softmax_body());
  const engine::Value b = s.body_sort->make(softmax_body());
  CHECK(a == b);  // built twice, one value
  auto call = [&](const char* name, engine::Value arg) {
    const auto& overloads = p.egraph().primitives().overloads(name);
    REQUIRE(overloads.size() == 1);
    engine::Value out = 0;
    REQUIRE(overloads[0]->apply(&arg, 1, out));
    return out;
  };
  CHECK(engine::I64Sort::get(call("body-inputs", a)) == 1);
  CHECK(engine::I64Sort::get(call("body-loops", a)) == 1);
  CHECK(engine::I64Sort::get(call("body-reduces", a)) == 1);
  const std::string key = s.string_sort->get(call("body-key", a));
  CHECK(key.rfind("kiln_", 0) == 0);
  CHECK(key.size() == 5 + 32);
  CHECK(s.body_sort->print(a) == "(body \"" + key + "\")");
  CHECK(kiln::testing::contains(s.string_sort->get(call("body-text", a)), "reduce f32 m0 r0 < 8"));
}
