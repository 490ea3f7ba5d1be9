// Extraction: tree cost with :cost and deterministic ties; DAG cost that pays a shared e-class
// once, with node costs from a C++ callback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/extract.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;
using support::UserError;

TEST_CASE("extract: tree cost adds :cost per e-node and 1 per literal", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype E (Num i64) (Add E E :cost 5) (Big i64 :cost 100))\n"
      "(let x (Add (Num 1) (Num 2)))\n"
      "(let n (Num 4))\n");
  CHECK(p.tree_cost("n") == 2u);
  CHECK(p.tree_cost("x") == 9u);
  CHECK(p.print("(extract x)") == "(Add (Num 1) (Num 2))\n");
  p.run("(union x (Big 3))");
  CHECK(p.tree_cost("x") == 9u);
  CHECK(p.print("(extract x)") == "(Add (Num 1) (Num 2))\n");
  p.run("(union x (Num 3))");
  CHECK(p.tree_cost("x") == 2u);
  CHECK(p.print("(extract x)") == "(Num 3)\n");
}

TEST_CASE("extract: costs improve through parents after a child gets cheaper", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype E (Num i64) (Heavy i64 :cost 50) (Neg E))\n"
      "(let h (Heavy 1))\n"
      "(let top (Neg (Neg h)))\n");
  CHECK(p.tree_cost("top") == 53u);
  p.run("(union h (Num 1))");
  CHECK(p.tree_cost("top") == 4u);
  CHECK(p.print("(extract top)") == "(Neg (Neg (Num 1)))\n");
}

TEST_CASE("extract: ties are broken the same way whatever the order of unions and insertions", "[dsl]") {
  std::vector<std::string> orders = {
      "(let x (A)) (B) (C) (union x (B)) (union x (C))",
      "(let x (A)) (B) (C) (union (C) x) (union (B) (C))",
      "(C) (B) (let x (A)) (union (B) (C)) (union x (B))",
      "(B) (C) (let x (A)) (union (C) x) (union (B) x)",
  };
  std::string first;
  for (const std::string& order : orders) {
    TestProgram p;
    p.run("(datatype E (A) (B) (C))\n" + order);
    std::string term = p.print("(extract x)");
    if (first.empty()) first = term;
    CHECK(term == first);
    CHECK(p.print("(extract x 3)") == "(\n   (A)\n   (B)\n   (C)\n)\n");
  }
  CHECK(first == "(A)\n");
}

TEST_CASE("extract: variants list one term per e-node, cheapest first, up to the limit", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype E (Num i64) (Add E E :cost 3) (Big i64 :cost 20))\n"
      "(let x (Num 7))\n"
      "(union x (Big 7))\n"
      "(union x (Add (Num 3) (Num 4)))\n");
  CHECK(p.print("(extract x 2)") == "(\n   (Num 7)\n   (Add (Num 3) (Num 4))\n)\n");
  CHECK(p.print("(extract x 10)") == "(\n   (Num 7)\n   (Add (Num 3) (Num 4))\n   (Big 7)\n)\n");
}

TEST_CASE("extract: unextractable constructors are never chosen", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype E (Num i64 :cost 10) (Hidden i64 :unextractable :cost 0))\n"
      "(let x (Hidden 1))\n");
  CHECK_THROWS_AS(p.run("(extract x)"), UserError);
  CHECK_FALSE(p.tree_cost("x").has_value());
  p.run("(union x (Num 2))");
  CHECK(p.print("(extract x)") == "(Num 2)\n");
}

TEST_CASE("extract: cycles are skipped in favour of a finite term", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype E (Leaf i64) (F E))\n"
      "(let x (Leaf 1))\n"
      "(union x (F x))\n");
  CHECK(p.print("(extract x)") == "(Leaf 1)\n");
  CHECK(p.print("(extract (F x))") == "(Leaf 1)\n");
  TestProgram only_cycle;
  only_cycle.run("(datatype E (Leaf i64) (F E) (G E))\n(let x (F (Leaf 1)))\n(union x (G x))\n"
                 "(delete (F (Leaf 1)))\n");
  CHECK_FALSE(only_cycle.tree_cost("x").has_value());
}

TEST_CASE("extract: tree costs saturate instead of wrapping around", "[dsl]") {
  TestProgram p;
  // Each Num costs 2^63 - 1 + 1 = 2^63; a Pair of two would wrap to 1 in 64-bit arithmetic.
  p.run(
      "(datatype E (Num i64 :cost 9223372036854775807) (Pair E E :cost 1) (Cheap :cost 5))\n"
      "(let x (Pair (Num 1) (Num 2)))\n"
      "(union x (Cheap))\n");
  CHECK(p.print("(extract x)") == "(Cheap)\n");
  CHECK(p.tree_cost("x") == 5u);
}

