// Tables and column indexes: find/append/kill, index lookups after many rows, compaction, and the
// timestamp split used by semi-naive evaluation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "engine/table.hpp"

using namespace kiln::engine;

namespace {

// Every row the index chains for `key` (values of the index's columns), with how often it appears.
// The walk is bounded so a cyclic chain fails the test instead of hanging it.
std::map<RowId, int> chained_rows(const ColumnIndex& index, const std::vector<Value>& key,
                                  std::size_t bound) {
  std::map<RowId, int> seen;
  std::size_t steps = 0;
  for (RowId r = index.first(index.hash_key(key.data())); r != kNoRow; r = index.next(r)) {
    ++seen[r];
    if (++steps > bound) break;
  }
  return seen;
}

// The live rows the index yields for `key`, filtering hash collisions as a reader does.
// Looks up through the table's current index on the same columns: Table::index() brings an
// index up to date with rows appended since it was last asked for.
std::set<RowId> index_lookup(Table& t, const ColumnIndex& stale, const std::vector<Value>& key) {
  const ColumnIndex& index = t.index(stale.mask());
  std::set<RowId> out;
  for (auto [r, count] : chained_rows(index, key, 4 * t.end() + 16)) {
    REQUIRE(count == 1);  // a row is chained once
    if (!t.alive(r)) continue;
    bool equal = true;
    for (std::size_t k = 0; k < index.columns().size(); ++k) {
      equal &= t.row(r)[index.columns()[k]] == key[k];
    }
    if (equal) out.insert(r);
  }
  return out;
}

// The live rows whose `columns` hold `key`, by a scan.
std::set<RowId> scan(const Table& t, const std::vector<std::uint32_t>& columns,
                     const std::vector<Value>& key) {
  std::set<RowId> out;
  for (RowId r = 0; r < t.end(); ++r) {
    if (!t.alive(r)) continue;
    bool equal = true;
    for (std::size_t k = 0; k < columns.size(); ++k) equal &= t.row(r)[columns[k]] == key[k];
    if (equal) out.insert(r);
  }
  return out;
}

}  // namespace

TEST_CASE("table: append then find returns the row and its cells", "[engine]") {
  Table t(2);
  CHECK(t.num_keys() == 2);
  CHECK(t.width() == 3);
  Value k1[] = {1, 2};
  Value k2[] = {2, 1};
  CHECK(t.find(k1) == kNoRow);
  RowId r1 = t.append(k1, 10, 1, false);
  RowId r2 = t.append(k2, 20, 3, true);
  CHECK(r1 == 0);
  CHECK(r2 == 1);
  CHECK(t.find(k1) == r1);
  CHECK(t.find(k2) == r2);
  CHECK(t.output(r1) == 10);
  CHECK(t.output(r2) == 20);
  CHECK(t.row(r2)[0] == 2);
  CHECK(t.row(r2)[1] == 1);
  CHECK(t.timestamp(r1) == 1);
  CHECK(t.timestamp(r2) == 3);
  CHECK_FALSE(t.subsumed(r1));
  CHECK(t.subsumed(r2));
  CHECK(t.size() == 2);  // subsumed rows are live
  CHECK(t.end() == 2);
  Value missing[] = {1, 1};
  CHECK(t.find(missing) == kNoRow);
}

TEST_CASE("table: kill hides a row from find and size, and the keys can be re-appended", "[engine]") {
  Table t(1);
  Value k[] = {7};
  RowId r = t.append(k, 1, 1, false);
  t.kill(r);
  CHECK_FALSE(t.alive(r));
  CHECK(t.size() == 0);
  CHECK(t.end() == 1);
  CHECK(t.find(k) == kNoRow);
  RowId again = t.append(k, 2, 2, false);
  CHECK(again == 1);
  CHECK(t.find(k) == again);
  CHECK(t.output(t.find(k)) == 2);
  CHECK(t.size() == 1);
}

TEST_CASE("table: a zero-key table holds at most one live row", "[engine]") {
  Table t(0);
  CHECK(t.find(nullptr) == kNoRow);
  RowId r = t.append(nullptr, 5, 1, false);
  CHECK(t.find(nullptr) == r);
  t.kill(r);
  CHECK(t.find(nullptr) == kNoRow);
  RowId s = t.append(nullptr, 6, 2, false);
  CHECK(t.find(nullptr) == s);
  CHECK(t.output(s) == 6);
}

