// Semi-naive evaluation is an optimisation only: random programs run through dsl::Session must
// reach the same database as a naive fixpoint computed here, whatever the order in which facts,
// rules and runs arrive.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/unit/test_program.hpp"

using namespace kiln;
using kiln::testing::TestProgram;

namespace {

using Tuple = std::vector<std::int64_t>;
using Database = std::vector<std::set<Tuple>>;

// A term of a rule: a variable (0..3 -> a..d) or an integer constant.
struct Term {
  bool is_var = true;
  int var = 0;
  std::int64_t value = 0;
};

struct Atom {
  int relation = 0;
  std::vector<Term> terms;
};

struct Rule {
  std::vector<Atom> body;
  std::vector<std::pair<int, int>> not_equal;  // (!= var var) filters
  std::vector<Atom> head;
};

// A random datalog program over relations r0, r1, ... of i64 columns.
struct Datalog {
  std::vector<int> arity;
  std::vector<std::pair<int, Tuple>> facts;
  std::vector<Rule> rules;
};

const char* kVarNames[] = {"a", "b", "c", "d"};

std::string term_text(const Term& t) {
  return t.is_var ? kVarNames[t.var] : std::to_string(t.value);
}

std::string atom_text(const Atom& a) {
  std::string out = "(r" + std::to_string(a.relation);
  for (const Term& t : a.terms) out += " " + term_text(t);
  return out + ")";
}

std::string rule_text(const Rule& r) {
  std::string out = "(rule (";
  for (const Atom& a : r.body) out += atom_text(a) + " ";
  for (auto [x, y] : r.not_equal) out += std::string("(!= ") + kVarNames[x] + " " + kVarNames[y] + ") ";
  out += ") (";
  for (const Atom& a : r.head) out += atom_text(a) + " ";
  return out + "))\n";
}

std::string fact_text(int relation, const Tuple& t) {
  std::string out = "(r" + std::to_string(relation);
  for (std::int64_t v : t) out += " " + std::to_string(v);
  return out + ")\n";
}

Datalog random_program(std::mt19937& rng) {
  Datalog p;
  const int relations = 3 + static_cast<int>(rng() % 2);
  for (int r = 0; r < relations; ++r) p.arity.push_back(rng() % 4 == 0 ? 3 : 1 + static_cast<int>(rng() % 2));
  const std::int64_t domain = 5;
  for (int i = 0; i < 18; ++i) {
    int r = static_cast<int>(rng() % relations);
    Tuple t;
    for (int c = 0; c < p.arity[r]; ++c) t.push_back(static_cast<std::int64_t>(rng() % domain));
    p.facts.emplace_back(r, t);
  }
  const int rules = 2 + static_cast<int>(rng() % 4);
  for (int k = 0; k < rules; ++k) {
    Rule rule;
    std::set<int> bound;
    const int pool = 2 + static_cast<int>(rng() % 3);
    const int atoms = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < atoms; ++i) {
      Atom a{static_cast<int>(rng() % relations), {}};
      for (int c = 0; c < p.arity[a.relation]; ++c) {
        Term t;
        if (rng() % 6 == 0) {
          t.is_var = false;
          t.value = static_cast<std::int64_t>(rng() % domain);
        } else {
          t.var = static_cast<int>(rng() % pool);
          bound.insert(t.var);
        }
        a.terms.push_back(t);
      }
      rule.body.push_back(a);
    }
    std::vector<int> vars(bound.begin(), bound.end());
    if (vars.size() >= 2 && rng() % 3 == 0) {
      rule.not_equal.emplace_back(vars[rng() % vars.size()], vars[rng() % vars.size()]);
    }
    const int heads = 1 + static_cast<int>(rng() % 2);
    for (int i = 0; i < heads; ++i) {
      Atom a{static_cast<int>(rng() % relations), {}};
      for (int c = 0; c < p.arity[a.relation]; ++c) {
        Term t;
        if (vars.empty() || rng() % 5 == 0) {
          t.is_var = false;
          t.value = static_cast<std::int64_t>(rng() % domain);
        } else {
          t.var = vars[rng() % vars.size()];
        }
        a.terms.push_back(t);
      }
      rule.head.push_back(a);
    }
    p.rules.push_back(rule);
  }
  return p;
}

