// Join plans: engine::search must return exactly the matches of a brute-force nested-loop
// evaluation of the same query over the same tables, for full and semi-naive windows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "engine/generic_join.hpp"
#include "engine/query_plan.hpp"

using namespace kiln::engine;

namespace {

using Matches = std::vector<std::vector<Value>>;

const Primitive* overload(const EGraph& g, const std::string& name, std::vector<SortId> inputs) {
  for (const Primitive* p : g.primitives().overloads(name)) {
    if (p->inputs == inputs) return p;
  }
  FAIL("no primitive " << name);
  return nullptr;
}

// Relations R(i64 i64) and S(i64 i64), function T(i64) -> i64, all over small integers.
struct Db {
  EGraph g;
  Builtins b = add_builtins(g);
  FunctionId r = relation("R");
  FunctionId s = relation("S");
  FunctionId t = function("T");
  const Primitive* plus = overload(g, "+", {b.i64, b.i64});
  const Primitive* less = overload(g, "<", {b.i64, b.i64});

  FunctionId relation(const std::string& name) {
    FunctionDecl d;
    d.name = name;
    d.kind = FunctionKind::Relation;
    d.inputs = {b.i64, b.i64};
    d.output = b.unit;
    return g.add_function(std::move(d));
  }
  FunctionId function(const std::string& name) {
    FunctionDecl d;
    d.name = name;
    d.inputs = {b.i64};
    d.output = b.i64;
    return g.add_function(std::move(d));
  }
  void add(FunctionId f, std::int64_t x, std::int64_t y) {
    Value k[] = {I64Sort::make(x), I64Sort::make(y)};
    g.set(f, k, 0);
  }
  void put(std::int64_t x, std::int64_t y) {
    Value k[] = {I64Sort::make(x)};
    if (!g.lookup(t, k)) g.set(t, k, I64Sort::make(y));
  }
};

Matches engine_matches(EGraph& g, const Query& q, Timestamp since) {
  Matches out;
  bool complete = search(g, q, SearchWindow{since}, [&](const Value* vars) {
    out.emplace_back(vars, vars + q.num_vars());
    return true;
  });
  REQUIRE(complete);
  std::sort(out.begin(), out.end());
  return out;
}

// The generic join alone, over every semi-naive variant as search runs them.
Matches generic_join_matches(EGraph& g, const Query& q, Timestamp since) {
  Matches out;
  auto sink = [&](const Value* vars) {
    out.emplace_back(vars, vars + q.num_vars());
    return true;
  };
  std::size_t n = q.atoms.size();
  if (since == 0) {
    REQUIRE(generic_join(g, q, std::vector<RowFilter>(n, RowFilter::Any), SearchWindow{0}, sink));
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<RowFilter> filters(n, RowFilter::Any);
      for (std::size_t j = 0; j < i; ++j) filters[j] = RowFilter::Old;
      filters[i] = RowFilter::New;
      REQUIRE(generic_join(g, q, filters, SearchWindow{since}, sink));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Tries every combination of live, unsubsumed rows, then evaluates primitives until all are done.
Matches brute_force(EGraph& g, const Query& q, Timestamp since, bool include_subsumed = false) {
  Matches out;
  std::vector<std::optional<Value>> vars(q.num_vars());
  auto constant = [&](const QueryTerm& t) { return t.eq_sort ? g.find(t.constant) : t.constant; };
  std::function<void(std::size_t, bool)> go = [&](std::size_t atom, bool uses_new) {
    if (atom == q.atoms.size()) {
      if (since != 0 && !uses_new) return;
      std::vector<std::optional<Value>> v = vars;
      std::vector<bool> done(q.primitives.size(), false);
      bool progress = true;
      while (progress) {
        progress = false;
        for (std::size_t p = 0; p < q.primitives.size(); ++p) {
          if (done[p]) continue;
          const QueryPrimitive& prim = q.primitives[p];
          std::vector<Value> args;
          for (const QueryTerm& a : prim.args) {
            if (!a.is_var) {
              args.push_back(constant(a));
            } else if (v[a.var]) {
              args.push_back(*v[a.var]);
            }
          }
          if (args.size() != prim.args.size()) continue;
          done[p] = progress = true;
          Value result = 0;
          if (!prim.primitive->apply(args.data(), args.size(), result)) return;
          if (!prim.result.is_var) {
            if (constant(prim.result) != result) return;
          } else if (v[prim.result.var]) {
            if (*v[prim.result.var] != result) return;
          } else {
            v[prim.result.var] = result;
          }
        }
      }
      std::vector<Value> match;
      for (const auto& x : v) {
        REQUIRE(x.has_value());
        match.push_back(*x);
      }
      out.push_back(std::move(match));
      return;
    }
    const QueryAtom& a = q.atoms[atom];
    const Table& t = g.table(a.function);
    for (RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r) || (t.subsumed(r) && !include_subsumed)) continue;
      std::vector<std::optional<Value>> saved = vars;
      bool ok = true;
      for (std::size_t c = 0; c < a.columns.size() && ok; ++c) {
        const QueryTerm& term = a.columns[c];
        Value cell = t.row(r)[c];
        if (!term.is_var) {
          ok = constant(term) == cell;
        } else if (vars[term.var]) {
          ok = *vars[term.var] == cell;
        } else {
          vars[term.var] = cell;
        }
      }
      if (ok) go(atom + 1, uses_new || t.timestamp(r) >= since);
      vars = saved;
    }
  };
  go(0, false);
  std::sort(out.begin(), out.end());
  return out;
}

QueryTerm var(std::uint32_t v) { return QueryTerm::variable(v); }
QueryTerm lit(std::int64_t x) { return QueryTerm::literal(I64Sort::make(x), false); }
QueryTerm unit() { return QueryTerm::literal(0, false); }

std::vector<Value> ints(std::initializer_list<std::int64_t> xs) {
  std::vector<Value> out;
  for (auto x : xs) out.push_back(I64Sort::make(x));
  return out;
}

}  // namespace