TEST_CASE("table: primary and secondary indexes stay right while rows grow past many resizes", "[engine]") {
  Table t(2);
  // One index exists before any row (grown by append), one is built after the rows exist.
  const ColumnIndex& early = t.index(0b001);
  const std::size_t n = 5000;
  std::vector<RowId> rows;
  for (std::size_t i = 0; i < n; ++i) {
    Value keys[] = {i % 37, i};
    rows.push_back(t.append(keys, i % 5, 1 + static_cast<Timestamp>(i / 100), false));
  }
  // Kill every third row so chains also hold dead rows.
  for (std::size_t i = 0; i < n; i += 3) t.kill(rows[i]);
  const ColumnIndex& late = t.index(0b100);      // the output column
  const ColumnIndex& both = t.index(0b101);      // key 0 and the output
  CHECK(&t.index(0b001) == &early);               // reused, not rebuilt
  CHECK(early.columns() == std::vector<std::uint32_t>{0});
  CHECK(both.columns() == std::vector<std::uint32_t>{0, 2});

  for (Value k = 0; k < 37; ++k) REQUIRE(index_lookup(t, early, {k}) == scan(t, {0}, {k}));
  for (Value k = 0; k < 6; ++k) REQUIRE(index_lookup(t, late, {k}) == scan(t, {2}, {k}));
  for (Value a = 0; a < 37; a += 5) {
    for (Value b = 0; b < 5; ++b) REQUIRE(index_lookup(t, both, {a, b}) == scan(t, {0, 2}, {a, b}));
  }
  for (std::size_t i = 0; i < n; ++i) {
    Value keys[] = {i % 37, i};
    REQUIRE(t.find(keys) == (i % 3 == 0 ? kNoRow : rows[i]));
  }
  // Rows appended after the late index was built are found through it too.
  for (std::size_t i = n; i < n + 700; ++i) {
    Value keys[] = {i % 37, i};
    t.append(keys, 5, 100, false);
  }
  REQUIRE(index_lookup(t, late, {5}) == scan(t, {2}, {5}));
  REQUIRE(index_lookup(t, late, {5}).size() == 700);
  for (Value k = 0; k < 37; ++k) REQUIRE(index_lookup(t, early, {k}) == scan(t, {0}, {k}));
}

TEST_CASE("table: an index's fan-out seen from a row counts a popular key once per row", "[engine]") {
  // Half the rows share key 7, the other half have a key each (as a few e-classes own most
  // rows of an e-graph): a key drawn from a row is the popular one half the time.
  Table t(2);
  const std::size_t n = 600;
  for (std::size_t i = 0; i < n; ++i) {
    Value keys[] = {i % 2 == 0 ? Value{7} : Value{1000 + i}, i};
    t.append(keys, 0, 1, false);
  }
  const ColumnIndex& index = t.index(0b001);
  CHECK(index.rows_per_key() < 3);  // 600 rows over 301 keys
  // Exactly (300 * 300 + 300 * 1) / 600 = 150.5; the estimate caps its walk of a long chain.
  CHECK(index.rows_per_key_of_a_row() > 50);
  CHECK(index.rows_per_key_of_a_row() <= 151);
  CHECK(index.rows_per_key_of_a_row() > 10 * index.rows_per_key());
  // Without skew it is the rows per key: every key on two rows.
  Table even(2);
  for (std::size_t i = 0; i < n; ++i) {
    Value keys[] = {i / 2, i};
    even.append(keys, 0, 1, false);
  }
  CHECK(even.index(0b001).rows_per_key_of_a_row() == Approx(2.0));
}

