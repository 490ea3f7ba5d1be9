// Schedules and limits: how many iterations run, in what order, and why a run stops.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "engine/query_plan.hpp"
#include "engine/runner.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using engine::RunReport;
using engine::Schedule;
using engine::StopReason;

namespace {

// A program that hands out the iterations of its runs a batch at a time.
class TrackedProgram : public kiln::testing::TestProgram {
 public:
  TrackedProgram() = default;
  // Every run of the program obeys `limits`.
  explicit TrackedProgram(const engine::RunLimits& limits) { session().set_limits(limits); }

  const RunReport& report() { return session().total_report(); }
  // Iterations since the last call.
  std::vector<engine::IterationReport> new_iterations() {
    const auto& all = report().iterations;
    std::vector<engine::IterationReport> fresh(all.begin() + static_cast<std::ptrdiff_t>(seen_),
                                               all.end());
    seen_ = all.size();
    return fresh;
  }

 private:
  std::size_t seen_ = 0;  // iterations already handed out
};

// Facts (R 0) (R 1) ... (R n-1).
std::string numbered_facts(int n) {
  std::string facts;
  for (int i = 0; i < n; ++i) facts += "(R " + std::to_string(i) + ")";
  return facts;
}

const char* kCounter =
    "(relation R (i64))\n"
    "(rule ((R x)) ((R (+ x 1))) :name \"count\")\n"
    "(R 0)\n";

// Relations A, B, C over i64 and rules copying A -> B and B -> C, built with the engine API.
struct Copies {
  engine::EGraph g;
  engine::Builtins b = engine::add_builtins(g);
  engine::FunctionId a = relation("A"), bb = relation("B"), c = relation("C");
  std::vector<engine::Rule> rules;

  engine::FunctionId relation(const std::string& name) {
    engine::FunctionDecl d;
    d.name = name;
    d.kind = engine::FunctionKind::Relation;
    d.inputs = {b.i64};
    d.output = b.unit;
    return g.add_function(std::move(d));
  }
  void copy(engine::FunctionId from, engine::FunctionId to, const std::string& ruleset,
            const std::string& name) {
    engine::Rule r;
    r.name = name;
    r.ruleset = ruleset;
    r.query.var_sorts = {b.i64, b.unit};
    r.query.atoms = {{from, {engine::QueryTerm::variable(0), engine::QueryTerm::variable(1)}}};
    r.actions.num_registers = 2;
    engine::ActionInstr set;
    set.op = engine::ActionOp::Set;
    set.function = to;
    set.args = {engine::Operand::reg_of(0), engine::Operand::constant_of(0)};
    r.actions.instrs.push_back(set);
    rules.push_back(std::move(r));
  }
  void fact(engine::FunctionId f, std::int64_t x) {
    engine::Value k[] = {engine::I64Sort::make(x)};
    g.set(f, k, 0);
  }
  std::size_t rows(engine::FunctionId f) const { return g.table(f).size(); }
};

}  // namespace

TEST_CASE("schedule: run N stops early once an iteration changes nothing", "[dsl]") {
  TrackedProgram p;
  p.run("(relation R (i64))\n(rule ((R x) (< x 3)) ((R (+ x 1))))\n(R 0)\n(run 100)\n");
  CHECK(p.rows("R") == 4);
  auto its = p.new_iterations();
  REQUIRE(its.size() == 4);
  CHECK(its[0].changed);
  CHECK(its[2].changed);
  CHECK_FALSE(its[3].changed);
  CHECK(its[3].matches == 0);
  CHECK(its[2].rows_after == 4);
}

TEST_CASE("schedule: run N runs exactly N iterations while rules keep changing things", "[dsl]") {
  TrackedProgram p;
  p.run(kCounter);
  p.run("(run 5)");
  CHECK(p.rows("R") == 6);
  CHECK(p.new_iterations().size() == 5);
  CHECK(p.report().stop == StopReason::ScheduleDone);
  CHECK(p.report().rules.at("count").matches == 5);
}

TEST_CASE("schedule: run 0 and repeat 0 run nothing", "[dsl]") {
  TrackedProgram p;
  p.run(kCounter);
  p.run("(run 0)\n(run-schedule (repeat 0 (run)))");
  CHECK(p.rows("R") == 1);
  CHECK(p.new_iterations().empty());
}

TEST_CASE("schedule: all rules of an iteration search the same database (staged writes)", "[dsl]") {
  TrackedProgram p;
  p.run(
      "(relation A (i64)) (relation B (i64)) (relation C (i64))\n"
      "(rule ((A x)) ((B x)))\n"
      "(rule ((B x)) ((C x)))\n"
      "(A 1)\n"
      "(run 1)\n");
  CHECK(p.rows("B") == 1);
  CHECK(p.rows("C") == 0);
  p.run("(run 1)");
  CHECK(p.rows("C") == 1);
}

