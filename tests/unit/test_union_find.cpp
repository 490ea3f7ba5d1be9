// Union-find: the older (smaller) id is always the root, and only real merges are counted.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/union_find.hpp"

using kiln::engine::UnionFind;
using kiln::engine::Value;

TEST_CASE("union-find: make_set hands out consecutive ids that are their own roots", "[engine]") {
  UnionFind uf;
  for (Value i = 0; i < 10; ++i) REQUIRE(uf.make_set() == i);
  REQUIRE(uf.size() == 10);
  for (Value i = 0; i < 10; ++i) {
    CHECK(uf.find(i) == i);
    CHECK(uf.find_const(i) == i);
  }
  CHECK(uf.unions() == 0);
}

TEST_CASE("union-find: the older id becomes the root whatever the argument order", "[engine]") {
  UnionFind a;
  UnionFind b;
  for (int i = 0; i < 8; ++i) {
    a.make_set();
    b.make_set();
  }
  CHECK(a.unite(5, 2) == 2);
  CHECK(b.unite(2, 5) == 2);
  CHECK(a.find(5) == 2);
  CHECK(b.find(5) == 2);
  // Merging two non-singleton classes: the smaller of the two roots wins.
  CHECK(a.unite(7, 6) == 6);
  CHECK(a.unite(7, 5) == 2);
  CHECK(a.find(6) == 2);
  CHECK(a.find_const(7) == 2);
  CHECK(a.unite(0, 7) == 0);
  for (Value v : {0, 2, 5, 6, 7}) CHECK(a.find(v) == 0);
  CHECK(a.find(1) == 1);
  CHECK(a.find(3) == 3);
}

TEST_CASE("union-find: unions counts only merges of distinct classes", "[engine]") {
  UnionFind uf;
  for (int i = 0; i < 6; ++i) uf.make_set();
  uf.unite(0, 1);
  CHECK(uf.unions() == 1);
  uf.unite(1, 0);
  uf.unite(1, 1);
  CHECK(uf.unions() == 1);
  uf.unite(2, 3);
  uf.unite(3, 1);
  CHECK(uf.unions() == 3);
  uf.unite(0, 2);  // already one class
  CHECK(uf.unions() == 3);
}

TEST_CASE("union-find: a long chain is found after path halving", "[engine]") {
  UnionFind uf;
  const Value n = 2000;
  for (Value i = 0; i < n; ++i) uf.make_set();
  // Link i+1 under i, from the top down, so the parent chain of n-1 is as long as possible.
  for (Value i = n - 1; i > 0; --i) uf.unite(i, i - 1);
  CHECK(uf.unions() == n - 1);
  CHECK(uf.find_const(n - 1) == 0);
  CHECK(uf.find(n - 1) == 0);
  for (Value i = 0; i < n; ++i) CHECK(uf.find(i) == 0);
}

TEST_CASE("union-find: random unions agree with a naive partition whose root is its minimum", "[engine]") {
  std::mt19937 rng(1234);
  for (int round = 0; round < 20; ++round) {
    const Value n = 150;  // ids beyond the first 64-bit word of root bits
    UnionFind uf;
    for (Value i = 0; i < n; ++i) uf.make_set();
    std::vector<Value> label(n);
    for (Value i = 0; i < n; ++i) label[i] = i;
    std::uint64_t merges = 0;
    std::uniform_int_distribution<Value> pick(0, n - 1);
    for (int step = 0; step < 110; ++step) {
      Value x = pick(rng), y = pick(rng);
      Value lx = label[x], ly = label[y];
      Value root = uf.unite(x, y);
      if (lx != ly) {
        ++merges;
        Value keep = std::min(lx, ly), gone = std::max(lx, ly);
        for (Value& l : label) {
          if (l == gone) l = keep;
        }
      }
      REQUIRE(root == label[x]);
      REQUIRE(uf.unions() == merges);
    }
    for (Value i = 0; i < n; ++i) {
      // Labels are the minimum of each class because the smaller label always survives.
      REQUIRE(uf.find_const(i) == label[i]);
      REQUIRE(uf.find(i) == label[i]);
      REQUIRE(uf.is_root(i) == (label[i] == i));
    }
    std::set<Value> classes(label.begin(), label.end());
    CHECK(uf.unions() == n - classes.size());
  }
}

TEST_CASE("union-find: ids given as 64-bit values are found and united like small ones", "[engine]") {
  // Parents are stored in 32 bits; ids come in and go out as 64-bit Values.
  UnionFind uf;
  for (int i = 0; i < 70000; ++i) uf.make_set();
  Value high = 69999, low = 65536;
  CHECK(uf.unite(high, low) == low);
  CHECK(uf.find(high) == low);
  CHECK(uf.find_const(high) == low);
  CHECK(uf.is_root(low));
  CHECK_FALSE(uf.is_root(high));
}

TEST_CASE("union-find: frozen, canonical() keeps the classes of the freeze while find() follows every union",
          "[engine]") {
  std::mt19937 rng(99);
  for (int round = 0; round < 20; ++round) {
    const Value n = 150;
    UnionFind uf;
    for (Value i = 0; i < n; ++i) uf.make_set();
    std::uniform_int_distribution<Value> pick(0, n - 1);
    // Merges before the freeze, with finds in between so that paths get halved.
    for (int step = 0; step < 60; ++step) {
      uf.unite(pick(rng), pick(rng));
      uf.find(pick(rng));
    }
    std::vector<Value> at_freeze(n);
    for (Value i = 0; i < n; ++i) at_freeze[i] = uf.find_const(i);
    uf.freeze();
    // Merges while frozen (new classes too), with finds that halve paths.
    for (Value i = 0; i < 20; ++i) uf.make_set();
    std::uniform_int_distribution<Value> pick_all(0, n + 19);
    for (int step = 0; step < 80; ++step) {
      uf.unite(pick_all(rng), pick_all(rng));
      uf.find(pick_all(rng));
      Value probe = pick(rng);
      REQUIRE(uf.canonical(probe) == at_freeze[probe]);
      REQUIRE(uf.is_canonical(probe) == (at_freeze[probe] == probe));
    }
    for (Value i = n; i < n + 20; ++i) REQUIRE(uf.canonical(i) == i);  // made while frozen
    for (Value i = 0; i < n + 20; ++i) REQUIRE(uf.find(i) == uf.find_const(i));
    uf.thaw();
    for (Value i = 0; i < n + 20; ++i) REQUIRE(uf.canonical(i) == uf.find_const(i));
  }
}
