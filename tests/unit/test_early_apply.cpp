// Applying a rule's matches while its search goes on (RunLimits::early_apply_values) must give
// the same e-graph as applying them after every search: the same rows, in the same order,
// with the same e-class ids. Programs are run both ways, with batches of a single match (which
// applies each batch of kActionBatch matches as soon as it is complete) to interleave as much
// as possible, and compared table by table. So each program finds more than one batch of
// matches in some semi-naive variant.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;

namespace {

// Every table's slots in row order: liveness, flags and cells. Ids are compared as they are,
// not up to renaming: the writes must happen in the same order.
std::vector<std::vector<engine::Value>> tables(TestProgram& s) {
  std::vector<std::vector<engine::Value>> out;
  engine::EGraph& egraph = s.egraph();
  for (engine::FunctionId f = 0; f < egraph.num_functions(); ++f) {
    const engine::Table& t = egraph.table(f);
    std::vector<engine::Value> cells;
    for (engine::RowId r = 0; r < t.end(); ++r) {
      cells.push_back(t.alive(r));
      cells.push_back(t.subsumed(r));
      cells.push_back(t.timestamp(r));
      cells.insert(cells.end(), t.row(r), t.row(r) + t.width());
    }
    out.push_back(std::move(cells));
  }
  return out;
}

struct Outcome {
  std::string printed;
  std::vector<std::vector<engine::Value>> tables;
  std::uint64_t applied_while_searching = 0;
};

Outcome run(const std::string& program, std::optional<std::uint64_t> early_apply_values) {
  TestProgram s;
  engine::RunLimits limits;
  limits.early_apply_values = early_apply_values;
  s.session().set_limits(limits);
  Outcome out;
  out.printed = s.print(program);
  out.tables = tables(s);
  for (const auto& [name, stats] : s.session().total_report().rules) {
    out.applied_while_searching += stats.applied_while_searching;
  }
  return out;
}

const char* kArithmetic = R"(
(datatype Math (Num i64) (Var String) (Add Math Math) (Mul Math Math))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a b) (Mul b a))
(rewrite (Add a (Add b c)) (Add (Add a b) c))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)))
(rewrite (Add (Num a) (Num b)) (Num (+ a b)))
(rewrite (Mul a (Num 1)) a)
(let e (Mul (Add (Add (Var "x") (Num 1)) (Num 2)) (Add (Var "y") (Var "z"))))
(run 8)
(print-size)
(extract e)
)";

// Paths in a graph of 30 nodes, each with three edges.
std::string paths() {
  std::string text = "(relation edge (i64 i64))\n(relation path (i64 i64))\n";
  text += "(rule ((edge a b)) ((path a b)))\n";
  text += "(rule ((path a b) (edge b c) (!= a c)) ((path a c)))\n";
  for (int a = 0; a < 30; ++a) {
    for (int d : {1, 2, 5}) text += "(edge " + std::to_string(a) + " " + std::to_string((a + d) % 30) + ")\n";
  }
  return text + "(run 6)\n(print-size)\n(print-function path 100)\n";
}

// Triangles in a dense graph while a closure rule adds edges: a cyclic query must stay behind
// the horizon of the edges applied before it. (Which join runs it depends on fan-outs; both
// are checked behind a horizon in test_query_plan.cpp.)
std::string triangles() {
  std::string text = "(relation edge (i64 i64))\n(relation tri (i64 i64 i64))\n";
  text += "(rule ((edge a b) (edge b c) (< a c)) ((edge a c)))\n";
  text += "(rule ((edge a b) (edge b c) (edge a c)) ((tri a b c)))\n";
  for (int a = 0; a < 50; ++a) {
    for (int b = 0; b < 50; ++b) {
      if (a != b && (a * 7 + b * 3) % 10 != 0) text += "(edge " + std::to_string(a) + " " + std::to_string(b) + ")\n";
    }
  }
  return text + "(run 3)\n(print-size)\n";
}

// A query that calls a function through a function value: `unstable-app` looks the function
// up itself, so it would see rows a rule applied before it wrote.
const char* kFunctionValues = R"(
(sort I1 (UnstableFn (i64) i64))
(function next (i64) i64 :no-merge)
(relation seen (I1 i64))
(relation out (i64))
(rule ((seen f x)) ((set (next x) (+ x 1)) (seen f (+ x 1))))
(rule ((seen f x) (= y (unstable-app f x))) ((out y)))
(set (next 0) 1)
(seen (unstable-fn "next") 0)
(run 5)
(print-size)
)";

// A function with a custom merge: a set may replace a row that a later search reads.
const char* kShortestHops = R"(
(function hops (i64 i64) i64 :merge (min old new))
(rule ((edge a b)) ((set (hops a b) 1)))
(rule ((hops a b) (edge b c)) ((set (hops a c) 2)))
)";

}  // namespace

TEST_CASE("early apply: rewrites and datalog give the same tables applied early or late", "[engine][dsl]") {
  for (const std::string& program : {std::string(kArithmetic), paths(), triangles()}) {
    Outcome late = run(program, std::nullopt);
    Outcome early = run(program, 1);
    Outcome batched = run(program, 7);
    CHECK(late.applied_while_searching == 0);
    CHECK(early.applied_while_searching > 0);  // the comparison below is not vacuous
    CHECK(batched.applied_while_searching > 0);
    CHECK(early.printed == late.printed);
    CHECK(batched.printed == late.printed);
    CHECK(early.tables == late.tables);
    CHECK(batched.tables == late.tables);
  }
}

TEST_CASE("early apply: a rule that kills rows, reads a global or calls a function value keeps every match until the searches end", "[engine][dsl]") {
  // Each program gets its extra rule before its first run.
  auto with_rule = [](const std::string& program, const std::string& rule) {
    std::size_t run = program.find("(run");
    return program.substr(0, run) + rule + "\n" + program.substr(run);
  };
  for (const std::string& program :
       {with_rule(paths(), kShortestHops),
        with_rule(kArithmetic, "(rule ((= x (Add (Num a) (Num b)))) ((delete (Add (Num a) (Num b)))))"),
        with_rule(kArithmetic, "(rule ((= x (Add a b)) (= y (Add a e))) ((union x y)))"),
        std::string(kFunctionValues)}) {
    Outcome late = run(program, std::nullopt);
    Outcome early = run(program, 1);
    CHECK(early.applied_while_searching == 0);
    CHECK(early.printed == late.printed);
    CHECK(early.tables == late.tables);
  }
}