TEST_CASE("query plan: shared variables join across atoms", "[engine]") {
  Db db;
  // A directed graph with one triangle 1 -> 2 -> 3 -> 1 and some noise.
  for (auto [x, y] : std::vector<std::pair<int, int>>{{1, 2}, {2, 3}, {3, 1}, {3, 4}, {4, 4}, {2, 5}}) {
    db.add(db.r, x, y);
  }
  Query q;
  q.var_sorts = {db.b.i64, db.b.i64, db.b.i64};
  q.atoms = {{db.r, {var(0), var(1), unit()}},
             {db.r, {var(1), var(2), unit()}},
             {db.r, {var(2), var(0), unit()}}};
  Matches expected{ints({1, 2, 3}), ints({2, 3, 1}), ints({3, 1, 2}), ints({4, 4, 4})};
  std::sort(expected.begin(), expected.end());
  CHECK(engine_matches(db.g, q, 0) == expected);
  CHECK(brute_force(db.g, q, 0) == expected);
  CHECK(has_match(db.g, q));
}

TEST_CASE("query plan: a variable repeated in one atom must match equal columns", "[engine]") {
  Db db;
  db.add(db.r, 1, 1);
  db.add(db.r, 1, 2);
  db.add(db.r, 3, 3);
  Query q;
  q.var_sorts = {db.b.i64};
  q.atoms = {{db.r, {var(0), var(0), unit()}}};
  CHECK(engine_matches(db.g, q, 0) == Matches{ints({1}), ints({3})});
}

TEST_CASE("query plan: constants select rows and unknown constants match nothing", "[engine]") {
  Db db;
  db.add(db.r, 1, 2);
  db.add(db.r, 1, 3);
  db.add(db.r, 2, 3);
  Query q;
  q.var_sorts = {db.b.i64};
  q.atoms = {{db.r, {lit(1), var(0), unit()}}};
  CHECK(engine_matches(db.g, q, 0) == Matches{ints({2}), ints({3})});
  q.atoms = {{db.r, {var(0), lit(3), unit()}}};
  CHECK(engine_matches(db.g, q, 0) == Matches{ints({1}), ints({2})});
  q.atoms = {{db.r, {var(0), lit(9), unit()}}};
  CHECK(engine_matches(db.g, q, 0).empty());
  CHECK_FALSE(has_match(db.g, q));
  Query ground;
  ground.atoms = {{db.r, {lit(2), lit(3), unit()}}};
  CHECK(engine_matches(db.g, ground, 0) == Matches{{}});
}

