// Provenance: every row records which rule created it (none for top-level commands); rebuild
// and push/pop keep that record consistent, and rules_in_eclass sums it up per e-class.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "engine/egraph.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;
using Names = std::vector<std::string>;

namespace {

// The live row of `function` whose keys are the e-classes of these globals (kNoRow: none).
engine::RowId row_of(TestProgram& p, const std::string& function, const std::vector<std::string>& globals) {
  std::vector<engine::Value> keys;
  for (const std::string& g : globals) keys.push_back(p.egraph().find(p.global(g).value));
  return p.egraph().table(p.function(function)).find(keys.data());
}

std::optional<std::string> origin_of(TestProgram& p, const std::string& function,
                                     const std::vector<std::string>& globals) {
  engine::RowId r = row_of(p, function, globals);
  REQUIRE(r != engine::kNoRow);
  return p.egraph().row_origin(p.function(function), r);
}

Names rules_in(TestProgram& p, const std::string& global) {
  return p.egraph().rules_in_eclass(p.global(global).sort, p.global(global).value);
}

// Every live row of the function has no origin.
bool no_origins(TestProgram& p, const std::string& function) {
  const engine::Table& t = p.egraph().table(p.function(function));
  for (engine::RowId r = 0; r < t.end(); ++r) {
    if (t.alive(r) && t.origin(r) != engine::kNoOrigin) return false;
  }
  return true;
}

const char* kCommMulOne =
    "(datatype M (Num i64) (Add M M) (Mul M M))\n"
    "(rewrite (Add a b) (Add b a) :name \"comm\")\n"
    "(rewrite (Mul x (Num 1)) x :name \"mul-one\")\n"
    "(let zero (Num 0))\n"
    "(let one (Num 1))\n"
    "(let two (Num 2))\n"
    "(let e (Add one two))\n"
    "(let m (Mul e one))\n";

}  // namespace

TEST_CASE("provenance: a rewrite's new row records the rule, top-level rows record none", "[engine]") {
  TestProgram p;
  p.run(kCommMulOne);
  CHECK(no_origins(p, "Num"));
  CHECK(no_origins(p, "Add"));
  CHECK(no_origins(p, "Mul"));
  CHECK(rules_in(p, "e").empty());
  CHECK(rules_in(p, "m").empty());
  CHECK(row_of(p, "Add", {"two", "one"}) == engine::kNoRow);

  p.run("(run 3)\n");
  CHECK(origin_of(p, "Add", {"two", "one"}) == "comm");
  CHECK(origin_of(p, "Add", {"one", "two"}) == std::nullopt);
  CHECK(origin_of(p, "Mul", {"e", "one"}) == std::nullopt);
  CHECK(no_origins(p, "Num"));
  CHECK(rules_in(p, "e") == Names{"comm"});
  // mul-one only unions (m is now e's class): unions are not attributed.
  CHECK(p.holds("(= m e)"));
  CHECK(rules_in(p, "m") == Names{"comm"});
  CHECK(rules_in(p, "one").empty());

  // A top-level command after the run creates rows with no origin.
  p.run("(let f (Add two two))\n");
  CHECK(origin_of(p, "Add", {"two", "two"}) == std::nullopt);
  CHECK(rules_in(p, "f").empty());
}

TEST_CASE("provenance: a row rebuild re-writes canonically keeps its origin", "[engine]") {
  TestProgram p;
  p.run(kCommMulOne);
  p.run("(run 3)\n");
  // zero is the older class, so two's rows go stale and rebuild re-writes them onto zero.
  p.run("(union two zero)\n(run 1)\n");
  CHECK(p.egraph().find(p.global("two").value) == p.global("zero").value);
  CHECK(origin_of(p, "Add", {"zero", "one"}) == "comm");
  CHECK(origin_of(p, "Add", {"one", "zero"}) == std::nullopt);
  CHECK(rules_in(p, "e") == Names{"comm"});
  CHECK(rules_in(p, "zero").empty());
}

