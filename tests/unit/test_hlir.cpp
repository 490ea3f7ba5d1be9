// The HLIR graph container: building, ordering, validation and the two text forms.
#include <catch2/catch.hpp>

#include "tests/unit/test_util.hpp"

#include <string>
#include <vector>

#include "tests/unit/graph_fixtures.hpp"
#include "graph/dtype.hpp"
#include "graph/hlir.hpp"
#include "support/diagnostic.hpp"

using namespace kiln::graph;
using kiln::support::UserError;

using kiln::testing::make;

namespace {


// y = sum_k x[s, k] * w[k, j] + b[j], built by hand as the tensor API will build it.
struct Mlp {
  Graph g;
  NodeId x, w, mul, sum, b, add, out;
  Expr seq = Expr::dim("seq");

  Mlp() {
    x = g.add_node(make(Op::Input, DType::F32, {seq, 64}, "x"));
    w = g.add_node(make(Op::Input, DType::F32, {64, 32}, "w"));
    mul = g.add_node(make(Op::Mul, DType::F32, {seq, 64, 32}));
    g.add_edge(x, mul, 0, View::contiguous({seq, 64}).reshape({seq, 64, 1})->expand(2, 32));
    g.add_edge(w, mul, 1, View::contiguous({64, 32}).reshape({1, 64, 32})->expand(0, seq));
    Node reduce = make(Op::SumReduce, DType::F32, {seq, 32});
    reduce.axis = 1;
    sum = g.add_node(reduce);
    g.add_edge(mul, sum, 0, View::contiguous({seq, 64, 32}));
    b = g.add_node(make(Op::Input, DType::F32, {32}, "b"));
    add = g.add_node(make(Op::Add, DType::F32, {seq, 32}));
    g.add_edge(sum, add, 0, View::contiguous({seq, 32}));
    g.add_edge(b, add, 1, View::contiguous({32}).reshape({1, 32})->expand(0, seq));
    out = g.add_node(make(Op::Output, DType::F32, {seq, 32}, "y"));
    g.add_edge(add, out, 0, View::contiguous({seq, 32}));
  }
};

std::string validation_error(const Graph& g) {
  return kiln::testing::user_error_of([&] { validate(g); });
}

using kiln::testing::contains;

}  // namespace

TEST_CASE("hlir: dtypes have names, sizes and parse back [graph]", "[graph]") {
  for (DType t : kAllDTypes) CHECK(parse_dtype(dtype_name(t)) == t);
  CHECK(dtype_name(DType::BF16) == "bf16");
  CHECK(dtype_size(DType::F32) == 4);
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK(dtype_size(DType::I64) == 8);
  CHECK(dtype_size(DType::Bool) == 1);
  CHECK(is_float(DType::F16));
  CHECK_FALSE(is_float(DType::I32));
  CHECK(is_integer(DType::U8));
  CHECK_FALSE(is_integer(DType::Bool));
  CHECK_FALSE(parse_dtype("float").has_value());
}

TEST_CASE("hlir: an MLP-like graph validates [graph]", "[graph]") {
  Mlp m;
  CHECK(m.g.size() == 7);
  CHECK_NOTHROW(validate(m.g));
}

TEST_CASE("hlir: topological order is deterministic and puts producers first [graph]", "[graph]") {
  Mlp m;
  std::vector<NodeId> order = m.g.topological_order();
  CHECK(order == std::vector<NodeId>{0, 1, 2, 3, 4, 5, 6});
  CHECK(Mlp().g.topological_order() == order);

  // Nodes added out of dependency order still come out producers first, the same every time.
  auto build = [] {
    Graph g;
    NodeId out = g.add_node(make(Op::Output, DType::F32, {4}, "y"));
    NodeId e = g.add_node(make(Op::Exp2, DType::F32, {4}));
    NodeId in = g.add_node(make(Op::Input, DType::F32, {4}, "x"));
    g.add_edge(e, out, 0, View::contiguous({4}));
    g.add_edge(in, e, 0, View::contiguous({4}));
    return g;
  };
  Graph g = build();
  CHECK(g.topological_order() == std::vector<NodeId>{2, 1, 0});
  CHECK(build().topological_order() == g.topological_order());
  CHECK(to_text(g) == to_text(build()));
}