TEST_CASE("query plan: primitives bind fresh variables and check bound ones", "[engine]") {
  Db db;
  for (int x = 0; x < 5; ++x) db.put(x, x * x);
  SECTION("binding: T(x) = y, z = x + y") {
    Query q;
    q.var_sorts = {db.b.i64, db.b.i64, db.b.i64};
    q.atoms = {{db.t, {var(0), var(1)}}};
    q.primitives = {{db.plus, {var(0), var(1)}, var(2)}};
    CHECK(engine_matches(db.g, q, 0) ==
          Matches{ints({0, 0, 0}), ints({1, 1, 2}), ints({2, 4, 6}), ints({3, 9, 12}), ints({4, 16, 20})});
  }
  SECTION("checking: T(x) = y, y = x + 2") {
    Query q;
    q.var_sorts = {db.b.i64, db.b.i64};
    q.atoms = {{db.t, {var(0), var(1)}}};
    q.primitives = {{db.plus, {var(0), lit(2)}, var(1)}};
    CHECK(engine_matches(db.g, q, 0) == Matches{ints({2, 4})});
  }
  SECTION("a failing primitive rejects: T(x) = y, x < 2") {
    Query q;
    q.var_sorts = {db.b.i64, db.b.i64, db.b.unit};
    q.atoms = {{db.t, {var(0), var(1)}}};
    q.primitives = {{db.less, {var(0), lit(2)}, var(2)}};
    CHECK(engine_matches(db.g, q, 0) == Matches{{I64Sort::make(0), 0, 0}, {I64Sort::make(1), 1, 0}});
  }
  SECTION("a primitive result feeds a later atom: T(x) = y, T(x + 1) = z") {
    Query q;
    q.var_sorts = {db.b.i64, db.b.i64, db.b.i64, db.b.i64};
    q.atoms = {{db.t, {var(0), var(1)}}, {db.t, {var(2), var(3)}}};
    q.primitives = {{db.plus, {var(0), lit(1)}, var(2)}};
    CHECK(engine_matches(db.g, q, 0) == brute_force(db.g, q, 0));
    CHECK(engine_matches(db.g, q, 0).size() == 4);
  }
  SECTION("only primitives: fires once, and never in a semi-naive window") {
    Query q;
    q.var_sorts = {db.b.i64};
    q.primitives = {{db.plus, {lit(40), lit(2)}, var(0)}};
    CHECK(engine_matches(db.g, q, 0) == Matches{ints({42})});
    CHECK(engine_matches(db.g, q, 5).empty());
  }
}

TEST_CASE("query plan: the sink can stop the search", "[engine]") {
  Db db;
  for (int x = 0; x < 10; ++x) db.add(db.r, x, x + 1);
  Query q;
  q.var_sorts = {db.b.i64, db.b.i64};
  q.atoms = {{db.r, {var(0), var(1), unit()}}};
  int calls = 0;
  bool complete = search(db.g, q, SearchWindow{0}, [&](const Value*) { return ++calls < 3; });
  CHECK_FALSE(complete);
  CHECK(calls == 3);
}

TEST_CASE("query plan: subsumed rows are hidden from rules but not from check, removed rows from both", "[engine]") {
  Db db;
  for (int x = 0; x < 4; ++x) db.add(db.r, x, 0);
  Value k1[] = {I64Sort::make(1), I64Sort::make(0)};
  Value k2[] = {I64Sort::make(2), I64Sort::make(0)};
  CHECK(db.g.subsume(db.r, k1));
  CHECK(db.g.remove(db.r, k2));
  Query q;
  q.var_sorts = {db.b.i64};
  q.atoms = {{db.r, {var(0), lit(0), unit()}}};
  CHECK(engine_matches(db.g, q, 0) == Matches{ints({0}), ints({3})});
  CHECK(db.g.table(db.r).size() == 3);
  Query subsumed_only;
  subsumed_only.atoms = {{db.r, {lit(1), lit(0), unit()}}};
  CHECK(engine_matches(db.g, subsumed_only, 0).empty());
  CHECK(has_match(db.g, subsumed_only));
  Query removed_only;
  removed_only.atoms = {{db.r, {lit(2), lit(0), unit()}}};
  CHECK_FALSE(has_match(db.g, removed_only));
}

