// Matches that repeat on the variables a rule's actions read: dropped before they are applied
// when applying them again changes nothing, kept otherwise.
#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/repeated_matches.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using engine::I64Sort;
using engine::Query;
using engine::QueryAtom;
using engine::QueryTerm;

namespace {

// A graph of `nodes` nodes where node i has edges to i+1 .. i+fanout (mod nodes): many paths
// between two nodes, so the closure rule finds each pair many times.
std::string ring_edges(int nodes, int fanout) {
  std::string out;
  for (int i = 0; i < nodes; ++i) {
    for (int d = 1; d <= fanout; ++d) {
      out += "(edge " + std::to_string(i) + " " + std::to_string((i + d) % nodes) + ")\n";
    }
  }
  return out;
}

QueryAtom atom(engine::FunctionId f, std::initializer_list<std::uint32_t> vars) {
  QueryAtom a;
  a.function = f;
  for (std::uint32_t v : vars) a.columns.push_back(QueryTerm::variable(v));
  return a;
}

}  // namespace

TEST_CASE("repeated matches: stored variables that fix every other one never repeat", "[engine]") {
  // (Add a (Add b c)) = root: vars a0 b1 c2 inner3 root4; the inner e-class is fixed by b, c
  // and root by a and the inner class.
  Query add_assoc;
  add_assoc.var_sorts.assign(5, 0);
  add_assoc.atoms = {atom(0, {0, 3, 4}), atom(0, {1, 2, 3})};
  CHECK_FALSE(engine::projection_may_repeat(add_assoc, {0, 1, 2, 4}));
  CHECK(engine::projection_may_repeat(add_assoc, {0, 1, 4}));  // c is free
  // path(x, y), edge(y, z) -> path(x, z): y is free.
  Query step;
  step.var_sorts.assign(4, 0);
  step.atoms = {atom(0, {0, 1, 3}), atom(1, {1, 2, 3})};
  CHECK(engine::projection_may_repeat(step, {0, 2}));
  CHECK_FALSE(engine::projection_may_repeat(step, {0, 1, 2}));
}

TEST_CASE("repeated matches: a transitive closure skips repeats and derives every path", "[engine][dsl]") {
  constexpr int kNodes = 40, kFanout = 3;
  kiln::testing::TestProgram p;
  p.run("(relation edge (i64 i64))\n(relation path (i64 i64))\n" + ring_edges(kNodes, kFanout) +
        "(rule ((edge x y)) ((path x y)) :name \"base\")\n"
        "(rule ((path x y) (edge y z)) ((path x z)) :name \"step\")\n"
        "(run-schedule (saturate (run)))\n");
  // The ring is strongly connected: every ordered pair, self loops included.
  CHECK(p.rows("path") == kNodes * kNodes);
  for (int x : {0, 17, 39}) {
    for (int z : {0, 5, 38}) {
      CHECK(p.holds("(path " + std::to_string(x) + " " + std::to_string(z) + ")"));
    }
  }
  const engine::RuleStats& step = p.session().total_report().rules.at("step");
  CHECK(step.matches == std::uint64_t{kNodes} * kNodes * kFanout);  // each path row, each edge
  // Within one iteration 4 of every 9 matches repeat a pair: (x, z) for z - y = 1, 2, 3.
  CHECK(step.repeats_skipped > step.matches / 3);
  CHECK(p.session().total_report().rules.at("base").repeats_skipped == 0);
}

TEST_CASE("repeated matches: the closure of a random graph drops most of its matches as repeats",
          "[engine][dsl]") {
  // bench/engine's datalog_tc at a tenth of the size: the delta of `path` drives each search
  // (it starts the join), so the rows it derives stay grouped by their first node and a pair
  // found again through another middle node is still in the cache of recent matches.
  constexpr int kNodes = 300, kOutDegree = 12;
  std::mt19937 rng(7);
  std::vector<std::set<int>> out(kNodes);
  std::string edges;
  for (int a = 0; a < kNodes; ++a) {
    while (out[a].size() < kOutDegree) {
      int b = static_cast<int>(rng() % kNodes);
      if (b != a) out[a].insert(b);
    }
    for (int b : out[a]) edges += "(edge " + std::to_string(a) + " " + std::to_string(b) + ")\n";
  }
  std::size_t reachable = 0;  // pairs (x, z) with a path of one edge or more
  for (int x = 0; x < kNodes; ++x) {
    std::vector<bool> seen(kNodes, false);
    std::vector<int> todo(out[x].begin(), out[x].end());
    for (int v : todo) seen[v] = true;
    while (!todo.empty()) {
      int v = todo.back();
      todo.pop_back();
      for (int w : out[v]) {
        if (!seen[w]) {
          seen[w] = true;
          todo.push_back(w);
        }
      }
    }
    for (bool s : seen) reachable += s;
  }
  kiln::testing::TestProgram p;
  p.run("(relation edge (i64 i64))\n(relation path (i64 i64))\n" + edges +
        "(rule ((edge x y)) ((path x y)) :name \"base\")\n"
        "(rule ((path x y) (edge y z)) ((path x z)) :name \"step\")\n"
        "(run-schedule (saturate (run)))\n");
  CHECK(p.rows("path") == reachable);
  const engine::RuleStats& step = p.session().total_report().rules.at("step");
  CHECK(step.matches == reachable * kOutDegree);
  CHECK(step.repeats_skipped > step.matches / 2);
}

TEST_CASE("repeated matches: a :merge (+ old new) write counts every repeat", "[engine][dsl]") {
  constexpr int kNodes = 12, kFanout = 3;
  kiln::testing::TestProgram p;
  p.run("(relation edge (i64 i64))\n(function hops (i64 i64) i64 :merge (+ old new))\n" +
        ring_edges(kNodes, kFanout) +
        "(rule ((edge x y) (edge y z)) ((set (hops x z) 1)) :name \"count\")\n(run 1)\n");
  // From 0: z = 2 by one path (1,1), 3 by two, 4 by three, 5 by two, 6 by one.
  const std::pair<int, int> expected[] = {{2, 1}, {3, 2}, {4, 3}, {5, 2}, {6, 1}};
  for (auto [z, paths] : expected) {
    CHECK(p.holds("(= (hops 0 " + std::to_string(z) + ") " + std::to_string(paths) + ")"));
  }
  CHECK(p.session().total_report().rules.at("count").repeats_skipped == 0);
}

TEST_CASE("repeated matches: a rule that unions keeps its repeats", "[engine][dsl]") {
  kiln::testing::TestProgram p;
  p.run("(datatype T (Leaf i64) (Pair T T))\n(relation edge (i64 i64))\n" + ring_edges(10, 3) +
        "(rule ((edge x y) (edge y z)) ((union (Leaf x) (Pair (Leaf x) (Leaf z)))) :name \"u\")\n"
        "(run 1)\n");
  CHECK(p.session().total_report().rules.at("u").matches == 30 * 3);
  CHECK(p.session().total_report().rules.at("u").repeats_skipped == 0);
  CHECK(p.holds("(= (Leaf 0) (Pair (Leaf 0) (Leaf 4)))"));
}