TEST_CASE("hlir: inputs are ordered by slot and users are listed [graph]", "[graph]") {
  Mlp m;
  std::vector<Graph::Input> ins = m.g.inputs(m.add);
  REQUIRE(ins.size() == 2);
  CHECK(ins[0].producer == m.sum);
  CHECK(ins[1].producer == m.b);
  CHECK(ins[1].edge->slot == 1);
  CHECK(ins[1].edge->view.strides() == std::vector<Expr>{0, 1});
  CHECK(m.g.users(m.x) == std::vector<NodeId>{m.mul});
  CHECK(m.g.users(m.add) == std::vector<NodeId>{m.out});
  CHECK(m.g.users(m.out).empty());

  // Slots added in reverse still come back in slot order; one producer used twice is one user.
  Graph g;
  NodeId a = g.add_node(make(Op::Input, DType::F32, {8}, "a"));
  NodeId c = g.add_node(make(Op::Input, DType::F32, {8}, "c"));
  NodeId sq = g.add_node(make(Op::Mul, DType::F32, {8}));
  g.add_edge(c, sq, 1, View::contiguous({8}));
  g.add_edge(a, sq, 0, View::contiguous({8}));
  CHECK(g.inputs(sq)[0].producer == a);
  CHECK(g.inputs(sq)[1].producer == c);
  NodeId sq2 = g.add_node(make(Op::Mul, DType::F32, {8}));
  g.add_edge(a, sq2, 0, View::contiguous({8}));
  g.add_edge(a, sq2, 1, View::contiguous({8}));
  CHECK(g.users(a) == std::vector<NodeId>{sq, sq2});
  CHECK_THROWS_AS(g.add_edge(c, sq2, 1, View::contiguous({8})), UserError);
}

TEST_CASE("hlir: reachability follows edges [graph]", "[graph]") {
  Mlp m;
  CHECK(m.g.reaches(m.x, m.out));
  CHECK(m.g.reaches(m.b, m.add));
  CHECK_FALSE(m.g.reaches(m.out, m.x));
  CHECK_FALSE(m.g.reaches(m.x, m.b));
  CHECK(m.g.reaches(m.sum, m.sum));
}

TEST_CASE("hlir: an edge that would close a cycle is rejected [graph]", "[graph]") {
  Mlp m;
  std::string text = to_text(m.g);
  try {
    m.g.add_edge(m.add, m.mul, 2, View::contiguous({m.seq, 32}));
    FAIL("no error");
  } catch (const UserError& e) {
    CHECK(contains(e.what(), "would create a cycle"));
    CHECK(contains(e.what(), "%2 (Mul)"));
  }
  CHECK_THROWS_AS(m.g.add_edge(m.sum, m.sum, 1, View::contiguous({m.seq, 32})), UserError);
  CHECK_THROWS_AS(m.g.add_edge(m.sum, 99, 0, View::contiguous({})), UserError);
  CHECK(to_text(m.g) == text);  // nothing was added
}

TEST_CASE("hlir: validation rejects a wrong arity [graph]", "[graph]") {
  Mlp m;
  NodeId e = m.g.add_node(make(Op::Exp2, DType::F32, {m.seq, 32}));
  m.g.add_edge(m.add, e, 0, View::contiguous({m.seq, 32}));
  m.g.add_edge(m.sum, e, 1, View::contiguous({m.seq, 32}));
  std::string error = validation_error(m.g);
  CHECK(contains(error, "%7 (Exp2)"));
  CHECK(contains(error, "takes 1 input(s), got 2"));

  Graph g;
  NodeId a = g.add_node(make(Op::Input, DType::F32, {8}, "a"));
  NodeId add = g.add_node(make(Op::Add, DType::F32, {8}));
  g.add_edge(a, add, 1, View::contiguous({8}));
  CHECK(contains(validation_error(g), "input slot 0 is missing"));
}

TEST_CASE("hlir: validation rejects dtype mismatches [graph]", "[graph]") {
  Graph g;
  NodeId a = g.add_node(make(Op::Input, DType::F32, {8}, "a"));
  NodeId i = g.add_node(make(Op::Input, DType::I32, {8}, "i"));
  NodeId add = g.add_node(make(Op::Add, DType::F32, {8}));
  g.add_edge(a, add, 0, View::contiguous({8}));
  g.add_edge(i, add, 1, View::contiguous({8}));
  std::string error = validation_error(g);
  CHECK(contains(error, "%2 (Add)"));
  CHECK(contains(error, "input 1 has dtype i32, expected f32"));

  // LessThan gives Bool; Cast may change the dtype.
  Graph h;
  NodeId x = h.add_node(make(Op::Input, DType::F32, {8}, "x"));
  NodeId lt = h.add_node(make(Op::LessThan, DType::F32, {8}));
  h.add_edge(x, lt, 0, View::contiguous({8}));
  h.add_edge(x, lt, 1, View::contiguous({8}));
  CHECK(contains(validation_error(h), "the output has dtype f32, expected bool"));
  h.node(lt).dtype = DType::Bool;
  NodeId cast = h.add_node(make(Op::Cast, DType::F16, {8}));
  h.add_edge(lt, cast, 0, View::contiguous({8}));
  CHECK(validation_error(h).empty());
}