TEST_CASE("query plan: an e-class constant is canonicalized before the search", "[engine]") {
  EGraph g;
  Builtins b = add_builtins(g);
  SortId e = g.add_sort(Sort{"E", true, nullptr});
  FunctionDecl leaf{"Leaf", FunctionKind::Constructor, {b.i64}, e, MergeKind::Union, {}, 1, false};
  FunctionDecl f{"F", FunctionKind::Constructor, {e}, e, MergeKind::Union, {}, 1, false};
  FunctionId leaf_id = g.add_function(leaf);
  FunctionId f_id = g.add_function(f);
  Value one = I64Sort::make(1), two = I64Sort::make(2);
  Value a = g.lookup_or_insert(leaf_id, &one);
  Value bb = g.lookup_or_insert(leaf_id, &two);
  Value fb = g.lookup_or_insert(f_id, &bb);
  REQUIRE(a < bb);
  // F(b) = y, with b written as the constant that is about to stop being canonical.
  Query q;
  q.var_sorts = {e};
  q.atoms = {{f_id, {QueryTerm::literal(bb, true), var(0)}}};
  CHECK(engine_matches(g, q, 0) == Matches{{fb}});
  g.unite(bb, a);
  g.rebuild();
  REQUIRE(g.find(bb) == a);
  CHECK(engine_matches(g, q, 0) == Matches{{g.find(fb)}});
  CHECK(brute_force(g, q, 0) == Matches{{g.find(fb)}});
}

