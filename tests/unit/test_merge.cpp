// Merge functions: what a write does when its keys already have a different output.
#include <catch2/catch.hpp>

#include <string>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using engine::I64Sort;
using engine::Value;
using support::UserError;

namespace {

// A program that can also evaluate i64 expressions.
class EvalProgram : public kiln::testing::TestProgram {
 public:
  // Evaluates an i64 expression through a fresh global.
  std::int64_t i64(const std::string& expr) {
    std::string name = "v" + std::to_string(lets_++);
    run("(let " + name + " " + expr + ")");
    return I64Sort::get(global(name).value);
  }

 private:
  int lets_ = 0;
};

}  // namespace

TEST_CASE("merge: min and max keep the least and greatest value written", "[dsl]") {
  EvalProgram p;
  p.run(
      "(function lo (String) i64 :merge (min old new))\n"
      "(function hi (String) i64 :merge (max old new))\n"
      "(set (lo \"a\") 5) (set (lo \"a\") 3) (set (lo \"a\") 9)\n"
      "(set (hi \"a\") 5) (set (hi \"a\") 3) (set (hi \"a\") 9)\n"
      "(set (lo \"b\") -1)\n");
  CHECK(p.i64("(lo \"a\")") == 3);
  CHECK(p.i64("(hi \"a\")") == 9);
  CHECK(p.i64("(lo \"b\")") == -1);
  CHECK(p.rows("lo") == 2);
  CHECK(p.rows("hi") == 1);
  CHECK(p.holds("(= (lo \"a\") 3)"));
  CHECK_FALSE(p.holds("(= (lo \"a\") 5)"));
}

TEST_CASE("merge: + accumulates every write, equal values included", "[dsl]") {
  EvalProgram p;
  p.run(
      "(function total (String) i64 :merge (+ old new))\n"
      "(set (total \"a\") 1) (set (total \"a\") 2) (set (total \"a\") 4)\n"
      "(set (total \"b\") 1) (set (total \"b\") 1)\n");
  CHECK(p.i64("(total \"a\")") == 7);
  CHECK(p.i64("(total \"b\")") == 2);
}

TEST_CASE("merge: old and new pick the first or the last write", "[dsl]") {
  EvalProgram p;
  p.run(
      "(function first (i64) i64 :merge old)\n"
      "(function last (i64) i64 :merge new)\n"
      "(set (first 0) 10) (set (first 0) 20)\n"
      "(set (last 0) 10) (set (last 0) 20)\n");
  CHECK(p.i64("(first 0)") == 10);
  CHECK(p.i64("(last 0)") == 20);
}

TEST_CASE("merge: a rule's matches each add once to a + merge (semi-naive counts)", "[dsl]") {
  EvalProgram p;
  p.run(
      "(relation edge (i64 i64))\n"
      "(function degree (i64) i64 :merge (+ old new))\n"
      "(rule ((edge x y)) ((set (degree x) 1)))\n"
      "(edge 1 2) (edge 1 3) (edge 2 3)\n"
      "(run 3)\n"
      "(edge 1 4)\n"
      "(run 5)\n");
  // Each edge matched exactly once over all iterations.
  CHECK(p.i64("(degree 1)") == 3);
  CHECK(p.i64("(degree 2)") == 1);
}

TEST_CASE("merge: rows whose keys become equal by a union are merged", "[dsl]") {
  EvalProgram p;
  p.run(
      "(datatype E (Leaf i64))\n"
      "(function lo (E) i64 :merge (min old new))\n"
      "(set (lo (Leaf 1)) 8)\n"
      "(set (lo (Leaf 2)) 3)\n"
      "(set (lo (Leaf 3)) 5)\n"
      "(union (Leaf 1) (Leaf 2))\n");
  CHECK(p.rows("lo") == 2);
  CHECK(p.i64("(lo (Leaf 1))") == 3);
  p.run("(union (Leaf 3) (Leaf 2))");
  CHECK(p.rows("lo") == 1);
  CHECK(p.i64("(lo (Leaf 3))") == 3);
}

TEST_CASE("merge: a failing merge expression is a user error naming the function", "[dsl]") {
  EvalProgram p;
  p.run("(function q (i64) i64 :merge (/ old new))\n(set (q 0) 10)\n(set (q 0) 5)\n");
  CHECK(p.i64("(q 0)") == 2);
  try {
    p.run("(set (q 0) 0)");
    FAIL("division by zero in a merge should fail");
  } catch (const UserError& e) {
    CHECK(e.message().find("'q'") != std::string::npos);
  }
}

TEST_CASE("merge: a :no-merge function rejects a different value but accepts the same one", "[dsl]") {
  EvalProgram p;
  p.run("(function f (i64) i64 :no-merge)\n(set (f 1) 7)\n(set (f 1) 7)\n");
  CHECK(p.i64("(f 1)") == 7);
  CHECK_THROWS_AS(p.run("(set (f 1) 8)"), UserError);
  CHECK(p.i64("(f 1)") == 7);
}

TEST_CASE("merge: an engine merge that changes the value re-stamps the row, one that keeps it writes nothing", "[engine]") {
  engine::EGraph g;
  engine::Builtins b = engine::add_builtins(g);
  engine::FunctionDecl d;
  d.name = "hi";
  d.inputs = {b.i64};
  d.output = b.i64;
  d.merge = engine::MergeKind::Custom;
  int calls = 0;
  d.merge_fn = [&calls](engine::EGraph&, Value old_value, Value new_value) {
    ++calls;
    return I64Sort::make(std::max(I64Sort::get(old_value), I64Sort::get(new_value)));
  };
  engine::FunctionId f = g.add_function(std::move(d));
  const engine::Table& t = g.table(f);
  Value key[] = {I64Sort::make(0)};
  g.set(f, key, I64Sort::make(5));
  CHECK(calls == 0);
  g.advance_time();
  g.advance_time();
  auto version = g.version();
  g.set(f, key, I64Sort::make(2));  // max keeps 5
  CHECK(calls == 1);
  CHECK(g.version() == version);
  CHECK(t.end() == 1);
  g.set(f, key, I64Sort::make(9));  // max takes 9: the old row dies, a new one is written now
  CHECK(calls == 2);
  CHECK(g.version() != version);
  CHECK(t.end() == 2);
  CHECK(t.size() == 1);
  CHECK_FALSE(t.alive(0));
  CHECK(t.output(1) == I64Sort::make(9));
  CHECK(t.timestamp(1) == g.now());
  CHECK(g.lookup(f, key) == I64Sort::make(9));
}
