// Subsume hides a row from rule matching and extraction but keeps it in the table; delete
// removes it outright.
#include <catch2/catch.hpp>

#include <string>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;
using support::UserError;

TEST_CASE("subsume: a subsumed row is not matched by rules but still counted", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64) (Neg M))\n"
      "(relation Hit (M))\n"
      "(rule ((= x (Neg y))) ((Hit x)))\n"
      "(Neg (Num 1))\n"
      "(Neg (Num 2))\n"
      "(subsume (Neg (Num 1)))\n"
      "(run 3)\n");
  CHECK(p.rows("Hit") == 1);
  CHECK(p.holds("(Hit (Neg (Num 2)))"));
  CHECK_FALSE(p.holds("(Hit (Neg (Num 1)))"));
  CHECK(p.rows("Neg") == 2);
  CHECK(p.print("(print-size Neg)") == "2\n");
  CHECK(p.print("(print-size)") == "((Hit 1)\n (Neg 2)\n (Num 2))\n");
}

TEST_CASE("subsume: is sticky when the same row is written again", "[dsl]") {
  TestProgram p;
  p.run(
      "(relation R (i64))\n"
      "(relation Copy (i64))\n"
      "(rule ((R x)) ((Copy x)))\n"
      "(R 1)\n"
      "(subsume (R 1))\n"
      "(R 1)\n"
      "(run 3)\n");
  CHECK(p.rows("R") == 1);
  CHECK(p.rows("Copy") == 0);
}

TEST_CASE("subsume: check still sees subsumed rows", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(R 1)\n(R 2)\n(subsume (R 2))\n");
  CHECK(p.holds("(R 2)"));
  CHECK_FALSE(p.holds("(R 3)"));
}

TEST_CASE("subsume: rewrite :subsume leaves the right-hand side as the only extractable term", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64) (Mul M M :cost 0))\n"
      "(rewrite (Mul a (Num 1)) a :subsume)\n"
      "(let e (Mul (Num 5) (Num 1)))\n"
      "(run 3)\n");
  // Mul costs 0, so without subsumption the Mul e-node would be the cheaper term.
  CHECK(p.print("(extract e)") == "(Num 5)\n");
  CHECK(p.rows("Mul") == 1);
  CHECK(p.holds("(= e (Num 5))"));
}

TEST_CASE("subsume: an e-class whose only e-node is subsumed cannot be extracted", "[engine]") {
  TestProgram p;
  p.run("(datatype M (Num i64))\n(let a (Num 1))\n(subsume (Num 1))\n");
  CHECK_THROWS_AS(p.run("(extract a)"), UserError);
  CHECK_FALSE(p.tree_cost("a").has_value());
}

TEST_CASE("delete: removes a function row from lookups, matching and counts", "[dsl]") {
  TestProgram p;
  p.run(
      "(function f (i64) i64 :no-merge)\n"
      "(relation seen (i64 i64))\n"
      "(set (f 1) 10)\n"
      "(set (f 2) 20)\n"
      "(delete (f 1))\n"
      "(rule ((= y (f x))) ((seen x y)))\n"
      "(run 2)\n");
  CHECK(p.rows("f") == 1);
  CHECK(p.rows("seen") == 1);
  CHECK(p.holds("(seen 2 20)"));
  CHECK_FALSE(p.holds("(= (f 1) 10)"));
  // The keys can be written again, with any value (no conflict with the deleted row), and
  // the new row is new to the rule.
  p.run("(set (f 1) 11)\n(run 2)\n");
  CHECK(p.holds("(= (f 1) 11)"));
  CHECK(p.holds("(seen 1 11)"));
  CHECK(p.rows("seen") == 2);
}

TEST_CASE("delete: a rule can delete the rows it matched", "[dsl]") {
  TestProgram p;
  p.run(
      "(relation R (i64))\n"
      "(R 1) (R 2) (R 3) (R 4) (R 5)\n"
      "(rule ((R x) (< x 3)) ((delete (R x))))\n"
      "(run 1)\n");
  CHECK(p.rows("R") == 3);
  CHECK_FALSE(p.holds("(R 1)"));
  CHECK(p.holds("(R 3)"));
}

TEST_CASE("delete: of a constructor row drops that e-node only", "[dsl]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64) (Add M M))\n"
      "(let e (Add (Num 1) (Num 2)))\n"
      "(let f (Add (Num 3) (Num 4)))\n"
      "(union f (Num 7))\n"
      "(delete (Add (Num 1) (Num 2)))\n"
      "(delete (Add (Num 3) (Num 4)))\n");
  CHECK(p.rows("Add") == 0);
  CHECK(p.rows("Num") == 5);
  CHECK_THROWS_AS(p.run("(extract e)"), UserError);
  CHECK(p.print("(extract f)") == "(Num 7)\n");
}

TEST_CASE("delete and subsume: report whether the row existed and change the version only when they act", "[engine]") {
  engine::EGraph g;
  engine::Builtins b = engine::add_builtins(g);
  engine::FunctionDecl d;
  d.name = "R";
  d.kind = engine::FunctionKind::Relation;
  d.inputs = {b.i64};
  d.output = b.unit;
  engine::FunctionId r = g.add_function(std::move(d));
  engine::Value one[] = {engine::I64Sort::make(1)};
  engine::Value two[] = {engine::I64Sort::make(2)};
  g.set(r, one, 0);
  CHECK_FALSE(g.remove(r, two));
  CHECK_FALSE(g.subsume(r, two));
  auto v0 = g.version();
  CHECK(g.subsume(r, one));
  auto v1 = g.version();
  CHECK(v1 != v0);
  CHECK(g.subsume(r, one));  // already subsumed: no change
  CHECK(g.version() == v1);
  CHECK(g.table(r).size() == 1);
  CHECK(g.remove(r, one));
  CHECK(g.version() != v1);
  CHECK(g.table(r).size() == 0);
  CHECK_FALSE(g.remove(r, one));
  CHECK_FALSE(g.lookup(r, one).has_value());
}
