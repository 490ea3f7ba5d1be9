// Rebuild: after unions, rows are canonical again and congruent e-nodes share one e-class.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln::engine;
using kiln::support::UserError;

namespace {

// An e-graph with sort E and constructors Leaf(i64), F(E), G(E, E).
struct Graph {
  EGraph g;
  Builtins b = add_builtins(g);
  SortId e = g.add_sort(Sort{"E", true, nullptr});
  FunctionId leaf = constructor("Leaf", {b.i64});
  FunctionId f = constructor("F", {e});
  FunctionId gg = constructor("G", {e, e});

  FunctionId constructor(const std::string& name, std::vector<SortId> inputs) {
    FunctionDecl d;
    d.name = name;
    d.kind = FunctionKind::Constructor;
    d.inputs = std::move(inputs);
    d.output = e;
    d.merge = MergeKind::Union;
    return g.add_function(std::move(d));
  }
  FunctionId function(const std::string& name, MergeKind merge, MergeFn fn = {}) {
    FunctionDecl d;
    d.name = name;
    d.kind = FunctionKind::Function;
    d.inputs = {e};
    d.output = b.i64;
    d.merge = merge;
    d.merge_fn = std::move(fn);
    return g.add_function(std::move(d));
  }
  Value mk_leaf(std::int64_t n) {
    Value k[] = {I64Sort::make(n)};
    return g.lookup_or_insert(leaf, k);
  }
  Value mk_f(Value x) {
    Value k[] = {x};
    return g.lookup_or_insert(f, k);
  }
  Value mk_g(Value x, Value y) {
    Value k[] = {x, y};
    return g.lookup_or_insert(gg, k);
  }
  bool same(Value x, Value y) { return g.find(x) == g.find(y); }
};

// Every live row has canonical e-class cells and no two live rows share canonical keys.
void require_canonical(Graph& gr) {
  for (FunctionId fid = 0; fid < gr.g.num_functions(); ++fid) {
    const FunctionDecl& d = gr.g.function(fid);
    const Table& t = gr.g.table(fid);
    std::set<std::vector<Value>> keys;
    for (RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r)) continue;
      const Value* row = t.row(r);
      for (std::size_t c = 0; c < d.inputs.size(); ++c) {
        if (gr.g.is_eq(d.inputs[c])) REQUIRE(gr.g.find_const(row[c]) == row[c]);
      }
      if (gr.g.is_eq(d.output)) REQUIRE(gr.g.find_const(row[d.inputs.size()]) == row[d.inputs.size()]);
      REQUIRE(keys.insert(std::vector<Value>(row, row + d.inputs.size())).second);
    }
  }
}

}  // namespace

TEST_CASE("rebuild: union of two leaves merges their parents", "[engine]") {
  Graph gr;
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  Value fa = gr.mk_f(a), fb = gr.mk_f(b);
  REQUIRE_FALSE(gr.same(fa, fb));
  REQUIRE(gr.g.table(gr.f).size() == 2);
  CHECK(gr.g.unite(b, a));
  CHECK_FALSE(gr.g.unite(a, b));  // already one class
  gr.g.rebuild();
  CHECK(gr.same(fa, fb));
  CHECK(gr.g.find(fb) == std::min(fa, fb));  // the older class is the root
  CHECK(gr.g.table(gr.f).size() == 1);
  CHECK(gr.g.table(gr.leaf).size() == 2);  // leaves differ in their i64 key
  require_canonical(gr);
  // A new lookup of either spelling finds the merged e-node without adding a row.
  CHECK(gr.mk_f(b) == gr.g.find(fa));
  CHECK(gr.g.table(gr.f).size() == 1);
}

TEST_CASE("rebuild: congruence propagates up a chain of parents", "[engine]") {
  Graph gr;
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  std::vector<Value> fa{a}, fb{b};
  for (int depth = 0; depth < 30; ++depth) {
    fa.push_back(gr.mk_f(fa.back()));
    fb.push_back(gr.mk_f(fb.back()));
  }
  Value ga = gr.mk_g(fa[10], fb[20]);
  Value gb = gr.mk_g(fb[10], fa[20]);
  REQUIRE(gr.g.table(gr.f).size() == 60);
  gr.g.unite(a, b);
  gr.g.rebuild();
  for (int depth = 0; depth <= 30; ++depth) REQUIRE(gr.same(fa[depth], fb[depth]));
  CHECK(gr.same(ga, gb));
  CHECK(gr.g.table(gr.f).size() == 30);
  CHECK(gr.g.table(gr.gg).size() == 1);
  require_canonical(gr);
}

TEST_CASE("rebuild: a union that closes a cycle keeps one row per e-node", "[engine]") {
  Graph gr;
  Value a = gr.mk_leaf(1);
  Value fa = gr.mk_f(a);
  Value ffa = gr.mk_f(fa);
  gr.g.unite(a, fa);
  gr.g.rebuild();
  // a = F(a), so F(F(a)) = F(a) = a.
  CHECK(gr.same(ffa, a));
  CHECK(gr.g.table(gr.f).size() == 1);
  Value k[] = {gr.g.find(a)};
  CHECK(gr.g.lookup(gr.f, k) == gr.g.find(a));
  require_canonical(gr);
}