TEST_CASE("query plan: random queries match a brute-force evaluator in every window", "[engine]") {
  std::mt19937 rng(7);
  std::size_t nonempty = 0, compared = 0, cyclic = 0;
  for (int round = 0; round < 60; ++round) {
    Db db;
    auto value = [&] { return static_cast<std::int64_t>(rng() % 5); };
    // Three batches of rows at times 1, 2, 3, with some rows removed or subsumed later.
    for (int batch = 0; batch < 3; ++batch) {
      for (int i = 0; i < 8; ++i) db.add(db.r, value(), value());
      for (int i = 0; i < 6; ++i) db.add(db.s, value(), value());
      for (int i = 0; i < 3; ++i) db.put(value(), value());
      if (batch == 1) {
        Value k[] = {I64Sort::make(value()), I64Sort::make(value())};
        db.g.remove(db.r, k);
        Value k2[] = {I64Sort::make(value()), I64Sort::make(value())};
        db.g.subsume(db.s, k2);
      }
      if (batch < 2) db.g.advance_time();
    }

    for (int qn = 0; qn < 12; ++qn) {
      Query q;
      // Every other query is built around a cycle, which search runs as a generic join.
      const bool cycle = qn % 2 == 1;
      const std::uint32_t pool = cycle ? 4 : 2 + rng() % 3;
      std::vector<bool> used(pool, false);
      auto term = [&] {
        if (rng() % 5 == 0) return lit(value());
        std::uint32_t v = rng() % pool;
        used[v] = true;
        return var(v);
      };
      // Arguments are generated in order (each call draws random numbers).
      auto atom = [&](QueryTerm x, QueryTerm y) -> QueryAtom {
        switch (rng() % 3) {
          case 0: return {db.r, {x, y, unit()}};
          case 1: return {db.s, {x, y, unit()}};
          default: return {db.t, {x, y}};
        }
      };
      if (cycle) {
        // A triangle or a 4-cycle, sometimes with a constant or a repeated variable in place of
        // a vertex, a chord, or one more atom, in a shuffled order (semi-naive variants differ).
        const std::uint32_t length = 3 + rng() % 2;
        const std::uint32_t altered = rng() % (6 * length);  // the endpoint replaced, if any
        std::uint32_t endpoint = 0;
        auto vertex = [&](std::uint32_t v) {
          if (endpoint++ == altered) {
            if (rng() % 2) return lit(value());
            v = rng() % length;
          }
          used[v] = true;
          return var(v);
        };
        auto edge = [&](std::uint32_t a, std::uint32_t b) {
          QueryTerm x = vertex(a);
          q.atoms.push_back(atom(x, vertex(b)));
        };
        for (std::uint32_t i = 0; i < length; ++i) edge(i, (i + 1) % length);
        if (length == 4 && rng() % 3 == 0) edge(0, 2);
        if (rng() % 3 == 0) {
          QueryTerm x = term();
          q.atoms.push_back(atom(x, term()));
        }
        std::shuffle(q.atoms.begin(), q.atoms.end(), rng);
      } else {
        std::size_t atoms = 1 + rng() % 3;
        for (std::size_t i = 0; i < atoms; ++i) {
          QueryTerm x = term();
          q.atoms.push_back(atom(x, term()));
        }
      }
      // Renumber the variables the atoms use to 0..k-1.
      std::vector<std::uint32_t> renumber(pool, 0);
      std::uint32_t k = 0;
      for (std::uint32_t v = 0; v < pool; ++v) {
        if (used[v]) renumber[v] = k++;
      }
      for (QueryAtom& a : q.atoms) {
        for (QueryTerm& t : a.columns) {
          if (t.is_var) t.var = renumber[t.var];
        }
      }
      q.var_sorts.assign(k, db.b.i64);
      if (k > 0 && rng() % 2) {
        // z = x + y: z fresh (bound by the primitive) or an existing variable (checked).
        QueryTerm x = var(rng() % k), y = rng() % 3 ? var(rng() % k) : lit(value());
        QueryTerm z = var(rng() % k);
        switch (rng() % 4) {
          case 0: z = lit(value() + value()); break;  // a constant result is checked too
          case 1: break;
          default:
            z = var(static_cast<std::uint32_t>(q.var_sorts.size()));
            q.var_sorts.push_back(db.b.i64);
            break;
        }
        q.primitives.push_back({db.plus, {x, y}, z});
        if (z.is_var && rng() % 2) {
          // A second primitive that needs the first one's result: w = z + 1, w fresh or bound.
          QueryTerm w = var(rng() % k);
          if (rng() % 2) {
            w = var(static_cast<std::uint32_t>(q.var_sorts.size()));
            q.var_sorts.push_back(db.b.i64);
          }
          q.primitives.insert(q.primitives.begin(), QueryPrimitive{db.plus, {z, lit(1)}, w});
        }
      }
      if (k > 0 && rng() % 3 == 0) {
        QueryTerm x = var(rng() % k);
        QueryTerm y = rng() % 2 ? var(rng() % k) : lit(value());
        q.primitives.push_back({db.less, {x, y}, var(static_cast<std::uint32_t>(q.var_sorts.size()))});
        q.var_sorts.push_back(db.b.unit);
      }
      cyclic += has_cyclic_atoms(q);
      for (Timestamp since : {0u, 1u, 2u, 3u, 4u}) {
        Matches expected = brute_force(db.g, q, since);
        INFO("round " << round << " query " << qn << " since " << since);
        REQUIRE(engine_matches(db.g, q, since) == expected);
        // search may run a cyclic query as nested loops when fan-outs are small; the generic
        // join must agree on its own.
        if (has_cyclic_atoms(q)) REQUIRE(generic_join_matches(db.g, q, since) == expected);
        nonempty += !expected.empty();
        ++compared;
      }
      // has_match (used by check) also sees subsumed rows.
      CHECK(has_match(db.g, q) == !brute_force(db.g, q, 0, true).empty());
      Matches with_subsumed;
      search(db.g, q, SearchWindow{0, true}, [&](const Value* vars) {
        with_subsumed.emplace_back(vars, vars + q.num_vars());
        return true;
      });
      std::sort(with_subsumed.begin(), with_subsumed.end());
      REQUIRE(with_subsumed == brute_force(db.g, q, 0, true));
    }
  }
  // The generator must exercise real joins, not just empty results.
  CHECK(nonempty > compared / 4);
  // Many queries must be cyclic (checked against the generic join above).
  CHECK(cyclic > 60 * 12 / 4);
}