TEST_CASE("table: for_each_row over a row range visits exactly the matching rows in it, in order", "[engine]") {
  // Semi-naive searches walk only the new rows [split, end) or the old ones [0, split) of an
  // index chain; the walk must give the same rows, in the same order, as filtering the whole
  // chain. Dead rows (kills) and a compaction in between reshape the chains.
  std::mt19937 rng(7);
  Table t(2);
  const std::size_t n = 3000;
  for (std::size_t i = 0; i < n; ++i) {
    Value keys[] = {rng() % 23, i};
    t.append(keys, rng() % 4, static_cast<Timestamp>(i), false);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (rng() % 4 == 0) t.kill(static_cast<RowId>(i));
  }
  const std::vector<RowId> bounds = {0, 1, 17, 500, 1499, 1500, 2999, 3000, 5000, kNoRow};
  auto check_ranges = [&](ColumnMask mask, std::uint32_t column, Value max_key) {
    const ColumnIndex& index = t.index(mask);
    for (Value k = 0; k < max_key; ++k) {
      std::vector<RowId> all;
      t.for_each_row(index, &k, [&](RowId r) { all.push_back(r); return true; });
      REQUIRE(std::is_sorted(all.begin(), all.end()));
      std::set<RowId> by_scan = scan(t, {column}, {k});
      REQUIRE(std::set<RowId>(all.begin(), all.end()) == by_scan);
      for (RowId from : bounds) {
        for (RowId to : bounds) {
          std::vector<RowId> ranged, expected;
          t.for_each_row(index, &k, [&](RowId r) { ranged.push_back(r); return true; }, from, to);
          std::copy_if(all.begin(), all.end(), std::back_inserter(expected),
                       [&](RowId r) { return r >= from && r < to; });
          REQUIRE(ranged == expected);
        }
      }
      // Stopping early still stops.
      std::size_t visits = 0;
      if (!all.empty()) {
        CHECK_FALSE(t.for_each_row(index, &k, [&](RowId) { ++visits; return false; }, all.front(), kNoRow));
        CHECK(visits == 1);
      }
    }
  };
  check_ranges(0b001, 0, 24);
  check_ranges(0b100, 2, 5);
  t.compact_if_sparse();  // only when dead rows outnumber live ones: kill more first
  for (RowId r = 0; r < t.end(); ++r) {
    if (t.alive(r) && r % 3 != 0) t.kill(r);
  }
  t.compact_if_sparse();
  for (std::size_t i = 0; i < 400; ++i) {
    Value keys[] = {rng() % 23, n + i};
    t.append(keys, rng() % 4, static_cast<Timestamp>(n + i), false);
  }
  check_ranges(0b001, 0, 24);
  check_ranges(0b100, 2, 5);
}

TEST_CASE("table: hash_row and hash_key agree on the index's columns", "[engine]") {
  ColumnIndex index(0b1010, 5);
  CHECK(index.columns() == std::vector<std::uint32_t>{1, 3});
  Value row[] = {11, 22, 33, 44, 55};
  Value key[] = {22, 44};
  CHECK(index.hash_row(row) == index.hash_key(key));
  Value other[] = {22, 45};
  CHECK(index.hash_row(row) != index.hash_key(other));
}

TEST_CASE("table: first_row_at_or_after splits the rows by timestamp", "[engine]") {
  Table t(1);
  Timestamp stamps[] = {1, 1, 2, 2, 2, 5, 5};
  for (Value i = 0; i < 7; ++i) {
    Value k[] = {i};
    t.append(k, 0, stamps[i], false);
  }
  t.kill(3);  // dead rows keep their slot and their time
  CHECK(t.first_row_at_or_after(0) == 0);
  CHECK(t.first_row_at_or_after(1) == 0);
  CHECK(t.first_row_at_or_after(2) == 2);
  CHECK(t.first_row_at_or_after(3) == 5);
  CHECK(t.first_row_at_or_after(5) == 5);
  CHECK(t.first_row_at_or_after(6) == 7);
  CHECK(t.first_row_at_or_after(6) == t.end());
  Table empty(1);
  CHECK(empty.first_row_at_or_after(0) == 0);
  CHECK(empty.first_row_at_or_after(9) == 0);
}

namespace {

// n rows: keys i, outputs i % 10, timestamps 1 + i / 10, every seventh subsumed.
void append_rows(Table& t, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    Value k[] = {i};
    t.append(k, i % 10, static_cast<Timestamp>(1 + i / 10), i % 7 == 0);
  }
}

// After the rows 1 mod 3 of append_rows(t, n) are all that stays: they are rows 0.. in order,
// with their cells, flags and times, found by key, and indexed by output.
void require_one_in_three_kept(Table& t, const ColumnIndex& by_output, std::size_t n) {
  REQUIRE(t.end() == n / 3);
  REQUIRE(t.size() == n / 3);
  for (RowId r = 0; r < t.end(); ++r) {
    std::size_t original = 3 * r + 1;
    REQUIRE(t.alive(r));
    REQUIRE(t.row(r)[0] == original);
    REQUIRE(t.output(r) == original % 10);
    REQUIRE(t.timestamp(r) == 1 + original / 10);
    REQUIRE(t.subsumed(r) == (original % 7 == 0));
  }
  for (std::size_t i = 0; i < n; ++i) {
    Value k[] = {i};
    REQUIRE(t.find(k) == (i % 3 == 1 ? static_cast<RowId>((i - 1) / 3) : kNoRow));
  }
  // The index reference survives compaction and is rebuilt over the new row ids.
  for (Value o = 0; o < 10; ++o) REQUIRE(index_lookup(t, by_output, {o}) == scan(t, {1}, {o}));
}

}  // namespace