TEST_CASE("hlir: validation rejects view shapes the op does not expect [graph]", "[graph]") {
  Mlp m;
  SECTION("elementwise") {
    Graph& g = m.g;
    NodeId add = g.add_node(make(Op::Add, DType::F32, {m.seq, 32}));
    g.add_edge(m.add, add, 0, View::contiguous({m.seq, 32}));
    g.add_edge(m.b, add, 1, View::contiguous({32}));  // not expanded
    std::string error = validation_error(g);
    CHECK(contains(error, "%7 (Add)"));
    CHECK(contains(error, "input 1 is read with shape [32] but the op needs [seq, 32]"));
  }
  SECTION("reduction") {
    m.g.node(m.sum).shape = {m.seq, 64};  // the reduced axis must be dropped
    std::string error = validation_error(m.g);
    CHECK(contains(error, "%3 (SumReduce)"));
    CHECK(contains(error, "along axis 1"));
  }
  SECTION("reduction axis") {
    m.g.node(m.sum).axis = 3;
    CHECK(contains(validation_error(m.g), "axis 3 is out of range"));
  }
}

TEST_CASE("hlir: gather and scatter check rows and indices [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  Graph g;
  NodeId table = g.add_node(make(Op::Input, DType::F32, {1000, 64}, "embed"));
  NodeId ids = g.add_node(make(Op::Input, DType::I32, {seq}, "ids"));
  NodeId gather = g.add_node(make(Op::Gather, DType::F32, {seq, 64}));
  g.add_edge(table, gather, 0, View::contiguous({1000, 64}));
  g.add_edge(ids, gather, 1, View::contiguous({seq}));
  Node cache_node = make(Op::Input, DType::F32, {4096, 64}, "kv");
  cache_node.persistent = true;
  NodeId cache = g.add_node(cache_node);
  NodeId scatter = g.add_node(make(Op::Scatter, DType::F32, {4096, 64}));
  g.add_edge(cache, scatter, 0, View::contiguous({4096, 64}));
  g.add_edge(ids, scatter, 1, View::contiguous({seq}));
  g.add_edge(gather, scatter, 2, View::contiguous({seq, 64}));
  CHECK(validation_error(g).empty());
  g.node(gather).shape = {seq, 32};
  CHECK(contains(validation_error(g), "%2 (Gather): output shape [seq, 32] should be [seq, 64]"));
}

TEST_CASE("hlir: the text form [graph]", "[graph]") {
  Mlp m;
  CHECK(to_text(m.g) ==
        "%0 = Input f32 [seq, 64] name=\"x\"\n"
        "%1 = Input f32 [64, 32] name=\"w\"\n"
        "%2 = Mul f32 [seq, 64, 32] (%0 as View(shape=[seq, 64, 32], strides=[64, 1, 0], "
        "offset=0), %1 as View(shape=[seq, 64, 32], strides=[0, 32, 1], offset=0))\n"
        "%3 = SumReduce f32 [seq, 32] (%2) axis=1\n"
        "%4 = Input f32 [32] name=\"b\"\n"
        "%5 = Add f32 [seq, 32] (%3, %4 as View(shape=[seq, 32], strides=[0, 1], offset=0))\n"
        "%6 = Output f32 [seq, 32] (%5) name=\"y\"\n");
}

TEST_CASE("graph breaks assign nodes to chunks in order of addition", "[hlir]") {
  Graph g;
  Node in;
  in.op = Op::Input;
  in.name = "x";
  in.shape = {Expr(4)};
  g.add_node(in);
  CHECK(g.num_chunks() == 1);
  g.add_break();
  in.name = "y";
  NodeId y = g.add_node(in);
  g.add_break();
  g.add_break();  // an empty chunk
  in.name = "z";
  NodeId z = g.add_node(in);
  CHECK(g.num_chunks() == 4);
  CHECK(g.chunk_of(0) == 0);
  CHECK(g.chunk_of(y) == 1);
  CHECK(g.chunk_of(z) == 3);
  CHECK(kiln::testing::contains(to_text(g), "-- chunk 1 --\n%1 = Input"));
  CHECK(kiln::testing::contains(to_text(g), "-- chunk 3 --\n%2 = Input"));
}
