// The program interpreter: commands run in order, errors stop at the failing command with its
// location, and rules are checked when they are declared.
#include <catch2/catch.hpp>

#include <string>

#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using support::UserError;
using kiln::testing::TestProgram;

TEST_CASE("session: a syntax error anywhere in the text runs nothing", "[dsl]") {
  TestProgram p;
  CHECK_THROWS_AS(p.run("(relation R (i64))\n(R 1)\n(R"), UserError);
  CHECK_FALSE(p.egraph().find_function("R").has_value());
}

TEST_CASE("session: a failing command stops the program and keeps earlier effects", "[dsl]") {
  TestProgram p;
  std::string message = p.error("(relation R (i64))\n(R 1)\n(check (R 2))\n(R 3)\n");
  CHECK(message.find("t.egg:3:1") != std::string::npos);
  CHECK(message.find("check failed") != std::string::npos);
  CHECK(p.rows("R") == 1);
}

TEST_CASE("session: a rule whose action uses an unbound variable is rejected when declared", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(R 1)\n");
  std::string message = p.error("(rule ((R x)) ((R y)))");
  CHECK(message.find("'y'") != std::string::npos);
  CHECK(message.find("t.egg:1:") != std::string::npos);
  p.run("(run 3)");
  CHECK(p.rows("R") == 1);
}

TEST_CASE("session: an ungrounded query variable is rejected", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n");
  // z only feeds a primitive, so nothing in the database binds it.
  std::string message = p.error("(rule ((R x) (R (+ z 1))) ((R x)))");
  CHECK(message.find("'z'") != std::string::npos);
  CHECK(message.find("ungrounded") != std::string::npos);
}

TEST_CASE("session: type and arity mistakes are user errors", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(datatype E (Num i64))\n");
  CHECK_THROWS_AS(p.run("(R \"a\")"), UserError);
  CHECK_THROWS_AS(p.run("(R 1 2)"), UserError);
  CHECK_THROWS_AS(p.run("(rule ((R x) (= x (Num 1))) ())"), UserError);
  CHECK_THROWS_AS(p.run("(relation R (i64))"), UserError);  // redeclared
  CHECK_THROWS_AS(p.run("(rewrite x (Num 1))"), UserError);  // lhs is not a call
  CHECK_THROWS_AS(p.run("(run nosuchruleset 1)"), UserError);
  CHECK(p.rows("R") == 0);
}

TEST_CASE("session: fail expects a run-time failure of its command", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(R 1)\n");
  CHECK_NOTHROW(p.run("(fail (check (R 2)))"));
  CHECK_THROWS_AS(p.run("(fail (check (R 1)))"), UserError);
  // A mistake in the program is not a run-time failure, so fail does not hide it.
  CHECK_THROWS_AS(p.run("(fail (check (Nope 1)))"), UserError);
}

TEST_CASE("session: push and pop restore tables, rules and globals", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(relation S (i64))\n(R 1)\n(push)\n"
        "(R 2)\n(rule ((R x)) ((S x)))\n(let g 5)\n(run 1)\n");
  CHECK(p.rows("R") == 2);
  CHECK(p.rows("S") == 2);
  CHECK(p.session().global("g") != nullptr);
  p.run("(pop)");
  CHECK(p.rows("R") == 1);
  CHECK(p.rows("S") == 0);
  CHECK(p.session().global("g") == nullptr);
  p.run("(run 3)");  // the rule was popped too
  CHECK(p.rows("S") == 0);
  CHECK_THROWS_AS(p.run("(pop)"), UserError);
}

TEST_CASE("session: globals hold a value and a sort, and are constants in rules", "[dsl]") {
  TestProgram p;
  p.run("(datatype E (Num i64) (Neg E))\n(let a (Num 1))\n(let n 41)\n"
        "(relation hit (i64))\n(rule ((= a (Num k))) ((hit (+ k n))))\n(run 1)\n");
  CHECK(p.global("a").sort == *p.egraph().find_sort("E"));
  CHECK(p.global("n").sort == p.session().builtins().i64);
  CHECK(engine::I64Sort::get(p.global("n").value) == 41);
  CHECK(p.session().global("nope") == nullptr);
  CHECK_NOTHROW(p.run("(check (hit 42))"));
  CHECK(p.rows("hit") == 1);
}

TEST_CASE("session: print-function and print-size write egglog's text", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64 String))\n(function f (i64) i64 :no-merge)\n"
        "(R 2 \"b\")\n(R 1 \"a\")\n(set (f 3) 9)\n");
  CHECK(p.print("(print-function R)") == "(\n   (R 2 \"b\") -> (R 2 \"b\")\n   (R 1 \"a\") -> (R 1 \"a\")\n)\n");
  CHECK(p.print("(print-function R 1)") == "(\n   (R 2 \"b\") -> (R 2 \"b\")\n)\n");
  CHECK(p.print("(print-function f)") == "(\n   (f 3) -> 9\n)\n");
  CHECK(p.print("(print-size)") == "((R 2)\n (f 1))\n");
  CHECK(p.print("(print-size f)") == "1\n");
}

TEST_CASE("session: the total report adds up matches of named rules over runs", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(relation S (i64))\n(rule ((R x)) ((S x)) :name \"copy\")\n"
        "(R 1) (R 2)\n(run 2)\n(R 3)\n(run 2)\n");
  CHECK(p.session().total_report().rules.at("copy").matches == 3);
  CHECK(p.session().total_report().iterations.size() == 4);
  CHECK(p.rows("S") == 3);
}

TEST_CASE("session: a named rule's name must be unique", "[dsl]") {
  TestProgram p;
  p.run("(relation R (i64))\n(rule ((R x)) ((R x)) :name \"same\")\n");
  CHECK_THROWS_AS(p.run("(rule ((R y)) ((R y)) :name \"same\")"), UserError);
}