// All matches of the rule's body over `db`, applied to its head, added to `out`.
void fire(const Rule& rule, const Database& db, Database& out) {
  std::optional<std::int64_t> vars[4];
  std::function<void(std::size_t)> go = [&](std::size_t i) {
    if (i == rule.body.size()) {
      for (auto [x, y] : rule.not_equal) {
        if (*vars[x] == *vars[y]) return;
      }
      for (const Atom& h : rule.head) {
        Tuple t;
        for (const Term& term : h.terms) t.push_back(term.is_var ? *vars[term.var] : term.value);
        out[h.relation].insert(t);
      }
      return;
    }
    const Atom& a = rule.body[i];
    for (const Tuple& row : db[a.relation]) {
      std::optional<std::int64_t> saved[4];
      std::copy(std::begin(vars), std::end(vars), saved);
      bool ok = true;
      for (std::size_t c = 0; c < row.size() && ok; ++c) {
        const Term& term = a.terms[c];
        if (!term.is_var) {
          ok = term.value == row[c];
        } else if (vars[term.var]) {
          ok = *vars[term.var] == row[c];
        } else {
          vars[term.var] = row[c];
        }
      }
      if (ok) go(i + 1);
      std::copy(std::begin(saved), std::end(saved), vars);
    }
  };
  go(0);
}

// The naive fixpoint: every rule over the whole database until nothing is added.
Database naive_fixpoint(const Datalog& p) {
  Database db(p.arity.size());
  for (const auto& [r, t] : p.facts) db[r].insert(t);
  while (true) {
    Database next = db;
    for (const Rule& rule : p.rules) fire(rule, db, next);
    if (next == db) return db;
    db = std::move(next);
  }
}

Database read_back(TestProgram& s, const Datalog& p) {
  Database db(p.arity.size());
  for (std::size_t r = 0; r < p.arity.size(); ++r) {
    const engine::Table& t = s.egraph().table(s.function("r" + std::to_string(r)));
    for (engine::RowId row = 0; row < t.end(); ++row) {
      if (!t.alive(row)) continue;
      Tuple tuple;
      for (int c = 0; c < p.arity[r]; ++c) tuple.push_back(engine::I64Sort::get(t.row(row)[c]));
      db[r].insert(tuple);
    }
  }
  return db;
}

std::string declarations(const Datalog& p) {
  std::string out;
  for (std::size_t r = 0; r < p.arity.size(); ++r) {
    out += "(relation r" + std::to_string(r) + " (";
    for (int c = 0; c < p.arity[r]; ++c) out += c ? " i64" : "i64";
    out += "))\n";
  }
  return out;
}

}  // namespace

TEST_CASE("semi-naive: random datalog programs reach the naive fixpoint", "[engine][dsl]") {
  std::mt19937 rng(20240611);
  std::size_t derived = 0;
  for (int seed = 0; seed < 80; ++seed) {
    Datalog p = random_program(rng);
    Database expected = naive_fixpoint(p);
    std::string all_rules;
    for (const Rule& r : p.rules) all_rules += rule_text(r);
    std::string all_facts;
    for (const auto& [r, t] : p.facts) all_facts += fact_text(r, t);
    INFO("program:\n" << declarations(p) << all_facts << all_rules);

    // One shot: facts, rules, saturate.
    {
      TestProgram s;
      s.run(declarations(p) + all_facts + all_rules + "(run-schedule (saturate (run)))\n");
      REQUIRE(read_back(s, p) == expected);
    }
    // The same with every match applied while its rule still searches (early_apply_values).
    {
      TestProgram s;
      engine::RunLimits limits;
      limits.early_apply_values = 1;
      s.session().set_limits(limits);
      s.run(declarations(p) + all_facts + all_rules + "(run-schedule (saturate (run)))\n");
      REQUIRE(read_back(s, p) == expected);
    }
    // Interleaved: facts and rules arrive between single iterations, so rules added late
    // must still see old rows and old rules must see rows added between runs.
    {
      TestProgram s;
      s.run(declarations(p));
      std::size_t third = p.facts.size() / 3;
      std::size_t half_rules = p.rules.size() / 2;
      std::string text;
      for (std::size_t i = 0; i < third; ++i) text += fact_text(p.facts[i].first, p.facts[i].second);
      for (std::size_t i = 0; i < half_rules; ++i) text += rule_text(p.rules[i]);
      text += "(run 1)\n";
      for (std::size_t i = third; i < 2 * third; ++i) text += fact_text(p.facts[i].first, p.facts[i].second);
      text += "(run 1)\n";
      for (std::size_t i = half_rules; i < p.rules.size(); ++i) text += rule_text(p.rules[i]);
      text += "(run 1)\n";
      for (std::size_t i = 2 * third; i < p.facts.size(); ++i) {
        text += fact_text(p.facts[i].first, p.facts[i].second);
      }
      text += "(run 1000)\n";
      s.run(text);
      REQUIRE(read_back(s, p) == expected);
    }
    std::size_t facts = 0, total = 0;
    Database initial(p.arity.size());
    for (const auto& [r, t] : p.facts) initial[r].insert(t);
    for (std::size_t r = 0; r < p.arity.size(); ++r) {
      facts += initial[r].size();
      total += expected[r].size();
    }
    derived += total - facts;
  }
  // The generator must produce programs that derive something.
  CHECK(derived > 200);
}