TEST_CASE("provenance: a rule's rows in other classes record it there", "[engine]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64) (Neg M))\n"
      "(rule ((= x (Num n)) (< n 3)) ((Neg (Num (+ n 10)))) :name \"neg-shift\")\n"
      "(let one (Num 1))\n"
      "(run 3)\n"
      // Both terms exist already: these lets look them up and create no rows.
      "(let eleven (Num 11))\n"
      "(let negated (Neg (Num 11)))\n");
  CHECK(p.rows("Num") == 2);
  CHECK(p.rows("Neg") == 1);
  CHECK(rules_in(p, "one").empty());  // the matched class gains nothing
  CHECK(rules_in(p, "eleven") == Names{"neg-shift"});
  CHECK(rules_in(p, "negated") == Names{"neg-shift"});
  CHECK(origin_of(p, "Neg", {"eleven"}) == "neg-shift");
}

TEST_CASE("provenance: a class lists every rule that created a row in it, sorted", "[engine]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64) (Neg M) (Twice M))\n"
      "(rewrite (Neg (Neg x)) (Twice x) :name \"z-double-neg\")\n"
      "(rewrite (Twice x) (Neg (Neg x)) :name \"a-unfold\")\n"
      "(let t (Twice (Num 1)))\n"
      "(let n (Neg (Neg (Num 2))))\n"
      "(run 2)\n");
  CHECK(rules_in(p, "t") == Names{"a-unfold"});
  CHECK(rules_in(p, "n") == Names{"z-double-neg"});
  p.run("(union t n)\n(run 1)\n");
  CHECK(rules_in(p, "t") == Names{"a-unfold", "z-double-neg"});
}

TEST_CASE("provenance: a function row set by a rule records it; a failing rule clears it", "[engine]") {
  TestProgram p;
  p.run(
      "(datatype M (Num i64))\n"
      "(function size (M) i64 :merge (max old new))\n"
      "(rule ((= x (Num n))) ((set (size x) n)) :name \"size-of-num\")\n"
      "(rule ((= x (Num 5))) ((Num 6) (panic \"boom\")) :name \"boom\")\n"
      "(let one (Num 1))\n"
      "(run 1)\n"
      "(set (size one) 7)\n");  // a merge: the row keeps its origin
  CHECK(origin_of(p, "size", {"one"}) == "size-of-num");
  CHECK(p.holds("(= (size one) 7)"));

  // The error names the rule whose action failed.
  const std::string error = p.error("(let five (Num 5))\n(run 1)\n");
  CHECK(error.find("panic: boom; in rule 'boom'") != std::string::npos);
  p.run("(let six (Num 6))\n(let nine (Num 9))\n");
  CHECK(rules_in(p, "six") == Names{"boom"});
  CHECK(rules_in(p, "nine").empty());  // the panic did not leave "boom" current
}

TEST_CASE("provenance: pop drops the rows a run made, and their origins", "[engine]") {
  TestProgram p;
  p.run(kCommMulOne);
  p.run("(push)\n(run 3)\n");
  CHECK(rules_in(p, "e") == Names{"comm"});
  CHECK(origin_of(p, "Add", {"two", "one"}) == "comm");
  p.run("(pop)\n");
  CHECK(rules_in(p, "e").empty());
  CHECK(row_of(p, "Add", {"two", "one"}) == engine::kNoRow);
  CHECK(no_origins(p, "Add"));
  // Created again by a top-level command, the same term has no origin.
  p.run("(let back (Add two one))\n");
  CHECK(origin_of(p, "Add", {"two", "one"}) == std::nullopt);
  CHECK(rules_in(p, "e").empty());
  p.run("(run 3)\n");
  CHECK(p.holds("(= e back)"));
  CHECK(rules_in(p, "e").empty());  // comm finds both Add rows there already: it only unions
  CHECK(rules_in(p, "back").empty());
}