TEST_CASE("schedule: seq runs its children in order", "[dsl]") {
  const std::string prelude =
      "(relation A (i64)) (relation B (i64)) (relation C (i64))\n"
      "(ruleset ab) (ruleset bc)\n"
      "(rule ((A x)) ((B x)) :ruleset ab)\n"
      "(rule ((B x)) ((C x)) :ruleset bc)\n"
      "(A 1)\n";
  TrackedProgram forward;
  forward.run(prelude + "(run-schedule (seq (run ab) (run bc)))");
  CHECK(forward.rows("C") == 1);
  TrackedProgram backward;
  backward.run(prelude + "(run-schedule (seq (run bc) (run ab)))");
  CHECK(backward.rows("B") == 1);
  CHECK(backward.rows("C") == 0);
  auto its = backward.new_iterations();
  REQUIRE(its.size() == 2);
  CHECK(its[0].ruleset == "bc");
  CHECK(its[1].ruleset == "ab");
}

TEST_CASE("schedule: run without a ruleset runs only the default ruleset", "[dsl]") {
  TrackedProgram p;
  p.run(
      "(relation A (i64)) (relation B (i64))\n"
      "(ruleset other)\n"
      "(rule ((A x)) ((B x)) :ruleset other)\n"
      "(A 1)\n"
      "(run 5)\n");
  CHECK(p.rows("B") == 0);
  p.run("(run other 1)");
  CHECK(p.rows("B") == 1);
}

TEST_CASE("schedule: saturate runs until nothing changes", "[dsl]") {
  TrackedProgram p;
  p.run(
      "(relation edge (i64 i64)) (relation path (i64 i64))\n"
      "(rule ((edge x y)) ((path x y)))\n"
      "(rule ((path x y) (edge y z)) ((path x z)))\n"
      "(edge 1 2) (edge 2 3) (edge 3 4) (edge 4 5) (edge 5 6)\n"
      "(run-schedule (saturate (run)))\n");
  CHECK(p.rows("path") == 15);
  auto its = p.new_iterations();
  REQUIRE_FALSE(its.empty());
  CHECK_FALSE(its.back().changed);
  for (std::size_t i = 0; i + 1 < its.size(); ++i) CHECK(its[i].changed);
}

TEST_CASE("schedule: a saturate schedule reports Saturated", "[dsl]") {
  TrackedProgram p;
  p.run("(relation R (i64))\n(rule ((R x) (< x 3)) ((R (+ x 1))))\n(R 0)\n"
        "(run-schedule (saturate (run)))\n");
  CHECK(p.rows("R") == 4);
  CHECK(p.report().stop == StopReason::Saturated);
}

TEST_CASE("schedule: :until stops before the iteration in which its facts already hold", "[dsl]") {
  TrackedProgram p;
  p.run(kCounter);
  p.run("(run 100 :until (R 10))");
  CHECK(p.rows("R") == 11);
  p.run("(run 100 :until (R 15) (R 20))");
  CHECK(p.rows("R") == 21);
  p.run("(run 5 :until (R 3))");  // already true: nothing runs
  CHECK(p.rows("R") == 21);
  p.run("(run-schedule (repeat 100 (run :until (R 30))))");
  CHECK(p.rows("R") == 31);
}

TEST_CASE("schedule: the engine's Schedule API runs rulesets in seq and repeat", "[engine]") {
  Copies c;
  c.copy(c.a, c.bb, "ab", "a-to-b");
  c.copy(c.bb, c.c, "bc", "b-to-c");
  for (int i = 0; i < 4; ++i) c.fact(c.a, i);
  {
    engine::Runner runner(c.g, c.rules);
    RunReport r = runner.run(Schedule::seq({Schedule::run("bc"), Schedule::run("ab")}));
    CHECK(r.stop == StopReason::ScheduleDone);
    CHECK(r.changed);
    REQUIRE(r.iterations.size() == 2);
    CHECK(r.iterations[0].ruleset == "bc");
    CHECK(r.iterations[0].matches == 0);
    CHECK(r.iterations[1].matches == 4);
    CHECK(c.rows(c.bb) == 4);
    CHECK(c.rows(c.c) == 0);
  }
  {
    engine::Runner runner(c.g, c.rules);
    RunReport r = runner.run(Schedule::repeat(10, Schedule::seq({Schedule::run("ab"), Schedule::run("bc")})));
    CHECK(c.rows(c.c) == 4);
    // Round 1 copies B to C; round 2 changes nothing, so the repeat stops.
    CHECK(r.iterations.size() == 4);
    CHECK(r.rules.at("b-to-c").matches == 4);
    CHECK(r.rules.at("a-to-b").matches == 0);  // A's rows were all searched in the first run
  }
  {
    engine::Runner runner(c.g, c.rules);
    RunReport r = runner.run(Schedule::saturate(Schedule::run("ab")));
    CHECK_FALSE(r.changed);
    CHECK(r.iterations.size() == 1);
  }
}

