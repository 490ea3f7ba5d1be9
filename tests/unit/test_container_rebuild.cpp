// Containers of e-classes under rebuild: a container is equal to the one built from the merged
// classes, and congruence follows through container keys.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/container.hpp"
#include "engine/egraph.hpp"

using namespace kiln::engine;

namespace {

// Sort E with Leaf(i64), S(Set E), V(Vec E) and P(Pair E (Set E)), all constructors.
struct Graph {
  EGraph g;
  Builtins b = add_builtins(g);
  SortId e = g.add_sort(Sort{"E", true, nullptr});
  SortId set = add_container_sort(g, b, "ESet", ContainerKind::Set, {e});
  SortId vec = add_container_sort(g, b, "EVec", ContainerKind::Vec, {e});
  SortId pair = add_container_sort(g, b, "EPair", ContainerKind::Pair, {e, set});
  FunctionId leaf = constructor("Leaf", b.i64);
  FunctionId s = constructor("S", set);
  FunctionId v = constructor("V", vec);
  FunctionId p = constructor("P", pair);

  FunctionId constructor(const std::string& name, SortId input) {
    FunctionDecl d;
    d.name = name;
    d.kind = FunctionKind::Constructor;
    d.inputs = {input};
    d.output = e;
    d.merge = MergeKind::Union;
    return g.add_function(std::move(d));
  }
  const ContainerSort& container(SortId sort) const { return *g.sort(sort).container; }
  Value node(FunctionId f, Value key) { return g.lookup_or_insert(f, &key); }
};

}  // namespace

TEST_CASE("container rebuild: a set of two merged classes equals the set of the merged class",
          "[engine]") {
  Graph gr;
  Value one = I64Sort::make(1), two = I64Sort::make(2);
  Value a = gr.node(gr.leaf, one), b = gr.node(gr.leaf, two);
  Value both = gr.container(gr.set).make({a, b});
  Value s_both = gr.node(gr.s, both);
  Value s_a = gr.node(gr.s, gr.container(gr.set).make({a}));
  REQUIRE(gr.g.find(s_both) != gr.g.find(s_a));
  gr.g.unite(a, b);
  gr.g.rebuild();
  CHECK(gr.g.find(s_both) == gr.g.find(s_a));
  CHECK(gr.g.table(gr.s).size() == 1);
  Value canonical = gr.g.canonical(gr.set, both);
  CHECK(gr.container(gr.set).items(canonical).size() == 1);
}

TEST_CASE("container rebuild: random containers and unions agree with a naive congruence closure",
          "[engine]") {
  std::mt19937 rng(7);
  std::size_t container_merges = 0;  // merges found through container keys
  for (int round = 0; round < 20; ++round) {
    Graph gr;
    struct Node {
      FunctionId f;
      std::vector<Value> members;  // the classes in the container, as created (a Leaf: its i64)
      Value inner_set_first = 0;   // P: the pair's first class; the set is `members`
      Value out;
    };
    std::vector<Node> nodes;
    std::vector<Value> classes;
    auto pick = [&] { return classes[rng() % classes.size()]; };
    auto pick_some = [&] {
      std::vector<Value> out(1 + rng() % 3);
      for (Value& x : out) x = pick();
      return out;
    };
    std::vector<std::pair<Value, Value>> unions;
    for (int phase = 0; phase < 3; ++phase) {
      for (int i = 0; i < 5; ++i) {
        Value k = I64Sort::make(static_cast<std::int64_t>(rng() % 50));
        Value out = gr.node(gr.leaf, k);
        nodes.push_back({gr.leaf, {k}, 0, out});
        classes.push_back(out);
      }
      for (int i = 0; i < 20; ++i) {
        std::vector<Value> members = pick_some();
        Node node{gr.s, members, 0, 0};
        switch (rng() % 3) {
          case 0: node.out = gr.node(gr.s, gr.container(gr.set).make(members)); break;
          case 1:
            node.f = gr.v;
            node.out = gr.node(gr.v, gr.container(gr.vec).make(members));
            break;
          default: {
            node.f = gr.p;
            node.inner_set_first = pick();
            Value inner = gr.container(gr.set).make(members);
            node.out = gr.node(gr.p, gr.container(gr.pair).make({node.inner_set_first, inner}));
          }
        }
        nodes.push_back(node);
        classes.push_back(node.out);
      }
      for (int i = 0; i < 6; ++i) {
        Value x = pick(), y = pick();
        unions.emplace_back(x, y);
        gr.g.unite(x, y);
      }
      gr.g.rebuild();
    }

    // Naive closure: two nodes of one constructor are congruent when their containers hold the
    // same classes (a set: as a set; a vector: in order).
    Value n = 0;
    for (const Node& node : nodes) n = std::max(n, node.out + 1);
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
    auto key = [&](const Node& node) {
      std::vector<Value> k;
      if (node.f == gr.leaf) return node.members;
      for (Value m : node.members) k.push_back(find(m));
      if (node.f != gr.v) {
        std::sort(k.begin(), k.end());
        k.erase(std::unique(k.begin(), k.end()), k.end());
      }
      if (node.f == gr.p) k.insert(k.begin(), find(node.inner_set_first));
      return k;
    };
    bool changed = true;
    while (changed) {
      changed = false;
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        for (std::size_t j = i + 1; j < nodes.size(); ++j) {
          if (nodes[i].f != nodes[j].f || key(nodes[i]) != key(nodes[j])) continue;
          if (join(nodes[i].out, nodes[j].out)) {
            changed = true;
            container_merges += nodes[i].f != gr.leaf;
          }
        }
      }
    }
    std::size_t disagreements = 0;
    for (const Node& x : nodes) {
      for (const Node& y : nodes) {
        disagreements += (find(x.out) == find(y.out)) != (gr.g.find(x.out) == gr.g.find(y.out));
      }
    }
    REQUIRE(disagreements == 0);
    // Every stored container is canonical, and there is one live row per distinct key.
    for (FunctionId f : {gr.s, gr.v, gr.p}) {
      const Table& t = gr.g.table(f);
      SortId sort = gr.g.function(f).inputs[0];
      std::set<std::vector<Value>> distinct;
      for (const Node& node : nodes) {
        if (node.f == f) distinct.insert(key(node));
      }
      for (RowId r = 0; r < t.end(); ++r) {
        if (t.alive(r)) REQUIRE(gr.g.canonical(sort, t.row(r)[0]) == t.row(r)[0]);
      }
      CHECK(t.size() == distinct.size());
    }
  }
  CHECK(container_merges > 10);
}