TEST_CASE("table: compaction drops dead rows and keeps order, flags, times and indexes", "[engine]") {
  Table t(1);
  const std::size_t n = 3000;
  append_rows(t, n);
  const ColumnIndex& by_output = t.index(0b10);
  // Keep one row in three: 1000 live, 2000 dead.
  for (RowId r = 0; r < n; ++r) {
    if (r % 3 != 1) t.kill(r);
  }
  REQUIRE(t.size() == 1000);
  t.compact_if_sparse();
  require_one_in_three_kept(t, by_output, n);
  // Timestamps still split the rows.
  RowId older = 0;
  for (RowId r = 0; r < t.end(); ++r) older += t.timestamp(r) < 150;
  CHECK(older > 0);
  CHECK(t.first_row_at_or_after(150) == older);
  // Appending after compaction works and is indexed.
  Value k[] = {999999};
  RowId r = t.append(k, 3, 400, false);
  CHECK(r == 1000);
  CHECK(t.find(k) == r);
  CHECK(index_lookup(t, by_output, {3}).count(r) == 1);
}

TEST_CASE("table: kill_and_compact drops the given rows and the dead ones, and keeps the rest in order", "[engine]") {
  Table t(1);
  const std::size_t n = 3000;
  append_rows(t, n);
  const ColumnIndex& by_output = t.index(0b10);
  // Rows 0 mod 3 killed one by one, rows 2 mod 3 given to kill_and_compact: 1000 stay.
  for (RowId r = 0; r < n; r += 3) t.kill(r);
  HugePageVector<RowId> rows;
  for (RowId r = 2; r < n; r += 3) rows.push_back(r);
  REQUIRE(t.sparse_after_killing(rows.size()));
  t.kill_and_compact(rows);
  require_one_in_three_kept(t, by_output, n);
  // A dropped row's keys can be appended again, and are found and indexed.
  Value k[] = {2};
  RowId r = t.append(k, 5, 400, false);
  CHECK(t.find(k) == r);
  CHECK(index_lookup(t, by_output, {5}).count(r) == 1);
}

TEST_CASE("table: after compaction an index is relinked when next asked for, kills and appends in between", "[engine]") {
  Table t(1);
  const std::size_t n = 4000;
  for (std::size_t i = 0; i < n; ++i) {
    Value k[] = {i};
    t.append(k, i % 13, 1, false);
  }
  const ColumnIndex& by_output = t.index(0b10);
  for (RowId r = 0; r < n; ++r) {
    if (r % 4 != 0) t.kill(r);
  }
  t.compact_if_sparse();
  REQUIRE(t.end() == 1000);
  // Before the index is asked for again: kill some of the renumbered rows, append new ones
  // whose outputs collide with old chains.
  for (RowId r = 0; r < t.end(); r += 5) t.kill(r);
  for (std::size_t i = 0; i < 300; ++i) {
    Value k[] = {n + i};
    t.append(k, i % 13, 2, false);
  }
  for (Value o = 0; o < 13; ++o) {
    std::set<RowId> expected = scan(t, {1}, {o});
    REQUIRE(!expected.empty());
    REQUIRE(index_lookup(t, by_output, {o}) == expected);
  }
  // Kills after the relink leave the chains at once.
  for (RowId r = 1; r < t.end(); r += 3) {
    if (t.alive(r)) t.kill(r);
  }
  for (Value o = 0; o < 13; ++o) REQUIRE(index_lookup(t, by_output, {o}) == scan(t, {1}, {o}));
}

TEST_CASE("table: compaction waits until dead rows are many and outnumber live ones", "[engine]") {
  struct Case {
    Value rows;
    RowId dead;  // the first rows are killed
  };
  // Few dead rows; many dead rows but more live ones.
  for (Case c : {Case{100, 90}, Case{5000, 2000}}) {
    INFO(c.rows << " rows, " << c.dead << " dead");
    Table t(1);
    for (Value i = 0; i < c.rows; ++i) {
      Value k[] = {i};
      t.append(k, 0, 1, false);
    }
    for (RowId r = 0; r < c.dead; ++r) t.kill(r);
    t.compact_if_sparse();
    CHECK(t.end() == c.rows);
    CHECK(t.size() == c.rows - c.dead);
  }
}