TEST_CASE("schedule: the engine's :until query is checked before each iteration", "[engine]") {
  Copies c;
  c.copy(c.a, c.bb, "", "a-to-b");
  c.copy(c.bb, c.c, "", "b-to-c");
  c.fact(c.a, 7);
  engine::Query until;
  until.var_sorts = {c.b.i64, c.b.unit};
  until.atoms = {{c.bb, {engine::QueryTerm::variable(0), engine::QueryTerm::variable(1)}}};
  engine::Runner runner(c.g, c.rules);
  RunReport r = runner.run(Schedule::repeat(10, Schedule::run("", until)));
  CHECK(r.iterations.size() == 1);
  CHECK(c.rows(c.bb) == 1);
  CHECK(c.rows(c.c) == 0);
}

TEST_CASE("limits: an iteration limit stops a run that would go on forever", "[dsl]") {
  engine::RunLimits limits;
  limits.max_iterations = 7;
  TrackedProgram p(limits);
  p.run(kCounter);
  p.run("(run 1000)");
  CHECK(p.report().stop == StopReason::IterationLimit);
  CHECK(p.new_iterations().size() == 7);
  CHECK(p.rows("R") == 8);
  // The limit is per run command.
  p.run("(run 3)");
  CHECK(p.report().stop == StopReason::ScheduleDone);
  CHECK(p.rows("R") == 11);
}

TEST_CASE("limits: a node limit stops the run after the iteration that crossed it", "[dsl]") {
  engine::RunLimits limits;
  limits.max_rows = 20;
  TrackedProgram p(limits);
  p.run(kCounter);
  p.run("(run 1000)");
  CHECK(p.report().stop == StopReason::NodeLimit);
  CHECK(p.egraph().total_rows() > 20);
  CHECK(p.egraph().total_rows() <= 21);  // one row per iteration: at most one past the limit
  auto its = p.new_iterations();
  REQUIRE(its.size() >= 2);
  CHECK(its[its.size() - 2].rows_after <= 20);
}

TEST_CASE("limits: a time limit stops an endless run", "[dsl]") {
  engine::RunLimits limits;
  limits.max_seconds = 0.05;
  TrackedProgram p(limits);
  p.run(kCounter);
  auto start = std::chrono::steady_clock::now();
  p.run("(run 100000000)");
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(p.report().stop == StopReason::TimeLimit);
  CHECK(took < 5.0);
  CHECK(p.rows("R") > 1);
}

TEST_CASE("limits: a match limit bans a rule with back-off and the run still reaches the fixpoint", "[dsl]") {
  engine::RunLimits limits;
  limits.match_limit = 10;
  limits.ban_length = 5;
  TrackedProgram p(limits);
  p.run("(relation R (i64)) (relation S (i64))\n"
        "(rule ((R x)) ((S x)) :name \"heavy\")\n" + numbered_facts(100) + "\n(run 100)\n");
  CHECK(p.rows("S") == 100);
  const engine::RuleStats& heavy = p.report().rules.at("heavy");
  // Limits 10, 20, 40, 80 are exceeded; 160 is not.
  CHECK(heavy.times_banned == 4);
  CHECK(heavy.matches == 100);
  auto its = p.new_iterations();
  REQUIRE(its.size() == 6);
  for (int i = 0; i < 4; ++i) CHECK(its[i].matches == 0);
  CHECK(its[4].matches == 100);
  CHECK_FALSE(its[5].changed);
}

TEST_CASE("limits: a banned rule waits while other rules keep running", "[dsl]") {
  engine::RunLimits limits;
  limits.match_limit = 10;
  limits.ban_length = 3;
  TrackedProgram p(limits);
  p.run("(relation R (i64)) (relation S (i64)) (relation T (i64))\n"
        "(rule ((R x)) ((S x)) :name \"heavy\")\n"
        "(rule ((T x) (< x 5)) ((T (+ x 1))) :name \"light\")\n"
        "(T 0)\n" + numbered_facts(15) + "\n(run 1)\n");
  CHECK(p.rows("S") == 0);  // 15 matches > 10: banned
  CHECK(p.rows("T") == 2);
  p.run("(run 1)");
  CHECK(p.rows("S") == 0);  // still banned (three iterations)
  CHECK(p.rows("T") == 3);
  p.run("(run 20)");
  CHECK(p.rows("S") == 15);
  CHECK(p.rows("T") == 6);
  CHECK(p.report().rules.at("heavy").times_banned == 1);
  CHECK(p.report().rules.at("light").times_banned == 0);
}

TEST_CASE("run report: the summary names the stop reason and the rules", "[engine]") {
  engine::RunLimits limits;
  limits.max_iterations = 3;
  TrackedProgram p(limits);
  p.run(kCounter);
  p.run("(run 10)");
  std::string summary = p.report().summary();
  CHECK(summary.find("iteration limit") != std::string::npos);
  CHECK(summary.find("count") != std::string::npos);
  CHECK(std::string(engine::to_string(StopReason::NodeLimit)) == "node limit");
  CHECK(std::string(engine::to_string(StopReason::Saturated)) == "saturated");
  CHECK(p.print("(print-stats)") == summary);
}