TEST_CASE("semi-naive: shortest paths with a :merge min function match Bellman-Ford", "[engine][dsl]") {
  std::mt19937 rng(77);
  for (int seed = 0; seed < 25; ++seed) {
    const int nodes = 6;
    std::vector<std::tuple<int, int, int>> edges;
    std::string text =
        "(relation edge (i64 i64 i64))\n"
        "(function dist (i64 i64) i64 :merge (min old new))\n"
        "(rule ((edge x y w)) ((set (dist x y) w)))\n"
        "(rule ((= d (dist x y)) (edge y z w)) ((set (dist x z) (+ d w))))\n";
    for (int i = 0; i < 14; ++i) {
      int x = static_cast<int>(rng() % nodes), y = static_cast<int>(rng() % nodes);
      int w = 1 + static_cast<int>(rng() % 9);
      edges.emplace_back(x, y, w);
      text += "(edge " + std::to_string(x) + " " + std::to_string(y) + " " + std::to_string(w) + ")\n";
      // Halfway, run a little so later edges improve distances already derived.
      if (i == 7) text += "(run 2)\n";
    }
    text += "(run 1000)\n";
    INFO("seed " << seed << "\n" << text);
    TestProgram s;
    s.run(text);

    // Shortest non-empty paths by relaxation to a fixpoint.
    std::map<std::pair<int, int>, int> dist;
    bool changed = true;
    while (changed) {
      changed = false;
      auto relax = [&](int x, int z, int d) {
        auto it = dist.find({x, z});
        if (it == dist.end() || d < it->second) {
          dist[{x, z}] = d;
          changed = true;
        }
      };
      for (auto [x, y, w] : edges) relax(x, y, w);
      auto snapshot = dist;
      for (auto [xy, d] : snapshot) {
        for (auto [y, z, w] : edges) {
          if (xy.second == y) relax(xy.first, z, d + w);
        }
      }
    }
    const engine::Table& t = s.egraph().table(s.function("dist"));
    std::map<std::pair<int, int>, int> got;
    for (engine::RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r)) continue;
      const engine::Value* row = t.row(r);
      got[{static_cast<int>(engine::I64Sort::get(row[0])), static_cast<int>(engine::I64Sort::get(row[1]))}] =
          static_cast<int>(engine::I64Sort::get(row[2]));
    }
    REQUIRE(got == dist);
  }
}

namespace {

// A random arithmetic term over small numbers, and every sub-term of it.
std::string random_term(std::mt19937& rng, int depth, std::vector<std::string>& subterms) {
  std::string t;
  int pick = depth == 0 ? 0 : static_cast<int>(rng() % 4);
  switch (pick) {
    case 0:
      t = rng() % 2 ? "(Num " + std::to_string(rng() % 3) + ")"
                    : "(Var \"" + std::string(1, static_cast<char>('x' + rng() % 3)) + "\")";
      break;
    case 1: t = "(Neg " + random_term(rng, depth - 1, subterms) + ")"; break;
    case 2: {
      std::string a = random_term(rng, depth - 1, subterms);
      t = "(Add " + a + " " + random_term(rng, depth - 1, subterms) + ")";
      break;
    }
    default: {
      std::string a = random_term(rng, depth - 1, subterms);
      t = "(Mul " + a + " " + random_term(rng, depth - 1, subterms) + ")";
      break;
    }
  }
  subterms.push_back(t);
  return t;
}

const char* kArithRules[] = {
    "(rewrite (Add a b) (Add b a)",
    "(rewrite (Mul a b) (Mul b a)",
    "(rewrite (Add (Add a b) c) (Add a (Add b c))",
    "(rewrite (Add (Num x) (Num y)) (Num (+ x y))",
    "(rewrite (Mul (Num x) (Num y)) (Num (* x y))",
    "(rewrite (Neg (Neg a)) a",
    "(rewrite (Add a (Num 0)) a",
    "(rewrite (Mul a (Num 1)) a",
    "(rewrite (Neg (Num x)) (Num (- 0 x))",
    "(rule ((= e (Mul a (Num 0)))) ((union e (Num 0)))",
};

struct Saturated {
  std::map<std::string, std::size_t> sizes;  // rows per function
  std::vector<std::vector<bool>> equal;       // probe i == probe j
};

Saturated observe(TestProgram& s, const std::vector<std::string>& probes) {
  Saturated out;
  for (const char* f : {"Num", "Var", "Neg", "Add", "Mul"}) out.sizes[f] = s.rows(f);
  std::vector<engine::Value> classes;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    classes.push_back(s.egraph().find(s.global("p" + std::to_string(i)).value));
  }
  for (engine::Value x : classes) {
    std::vector<bool> row;
    for (engine::Value y : classes) row.push_back(x == y);
    out.equal.push_back(row);
  }
  return out;
}

}  // namespace