TEST_CASE("extract: the DAG extractor pays a shared subterm once", "[engine]") {
  TestProgram p;
  p.run(
      "(datatype E (Leaf i64) (Big E :cost 10) (Mid1 E :cost 6) (Mid2 E :cost 6) (P E E) (Q E E))\n"
      "(let x (Leaf 0))\n"
      "(let s (Big x))\n"
      "(let root (P s s))\n"
      "(union root (Q (Mid1 x) (Mid2 x)))\n");
  // As a tree, P(s, s) counts Big twice: 1 + 2 * (10 + 2) = 25 > Q's 1 + 2 * (6 + 2) = 17.
  CHECK(p.print("(extract root)") == "(Q (Mid1 (Leaf 0)) (Mid2 (Leaf 0)))\n");
  const engine::EGraph& g = p.egraph();
  int calls = 0;
  engine::DagExtractor dag(g, [&calls](const engine::EGraph& eg, const engine::ENode& node) {
    ++calls;
    return static_cast<double>(eg.function(node.function).cost);
  });
  CHECK(calls > 0);
  auto result = dag.extract(p.global("root").value);
  REQUIRE(result.has_value());
  // As a DAG: root P (1) + Big (10) + Leaf (1) = 12 < Q's 1 + 6 + 6 + 1 = 14.
  CHECK(result->cost == Approx(12.0));
  REQUIRE(result->choice.size() == 3);
  engine::Value root = g.find_const(p.global("root").value);
  engine::Value s = g.find_const(p.global("s").value);
  engine::Value x = g.find_const(p.global("x").value);
  REQUIRE(result->choice.count(root) == 1);
  CHECK(result->choice.at(root).function == p.function("P"));
  CHECK(result->choice.at(s).function == p.function("Big"));
  CHECK(result->choice.at(x).function == p.function("Leaf"));
}

TEST_CASE("extract: the DAG extractor takes node costs from the callback", "[engine]") {
  TestProgram p;
  p.run(
      "(datatype E (Leaf i64) (Big E) (Mid1 E) (Mid2 E) (P E E) (Q E E))\n"
      "(let x (Leaf 0))\n"
      "(let root (P (Big x) (Big x)))\n"
      "(union root (Q (Mid1 x) (Mid2 x)))\n");
  const engine::EGraph& g = p.egraph();
  engine::FunctionId big = p.function("Big");
  engine::FunctionId q = p.function("Q");
  auto costs = [&](double big_cost) {
    return [=](const engine::EGraph&, const engine::ENode& node) {
      return node.function == big ? big_cost : 1.0;
    };
  };
  engine::Value root = g.find_const(p.global("root").value);
  {
    engine::DagExtractor dag(g, costs(1.5));
    auto r = dag.extract(root);
    REQUIRE(r.has_value());
    CHECK(r->cost == Approx(3.5));  // P + Big + Leaf
    CHECK(r->choice.at(root).function == p.function("P"));
  }
  {
    engine::DagExtractor dag(g, costs(20.0));
    auto r = dag.extract(root);
    REQUIRE(r.has_value());
    CHECK(r->cost == Approx(4.0));  // Q + Mid1 + Mid2 + Leaf
    CHECK(r->choice.at(root).function == q);
    CHECK(r->choice.size() == 4);
  }
}

TEST_CASE("extract: DAG extraction is deterministic across separately built e-graphs", "[engine]") {
  auto choose = [](const std::string& order) {
    TestProgram p;
    p.run("(datatype E (Leaf i64) (A E) (B E) (P E E))\n" + order);
    engine::DagExtractor dag(p.egraph(),
                             [](const engine::EGraph&, const engine::ENode&) { return 1.0; });
    auto r = dag.extract(p.global("root").value);
    REQUIRE(r.has_value());
    std::vector<std::string> names;
    for (const auto& [eclass, node] : r->choice) {
      names.push_back(p.egraph().function(node.function).name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  auto first = choose("(let root (P (A (Leaf 1)) (B (Leaf 1))))\n(union (A (Leaf 1)) (B (Leaf 1)))\n");
  auto second = choose("(let root (P (A (Leaf 1)) (B (Leaf 1))))\n(union (B (Leaf 1)) (A (Leaf 1)))\n");
  CHECK(first == second);
  CHECK(first.size() == 3);
}

TEST_CASE("extract: the DAG extractor has nothing for a class without extractable e-nodes", "[engine]") {
  TestProgram p;
  p.run("(datatype E (Num i64) (Hidden i64 :unextractable))\n(let x (Hidden 1))\n(let y (Num 1))\n");
  engine::DagExtractor dag(p.egraph(),
                           [](const engine::EGraph&, const engine::ENode&) { return 1.0; });
  CHECK_FALSE(dag.extract(p.global("x").value).has_value());
  auto y = dag.extract(p.global("y").value);
  REQUIRE(y.has_value());
  CHECK(y->cost == Approx(1.0));
}

TEST_CASE("extract: the DAG extractor follows e-classes inside containers", "[engine]") {
  TestProgram p;
  p.run("(datatype E (Leaf i64) (Wrap E))\n"
        "(sort EV (Vec E))\n"
        "(constructor Group (EV) E)\n"
        "(let shared (Wrap (Leaf 1)))\n"
        "(let root (Group (vec-of shared shared (Leaf 2))))\n");
  engine::DagExtractor dag(p.egraph(),
                           [](const engine::EGraph&, const engine::ENode&) { return 1.0; });
  auto r = dag.extract(p.global("root").value);
  REQUIRE(r.has_value());
  // Group, Wrap, Leaf 1, Leaf 2: the class used twice through the Vec is paid once.
  CHECK(r->choice.size() == 4);
  CHECK(r->cost == Approx(4.0));
  CHECK(r->choice.count(p.egraph().find_const(p.global("shared").value)) == 1);
}

TEST_CASE("extract: a container element without a term leaves its e-node without a DAG term", "[engine]") {
  TestProgram p;
  p.run("(datatype E (Leaf i64) (Hidden i64 :unextractable))\n"
        "(sort ES (Set E))\n"
        "(constructor Group (ES) E)\n"
        "(let root (Group (set-of (Leaf 1) (Hidden 2))))\n");
  engine::DagExtractor dag(p.egraph(),
                           [](const engine::EGraph&, const engine::ENode&) { return 1.0; });
  CHECK_FALSE(dag.extract(p.global("root").value).has_value());
}
