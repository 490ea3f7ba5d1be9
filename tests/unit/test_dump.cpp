// Dumps are deterministic: equal e-graphs built separately give byte-identical DOT and JSON,
// whatever their raw e-class ids.
#include <catch2/catch.hpp>

#include <string>

#include "engine/builtins.hpp"
#include "engine/dump.hpp"
#include "engine/egraph.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;

namespace {

const char* kProgram =
    "(datatype E (Num i64) (Var String) (Add E E) (Mul E E))\n"
    "(rewrite (Add a b) (Add b a))\n"
    "(rewrite (Mul a (Num 1)) a)\n"
    "(let e (Add (Mul (Var \"x\") (Num 1)) (Add (Num 2) (Var \"y\"))))\n"
    "(run 5)\n";

struct Dumps {
  std::string dot, json;
};

Dumps build(const std::string& text) {
  TestProgram p;
  p.run(text);
  return {engine::to_dot(p.egraph()), engine::to_json(p.egraph())};
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("dump: two separately built equal e-graphs give identical DOT and JSON", "[engine]") {
  Dumps a = build(kProgram);
  Dumps b = build(kProgram);
  CHECK(a.dot == b.dot);
  CHECK(a.json == b.json);
  CHECK(a.dot.rfind("digraph egraph {", 0) == 0);
  CHECK(a.json.rfind("{\"classes\": [", 0) == 0);
}

TEST_CASE("dump: the order of union arguments does not change the dump", "[engine]") {
  const std::string prelude =
      "(datatype E (Num i64) (Neg E))\n(let a (Neg (Num 1)))\n(let b (Neg (Num 2)))\n";
  Dumps x = build(prelude + "(union (Num 1) (Num 2))\n");
  Dumps y = build(prelude + "(union (Num 2) (Num 1))\n");
  CHECK(x.dot == y.dot);
  CHECK(x.json == y.json);
}

TEST_CASE("dump: e-classes are numbered by first appearance, not by raw id", "[engine]") {
  auto make = [](int wasted_ids) {
    engine::EGraph g;
    engine::Builtins b = engine::add_builtins(g);
    engine::SortId e = g.add_sort(engine::Sort{"E", true, nullptr});
    engine::FunctionDecl num{"Num", engine::FunctionKind::Constructor, {b.i64}, e,
                             engine::MergeKind::Union, {}, 1, false};
    engine::FunctionDecl add{"Add", engine::FunctionKind::Constructor, {e, e}, e,
                             engine::MergeKind::Union, {}, 1, false};
    engine::FunctionId num_id = g.add_function(num);
    engine::FunctionId add_id = g.add_function(add);
    for (int i = 0; i < wasted_ids; ++i) g.make_class();
    engine::Value one = engine::I64Sort::make(1), two = engine::I64Sort::make(2);
    engine::Value x = g.lookup_or_insert(num_id, &one);
    engine::Value y = g.lookup_or_insert(num_id, &two);
    engine::Value k[] = {x, y};
    g.lookup_or_insert(add_id, k);
    return std::pair{engine::to_dot(g), engine::to_json(g)};
  };
  auto plain = make(0);
  auto shifted = make(17);
  CHECK(plain.first == shifted.first);
  CHECK(plain.second == shifted.second);
  // Num 1 is e0, Num 2 is e1, the Add is e2 with children e0 and e1.
  CHECK(plain.second.find("{\"id\": 2, \"sort\": \"E\", \"nodes\": [{\"op\": \"Add\", \"children\": [0, 1]") !=
        std::string::npos);
  CHECK(plain.second.find("{\"id\": 0, \"sort\": \"E\", \"nodes\": [{\"op\": \"Num\", \"children\": [], "
                          "\"literals\": [\"1\"]}]}") != std::string::npos);
}

TEST_CASE("dump: merged e-classes list all their e-nodes once", "[engine]") {
  Dumps d = build("(datatype E (Num i64) (Neg E))\n(union (Num 1) (Neg (Num 2)))\n");
  CHECK(count(d.json, "\"id\": ") == 2);  // {Num 1, Neg ...} and {Num 2}
  CHECK(count(d.json, "\"op\": ") == 3);
  CHECK(count(d.dot, "subgraph cluster_") == 2);
  CHECK(count(d.dot, "[label=\"") == 3);
  CHECK(count(d.dot, " -> ") == 1);
}

TEST_CASE("dump: quotes in string literals are escaped", "[engine]") {
  Dumps d = build("(datatype E (Var String))\n(Var \"a\\\"b\")\n");
  // Every quote inside a label is escaped, so the label line has exactly two bare quotes.
  std::size_t line_start = d.dot.find("[label=\"Var");
  REQUIRE(line_start != std::string::npos);
  std::string line = d.dot.substr(line_start, d.dot.find('\n', line_start) - line_start);
  std::size_t bare = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '"') {
      std::size_t backslashes = 0;
      for (std::size_t j = i; j > 0 && line[j - 1] == '\\'; --j) ++backslashes;
      bare += backslashes % 2 == 0;
    }
  }
  CHECK(bare == 2);
}

TEST_CASE("dump: with a root, only what it reaches is dumped, numbered the same in any e-graph", "[engine]") {
  auto dump_root = [](const std::string& extra) {
    TestProgram p;
    p.run("(datatype E (Num i64) (Add E E) (Neg E))\n" + extra +
          "(let a (Add (Num 1) (Num 2)))\n(let b (Neg (Num 3)))\n");
    engine::Value a = p.global("a").value;
    return std::pair{engine::to_json(p.egraph(), a), engine::to_dot(p.egraph(), a)};
  };
  auto plain = dump_root("");
  auto with_noise = dump_root("(Neg (Neg (Num 9)))\n(Add (Num 7) (Num 8))\n");
  CHECK(plain.first == with_noise.first);
  CHECK(plain.second == with_noise.second);
  CHECK(count(plain.first, "\"id\": ") == 3);
  CHECK(count(plain.first, "\"op\": \"Neg\"") == 0);
  CHECK(count(plain.second, "subgraph cluster_") == 3);
}

TEST_CASE("dump: e-classes inside containers are children, named in the container literal", "[engine]") {
  TestProgram p;
  p.run("(datatype* (E (Leaf i64) (Group EV)) (sort EV (Vec E)))\n"
        "(let root (Group (vec-of (Leaf 1) (Leaf 2) (Leaf 1))))\n"
        "(let other (Leaf 3))\n");
  std::string json = engine::to_json(p.egraph(), p.global("root").value);
  // Leaf 1 and Leaf 2 are reachable through the Vec; Leaf 3 is not.
  CHECK(count(json, "\"op\": \"Leaf\"") == 2);
  CHECK(json.find("\"(vec-of e0 e1 e0)\"") != std::string::npos);
  CHECK(json.find("\"children\": [0, 1, 0]") != std::string::npos);
  std::string dot = engine::to_dot(p.egraph(), p.global("root").value);
  CHECK(count(dot, "lhead=cluster_") == 3);
}