TEST_CASE("rebuild: is idempotent and does nothing without new unions", "[engine]") {
  Graph gr;
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  gr.mk_f(a);
  gr.mk_f(b);
  gr.g.rebuild();
  auto v0 = gr.g.version();
  gr.g.rebuild();
  CHECK(gr.g.version() == v0);
  gr.g.unite(a, b);
  auto v1 = gr.g.version();
  CHECK(v1 != v0);
  gr.g.rebuild();
  auto v2 = gr.g.version();
  CHECK(v2 != v1);
  gr.g.rebuild();
  CHECK(gr.g.version() == v2);
}

TEST_CASE("rebuild: conflicting outputs of a :no-merge function raise a user error", "[engine]") {
  Graph gr;
  FunctionId h = gr.function("h", MergeKind::NoMerge);
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  Value ka[] = {a}, kb[] = {b};
  gr.g.set(h, ka, I64Sort::make(1));
  gr.g.set(h, kb, I64Sort::make(2));
  gr.g.set(h, ka, I64Sort::make(1));  // the same value again is no conflict
  gr.g.unite(a, b);
  CHECK_THROWS_AS(gr.g.rebuild(), UserError);
}

TEST_CASE("rebuild: equal outputs of a :no-merge function merge silently", "[engine]") {
  Graph gr;
  FunctionId h = gr.function("h", MergeKind::NoMerge);
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  Value ka[] = {a}, kb[] = {b};
  gr.g.set(h, ka, I64Sort::make(7));
  gr.g.set(h, kb, I64Sort::make(7));
  gr.g.unite(a, b);
  CHECK_NOTHROW(gr.g.rebuild());
  CHECK(gr.g.table(h).size() == 1);
  CHECK(gr.g.lookup(h, kb) == I64Sort::make(7));
}

TEST_CASE("rebuild: a :no-merge conflict from a program's union is an error", "[dsl]") {
  kiln::testing::TestProgram p;
  p.run(
      "(datatype E (Leaf i64))\n"
      "(function h (E) i64 :no-merge)\n"
      "(set (h (Leaf 1)) 1)\n"
      "(set (h (Leaf 2)) 2)\n");
  CHECK_THROWS_AS(p.run("(union (Leaf 1) (Leaf 2))\n"), UserError);
}

TEST_CASE("rebuild: merge functions combine rows whose keys became equal", "[engine]") {
  Graph gr;
  FunctionId lo = gr.function("lo", MergeKind::Custom, [](EGraph&, Value x, Value y) {
    return I64Sort::make(std::min(I64Sort::get(x), I64Sort::get(y)));
  });
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2), c = gr.mk_leaf(3);
  Value ka[] = {a}, kb[] = {b}, kc[] = {c};
  gr.g.set(lo, ka, I64Sort::make(5));
  gr.g.set(lo, kb, I64Sort::make(3));
  gr.g.set(lo, kc, I64Sort::make(9));
  gr.g.unite(c, b);
  gr.g.unite(b, a);
  gr.g.rebuild();
  CHECK(gr.g.table(lo).size() == 1);
  CHECK(gr.g.lookup(lo, kc) == I64Sort::make(3));
}

TEST_CASE("rebuild: the subsumed flag of merged rows is kept", "[engine]") {
  Graph gr;
  Value a = gr.mk_leaf(1), b = gr.mk_leaf(2);
  gr.mk_f(a);
  gr.mk_f(b);
  Value ka[] = {a};
  REQUIRE(gr.g.subsume(gr.f, ka));
  gr.g.unite(a, b);
  gr.g.rebuild();
  const Table& t = gr.g.table(gr.f);
  REQUIRE(t.size() == 1);
  for (RowId r = 0; r < t.end(); ++r) {
    if (t.alive(r)) CHECK(t.subsumed(r));
  }
}