TEST_CASE("table: a copy is independent of the original, indexes included", "[engine]") {
  Table t(1);
  t.index(0b10);
  for (Value i = 0; i < 20; ++i) {
    Value k[] = {i};
    t.append(k, i % 2, 1, false);
  }
  Table copy(t);
  for (Value i = 20; i < 3000; ++i) {
    Value k[] = {i};
    copy.append(k, 1, 2, false);
  }
  Value k0[] = {0};
  copy.kill(copy.find(k0));
  CHECK(t.size() == 20);
  CHECK(t.find(k0) == 0);
  CHECK(copy.size() == 2999);
  CHECK(copy.find(k0) == kNoRow);
  CHECK(index_lookup(t, t.index(0b10), {1}) == scan(t, {1}, {1}));
  CHECK(index_lookup(t, t.index(0b10), {1}).size() == 10);
  CHECK(index_lookup(copy, copy.index(0b10), {1}) == scan(copy, {1}, {1}));
  CHECK(index_lookup(copy, copy.index(0b10), {1}).size() == 10 + 2980);
  Table assigned(3);
  assigned = copy;
  CHECK(assigned.num_keys() == 1);
  CHECK(assigned.size() == copy.size());
  CHECK(index_lookup(assigned, assigned.index(0b10), {0}) == scan(copy, {1}, {0}));
}

TEST_CASE("table: random appends and kills keep find and every index consistent", "[engine]") {
  std::mt19937 rng(99);
  Table t(2);
  const ColumnIndex& first = t.index(0b001);
  const ColumnIndex& second = t.index(0b010);
  std::map<std::pair<Value, Value>, RowId> live;
  Timestamp now = 1;
  for (int step = 0; step < 6000; ++step) {
    Value a = rng() % 23, b = rng() % 41;
    Value keys[] = {a, b};
    auto found = live.find({a, b});
    if (found != live.end() && rng() % 2 == 0) {
      t.kill(found->second);
      live.erase(found);
    } else if (found == live.end()) {
      live[{a, b}] = t.append(keys, rng() % 4, now, false);
    }
    if (step % 500 == 0) ++now;
    if (step % 1500 == 1499) {
      // Compaction renumbers rows; re-read their ids by key.
      t.compact_if_sparse();
      for (auto& [key, row] : live) {
        Value k[] = {key.first, key.second};
        row = t.find(k);
        REQUIRE(row != kNoRow);
      }
    }
  }
  REQUIRE(t.size() == live.size());
  for (const auto& [key, row] : live) {
    Value k[] = {key.first, key.second};
    REQUIRE(t.find(k) == row);
  }
  for (Value a = 0; a < 23; ++a) REQUIRE(index_lookup(t, first, {a}) == scan(t, {0}, {a}));
  for (Value b = 0; b < 41; ++b) REQUIRE(index_lookup(t, second, {b}) == scan(t, {1}, {b}));
}

TEST_CASE("table: killing and re-appending the same keys many times keeps find exact", "[engine]") {
  Table t(2);
  const ColumnIndex& by_first = t.index(0b001);
  RowId current[4] = {kNoRow, kNoRow, kNoRow, kNoRow};
  for (std::uint32_t step = 0; step < 20000; ++step) {
    Value k = step % 4;
    Value keys[] = {k, 1000 + k};
    if (current[k] != kNoRow) {
      REQUIRE(t.find(keys) == current[k]);
      t.kill(current[k]);
      REQUIRE(t.find(keys) == kNoRow);
    }
    current[k] = t.append(keys, step, 1 + step / 1000, false);
  }
  CHECK(t.size() == 4);
  for (Value k = 0; k < 4; ++k) {
    Value keys[] = {k, 1000 + k};
    CHECK(t.find(keys) == current[k]);
    CHECK(index_lookup(t, by_first, {k}) == std::set<RowId>{current[k]});
    // Killed rows leave their chains at once.
    for (auto [r, n] : chained_rows(by_first, {k}, 100)) CHECK(t.alive(r));
  }
  t.compact_if_sparse();
  CHECK(t.end() == 4);
  for (Value k = 0; k < 4; ++k) {
    Value keys[] = {k, 1000 + k};
    RowId r = t.find(keys);
    REQUIRE(r != kNoRow);
    CHECK(t.output(r) == 19996 + k);
    CHECK(index_lookup(t, by_first, {k}) == std::set<RowId>{r});
  }
}