TEST_CASE("semi-naive: equality saturation agrees with naive re-evaluation of every rule", "[engine][dsl]") {
  // The oracle session adds fresh copies of all rules in a new ruleset before every iteration;
  // fresh rules have never run, so each iteration searches the whole database (naive).
  std::mt19937 rng(4242);
  std::size_t merged_pairs = 0;
  for (int seed = 0; seed < 20; ++seed) {
    std::vector<std::string> subterms;
    std::string facts;
    for (int i = 0; i < 4; ++i) random_term(rng, 4, subterms);
    std::sort(subterms.begin(), subterms.end());
    subterms.erase(std::unique(subterms.begin(), subterms.end()), subterms.end());
    for (std::size_t i = 0; i < subterms.size(); ++i) {
      facts += "(let p" + std::to_string(i) + " " + subterms[i] + ")\n";
    }
    INFO("seed " << seed << "\n" << facts);
    const std::string decl = "(datatype E (Num i64) (Var String) (Neg E) (Add E E) (Mul E E))\n";
    engine::RunLimits limits;
    limits.max_iterations = 200;
    limits.max_rows = 50000;

    TestProgram semi;
    semi.session().set_limits(limits);
    std::string rules;
    for (const char* r : kArithRules) rules += std::string(r) + ")\n";
    semi.run(decl + facts + rules + "(run-schedule (saturate (run)))\n");
    REQUIRE(semi.session().total_report().stop != engine::StopReason::IterationLimit);
    REQUIRE(semi.session().total_report().stop != engine::StopReason::NodeLimit);

    TestProgram naive;
    naive.session().set_limits(limits);
    naive.run(decl + facts);
    for (int it = 0;; ++it) {
      REQUIRE(it < 200);
      std::string name = "n" + std::to_string(it);
      std::string text = "(ruleset " + name + ")\n";
      for (const char* r : kArithRules) text += std::string(r) + " :ruleset " + name + ")\n";
      text += "(run " + name + " 1)\n";
      naive.run(text);
      if (!naive.session().total_report().iterations.back().changed) break;
    }

    Saturated a = observe(semi, subterms);
    Saturated b = observe(naive, subterms);
    CHECK(a.sizes == b.sizes);
    REQUIRE(a.equal == b.equal);
    for (std::size_t i = 0; i < subterms.size(); ++i) {
      for (std::size_t j = i + 1; j < subterms.size(); ++j) merged_pairs += a.equal[i][j];
    }
  }
  CHECK(merged_pairs > 10);
}

TEST_CASE("semi-naive: a rule that mentions a global matches after the global's e-class merges", "[engine][dsl]") {
  // F(Num 3) is older than the global, so after the union its class is the root and the F row
  // stays as it was. Only the global's meaning changed; a naive evaluation would now match.
  const std::string prelude =
      "(datatype E (Num i64) (F E))\n(relation hit (E))\n(F (Num 3))\n(let g (Num 5))\n";
  const std::string rule = "(rule ((= g (F x))) ((hit x)))\n";
  const std::string merge = "(union g (F (Num 3)))\n";
  TestProgram p;
  p.run(prelude + rule + "(run 1)\n");
  REQUIRE(p.rows("hit") == 0);
  p.run(merge + "(run 3)\n");
  CHECK(p.rows("hit") == 1);
  // The same program with the rule declared after the union (so it searches everything) does match.
  TestProgram fresh;
  fresh.run(prelude + merge + rule + "(run 3)\n");
  CHECK(fresh.rows("hit") == 1);
}