TEST_CASE("rebuild: random terms and unions agree with a naive congruence closure", "[engine]") {
  std::mt19937 rng(2024);
  std::size_t congruence_merges = 0;  // merges the closure found beyond the explicit unions
  for (int round = 0; round < 15; ++round) {
    Graph gr;
    struct Node {
      FunctionId f;
      std::vector<Value> keys;  // i64 or e-class ids as created
      Value out;
    };
    std::vector<Node> nodes;
    std::vector<Value> classes;
    auto pick = [&] { return classes[rng() % classes.size()]; };
    std::vector<std::pair<Value, Value>> unions;
    for (int phase = 0; phase < 3; ++phase) {
      for (int i = 0; i < 4; ++i) {
        Value k = I64Sort::make(static_cast<std::int64_t>(rng() % 100));
        Value v = gr.g.lookup_or_insert(gr.leaf, &k);
        nodes.push_back({gr.leaf, {k}, v});
        classes.push_back(v);
      }
      for (int i = 0; i < 25; ++i) {
        if (rng() % 2) {
          Value k[] = {pick()};
          Value v = gr.g.lookup_or_insert(gr.f, k);
          nodes.push_back({gr.f, {k[0]}, v});
          classes.push_back(v);
        } else {
          Value k[] = {pick(), pick()};
          Value v = gr.g.lookup_or_insert(gr.gg, k);
          nodes.push_back({gr.gg, {k[0], k[1]}, v});
          classes.push_back(v);
        }
      }
      for (int i = 0; i < 3; ++i) {
        Value x = pick(), y = pick();
        unions.emplace_back(x, y);
        gr.g.unite(x, y);
      }
      gr.g.rebuild();
    }
    require_canonical(gr);

    // Naive closure over the original e-node spellings.
    std::size_t n = 0;
    for (const Node& node : nodes) n = std::max<std::size_t>(n, node.out + 1);
    std::vector<Value> parent(n);
    for (Value i = 0; i < n; ++i) parent[i] = i;
    auto find = [&](Value x) {
      while (parent[x] != x) x = parent[x];
      return x;
    };
    auto join = [&](Value x, Value y) {
      x = find(x);
      y = find(y);
      if (x == y) return false;
      parent[std::max(x, y)] = std::min(x, y);
      return true;
    };
    for (auto [x, y] : unions) join(x, y);
    bool changed = true;
    while (changed) {
      changed = false;
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (std::size_t j = i + 1; j < nodes.size(); ++j) {
          const Node& p = nodes[i];
          const Node& q = nodes[j];
          if (p.f != q.f) continue;
          bool congruent = true;
          for (std::size_t c = 0; c < p.keys.size(); ++c) {
            congruent &= p.f == gr.leaf ? p.keys[c] == q.keys[c] : find(p.keys[c]) == find(q.keys[c]);
          }
          if (congruent && join(p.out, q.out)) {
            changed = true;
            ++congruence_merges;
          }
        }
      }
    }
    std::size_t disagreements = 0;
    for (const Node& p : nodes) {
      for (const Node& q : nodes) {
        disagreements += (find(p.out) == find(q.out)) != gr.same(p.out, q.out);
      }
    }
    REQUIRE(disagreements == 0);
    // One live row per distinct canonical e-node.
    std::set<std::vector<Value>> distinct[3];
    for (const Node& node : nodes) {
      std::vector<Value> k = node.keys;
      if (node.f != gr.leaf) {
        for (Value& v : k) v = find(v);
      }
      distinct[node.f - gr.leaf].insert(k);
    }
    CHECK(gr.g.table(gr.leaf).size() == distinct[0].size());
    CHECK(gr.g.table(gr.f).size() == distinct[1].size());
    CHECK(gr.g.table(gr.gg).size() == distinct[2].size());
  }
  CHECK(congruence_merges > 10);
}

// Big enough that the stale rows outnumber the rest: rebuild then compacts the table before
// re-writing them (Table::kill_and_compact) instead of killing them one by one.
TEST_CASE("rebuild: a table mostly stale is compacted first and rebuilt the same", "[engine]") {
  Graph gr;
  const std::int64_t n = 3000, m = 7;
  std::vector<Value> leaves, fs;
  for (std::int64_t i = 0; i < n; ++i) leaves.push_back(gr.mk_leaf(i));
  for (std::int64_t i = 0; i < n; ++i) fs.push_back(gr.mk_f(leaves[i]));
  for (std::int64_t i = 0; i + 1 < n; ++i) gr.mk_g(leaves[i], leaves[i + 1]);
  // F(Leaf 10) is subsumed: the row it merges into, F(Leaf 3), must end subsumed.
  Value k10[] = {leaves[10]};
  REQUIRE(gr.g.subsume(gr.f, k10));
  for (std::int64_t i = m; i < n; ++i) gr.g.unite(leaves[i], leaves[i % m]);
  const Table& tf = gr.g.table(gr.f);
  // n - m of the n F rows are stale: dead rows then outnumber live ones.
  REQUIRE(tf.sparse_after_killing(n - m));
  gr.g.rebuild();
  require_canonical(gr);
  CHECK(gr.g.table(gr.leaf).size() == static_cast<std::size_t>(n));
  CHECK(tf.size() == static_cast<std::size_t>(m));
  CHECK(tf.end() == tf.size());
  CHECK(gr.g.table(gr.gg).size() == static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < n; ++i) REQUIRE(gr.same(fs[i], fs[i % m]));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = i + 1; j < m; ++j) REQUIRE(!gr.same(fs[i], fs[j]));
  }
  for (RowId r = 0; r < tf.end(); ++r) {
    CHECK(tf.subsumed(r) == (gr.g.find_const(tf.row(r)[0]) == gr.g.find_const(leaves[3])));
  }
  // The rebuilt table answers lookups of every spelling.
  for (std::int64_t i = 0; i < n; ++i) {
    Value k[] = {leaves[i]};
    std::optional<Value> found = gr.g.lookup(gr.f, k);
    REQUIRE(found);
    REQUIRE(gr.same(*found, fs[i % m]));
  }
}