TEST_CASE("table: the primary index finds keys and outputs of every width against a model", "[engine]") {
  // Keys that pack into 64 bits (one key; two below 2^32) are told apart by their hash alone,
  // and outputs below 2^32 are answered from the index: mix them with keys and outputs that do
  // not fit, kill and re-append some, compact, and compare every lookup with a map.
  std::mt19937_64 rng(77);
  for (std::uint32_t num_keys : {0u, 1u, 2u, 3u}) {
    Table t(num_keys);
    std::map<std::vector<Value>, std::pair<RowId, Value>> model;
    auto value = [&]() -> Value {
      switch (rng() % 4) {
        case 0: return rng() % 8;                       // small, often repeated
        case 1: return 0xffffffffu - rng() % 2;         // at the 32-bit edge
        case 2: return (Value{1} << 32) + rng() % 4;    // just past it
        default: return rng() % 64;
      }
    };
    Timestamp ts = 1;
    for (int step = 0; step < 4000; ++step) {
      std::vector<Value> keys(num_keys);
      for (Value& k : keys) k = value();
      auto found = model.find(keys);
      RowId r = t.find(keys.data());
      Value output = 0;
      RowId r2 = t.find_output(keys.data(), t.key_hash(keys.data()), &output);
      REQUIRE(r == r2);
      if (found == model.end()) {
        REQUIRE(r == kNoRow);
        Value out = value();
        model[keys] = {t.append(keys.data(), out, ts, false), out};
      } else {
        REQUIRE(r == found->second.first);
        REQUIRE(output == found->second.second);
        if (rng() % 3 == 0) {
          t.kill(r);
          model.erase(found);
        }
      }
      if (step % 500 == 499) {
        ++ts;
        t.compact_if_sparse();
        for (auto& [k, row_out] : model) row_out.first = t.find(k.data());
      }
    }
    for (const auto& [k, row_out] : model) {
      Value output = 0;
      RowId r = t.find_output(k.data(), t.key_hash(k.data()), &output);
      REQUIRE(r != kNoRow);
      REQUIRE(output == row_out.second);
      REQUIRE(t.output(r) == row_out.second);
      REQUIRE(std::equal(k.begin(), k.end(), t.row(r)));
    }
    REQUIRE(t.size() == model.size());
  }
}

TEST_CASE("table: a horizon hides the rows appended after it from searches, and only from them", "[engine]") {
  // The runner applies matches while later rules still search: those searches must see the
  // table as it was, through every door a search uses (end, size, find, index chains, the
  // timestamp split), while the actions' own finds see every row.
  Table t(1);
  const ColumnIndex* index = &t.index(0b10);  // on the output column, synced before the horizon
  for (Value i = 0; i < 10; ++i) {
    Value k[] = {i};
    t.append(k, i % 3, 1, false);
  }
  t.set_horizon();
  for (Value i = 10; i < 20; ++i) {
    Value k[] = {i};
    t.append(k, i % 3, 2, false);
  }
  Value fresh[] = {15};
  Value old[] = {4};
  CHECK(t.end() == 20);
  CHECK(t.visible_end() == 10);
  CHECK(t.size() == 20);
  CHECK(t.visible_size() == 10);
  CHECK(t.find(fresh) == 15);
  CHECK(t.find_visible(fresh) == kNoRow);
  CHECK(t.find_visible(old) == 4);
  CHECK(t.first_row_at_or_after(2) == 10);  // no visible row is new
  CHECK(t.first_row_at_or_after(1) == 0);
  // An index asked for now is brought up to the horizon only, and a walk stops there too.
  index = &t.index(0b10);
  CHECK(index->synced() == 10);
  const ColumnIndex& created = t.index(0b11);  // an index made behind the horizon
  CHECK(created.synced() == 10);
  Value output = 1;
  std::vector<RowId> seen;
  t.for_each_row(*index, &output, [&](RowId r) { seen.push_back(r); return true; });
  CHECK(seen == std::vector<RowId>{1, 4, 7});

  t.clear_horizon();
  CHECK(t.visible_end() == 20);
  CHECK(t.visible_size() == 20);
  CHECK(t.find_visible(fresh) == 15);
  CHECK(t.first_row_at_or_after(2) == 10);
  CHECK(t.first_row_at_or_after(3) == 20);
  seen.clear();
  t.for_each_row(t.index(0b10), &output, [&](RowId r) { seen.push_back(r); return true; });
  CHECK(seen == std::vector<RowId>{1, 4, 7, 10, 13, 16, 19});
}