TEST_CASE("query plan: plans cached across searches stay exact while tables grow and shrink", "[engine]") {
  // One cache per query, as a rule keeps it: the plans made for small tables are reused (or
  // re-derived) as rows arrive, die and are copied by push/pop, and every search must still
  // give the brute-force matches. The path runs as nested loops; the triangle as a generic join
  // or, while fan-outs stay small, as nested loops too.
  std::mt19937 rng(11);
  Db db;
  auto value = [&] { return static_cast<std::int64_t>(rng() % 6); };
  Query path;
  path.var_sorts = {db.b.i64, db.b.i64, db.b.i64, db.b.i64};
  path.atoms = {{db.r, {var(0), var(1), unit()}}, {db.s, {var(1), var(2), unit()}},
                {db.t, {var(2), var(3)}}};
  Query triangle;
  triangle.var_sorts = {db.b.i64, db.b.i64, db.b.i64};
  triangle.atoms = {{db.r, {var(0), var(1), unit()}}, {db.s, {var(1), var(2), unit()}},
                    {db.r, {var(2), var(0), unit()}}};
  REQUIRE(!has_cyclic_atoms(path));
  REQUIRE(has_cyclic_atoms(triangle));
  std::shared_ptr<PlanCache> path_plans = make_plan_cache();
  std::shared_ptr<PlanCache> triangle_plans = make_plan_cache();
  auto cached = [&](const Query& q, PlanCache& plans, Timestamp since) {
    Matches out;
    REQUIRE(search(db.g, q, SearchWindow{since}, [&](const Value* vars) {
      out.emplace_back(vars, vars + q.num_vars());
      return true;
    }, &plans));
    std::sort(out.begin(), out.end());
    return out;
  };
  std::size_t nonempty = 0;
  for (int batch = 0; batch < 12; ++batch) {
    Timestamp since = db.g.now();
    // Batches of growing size so the row counts cross the cache's re-planning threshold.
    for (int i = 0; i < 2 + batch * batch; ++i) db.add(rng() % 2 ? db.r : db.s, value(), value());
    for (int i = 0; i < 2; ++i) db.put(value(), value());
    if (batch % 4 == 3) {
      Value k[] = {I64Sort::make(value()), I64Sort::make(value())};
      db.g.remove(db.r, k);
    }
    if (batch == 6) {
      // As push/pop does: the tables are replaced by copies, with new index objects, which
      // the cached plans must not keep pointing at.
      EGraph copy = db.g;
      db.g = copy;
    }
    for (Timestamp window : {Timestamp{0}, since}) {
      Matches p = cached(path, *path_plans, window);
      Matches t = cached(triangle, *triangle_plans, window);
      CHECK(p == brute_force(db.g, path, window));
      CHECK(t == brute_force(db.g, triangle, window));
      nonempty += !p.empty() + !t.empty();
    }
    db.g.advance_time();
  }
  CHECK(nonempty > 10);
}

TEST_CASE("query plan: behind a horizon both joins see the tables as they were", "[engine]") {
  // Early apply (Runner::iterate) appends rows while later rules search: the nested-loop join
  // and the generic join, with every semi-naive window, must then find exactly what they found
  // before the rows came, and everything once the horizon is cleared.
  Db db;
  Query triangle;
  triangle.var_sorts = {db.b.i64, db.b.i64, db.b.i64};
  triangle.atoms = {{db.r, {var(0), var(1), unit()}}, {db.s, {var(1), var(2), unit()}},
                    {db.r, {var(2), var(0), unit()}}};
  Query path;
  path.var_sorts = {db.b.i64, db.b.i64, db.b.i64};
  path.atoms = {{db.r, {var(0), var(1), unit()}}, {db.s, {var(1), var(2), unit()}}};
  for (int x = 0; x < 9; ++x) {
    for (int y = 0; y < 9; ++y) {
      if ((x * 5 + y) % 3 != 0) db.add(db.r, x, y);
      if ((x + y * 2) % 4 != 0) db.add(db.s, x, y);
    }
  }
  db.g.advance_time();
  Timestamp since = db.g.now();
  for (int x = 0; x < 9; ++x) db.add(db.s, x, (x * 7) % 9);  // a few new rows for the windows
  auto all = [&](Timestamp window) {
    return std::vector<Matches>{engine_matches(db.g, triangle, window), generic_join_matches(db.g, triangle, window),
                                engine_matches(db.g, path, window)};
  };
  std::vector<Matches> before_zero = all(0), before_since = all(since);
  REQUIRE(!before_since[0].empty());
  REQUIRE(before_zero[0] == before_zero[1]);

  db.g.set_horizons();
  db.g.advance_time();
  // New rows between old values too: a triangle may close through a row found by its keys.
  for (int x = 0; x < 14; ++x) {
    for (int y = 0; y < 14; ++y) {
      db.add(db.r, x, y);
      db.add(db.s, y, x);
    }
  }
  CHECK(all(0) == before_zero);
  CHECK(all(since) == before_since);

  db.g.clear_horizons();
  std::vector<Matches> after = all(0);
  CHECK(after[0] == brute_force(db.g, triangle, 0));
  CHECK(after[1] == after[0]);
  CHECK(after[2] == brute_force(db.g, path, 0));
  CHECK(after[0].size() > before_zero[0].size());
}
