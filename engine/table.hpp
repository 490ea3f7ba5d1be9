// A function's rows: `keys -> output`, each with a write timestamp, flags and an origin, a
// primary index on the keys and hash indexes on other column subsets. Rows are append-only; an
// update kills the old row and appends a new one, so timestamps grow along the row vector and
// "rows newer than t" is a suffix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "engine/column_index.hpp"
#include "engine/huge_page_vector.hpp"
#include "engine/key_index.hpp"
#include "engine/value.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

// Provenance of a row: which rule's actions created it, as an id the EGraph names (see
// EGraph::origin_name). kNoOrigin: created by a top-level command, not by a rule.
using OriginId = std::uint32_t;
inline constexpr OriginId kNoOrigin = std::numeric_limits<OriginId>::max();

class Table {
 public:
  explicit Table(std::uint32_t num_keys);
  Table(const Table& other);
  Table(Table&&) = default;
  Table& operator=(Table&&) = default;
  Table& operator=(const Table& other) {
    Table copy(other);
    return *this = std::move(copy);
  }

  std::uint32_t num_keys() const { return num_keys_; }
  std::uint32_t width() const { return num_keys_ + 1; }
  // The mask of all key columns: a lookup on it finds at most one row (use find()).
  ColumnMask key_mask() const { return num_keys_ == 0 ? 0 : (1u << num_keys_) - 1; }
  // Live rows, including subsumed ones.
  std::size_t size() const { return live_; }
  // All row slots ever appended since the last compaction (live or dead).
  RowId end() const { return static_cast<RowId>(timestamps_.size()); }

  // --- what a search sees ---
  // A horizon hides the rows appended after it was set from searches (and from their plans
  // and secondary indexes): the runner applies a rule's matches while later rules still
  // search the table as the iteration found it (see Runner::iterate). Rows are only appended
  // meanwhile, never killed. index() syncs only up to the horizon, so no chain that
  // for_each_row walks holds a row past it. Without a horizon a search sees every row.
  void set_horizon() { horizon_ = end(); }
  void clear_horizon() { horizon_ = kNoRow; }
  RowId visible_end() const { return std::min(end(), horizon_); }
  // Every row past the horizon is live: none is killed while it is set.
  std::size_t visible_size() const { return live_ - (end() - visible_end()); }
  // find() among the visible rows.
  RowId find_visible(const Value* keys) const {
    RowId r = find(keys);
    return r < horizon_ ? r : kNoRow;
  }

  const Value* row(RowId r) const { return &cells_[static_cast<std::size_t>(r) * width()]; }
  Value output(RowId r) const { return row(r)[num_keys_]; }
  Timestamp timestamp(RowId r) const { return timestamps_[r]; }
  bool alive(RowId r) const { return (flags_[r] & kDead) == 0; }
  bool subsumed(RowId r) const { return (flags_[r] & kSubsumed) != 0; }
  // Which rule created the row (kNoOrigin: none); kept by compaction, never read by matching.
  OriginId origin(RowId r) const { return origins_[r]; }

  // The live row with these keys, or kNoRow.
  RowId find(const Value* keys) const { return find(keys, key_hash(keys)); }
  // The same with the keys' hash known (key_hash), so a find-then-append hashes once.
  RowId find(const Value* keys, std::uint64_t hash) const { return find_hit(keys, hash).row; }
  // The live row with these keys (kNoRow: none) and its output in *output; often answered by
  // the index alone, without reading the row.
  RowId find_output(const Value* keys, std::uint64_t hash, Value* output) const {
    KeyIndex::Hit hit = find_hit(keys, hash);
    if (hit.row != kNoRow) *output = hit.has_output ? hit.output : this->output(hit.row);
    return hit.row;
  }
  // A bijection of keys that pack into 64 bits (one key, or two below 2^32), so that the index
  // can tell equal keys by their hash; a mix of the columns for other keys.
  std::uint64_t key_hash(const Value* keys) const;
  // Memory hints for a find() of keys with this hash soon: first the index slot, later the row.
  void prefetch_slot_of(std::uint64_t hash) const { primary_.prefetch_slot(hash); }
  void prefetch_row_of(std::uint64_t hash) const {
    RowId r = primary_.peek(hash);
    if (r < end()) __builtin_prefetch(row(r));
  }
  RowId append(const Value* keys, Value output, Timestamp ts, bool subsumed,
               OriginId origin = kNoOrigin) {
    return append(keys, key_hash(keys), output, ts, subsumed, origin);
  }
  RowId append(const Value* keys, std::uint64_t hash, Value output, Timestamp ts, bool subsumed,
               OriginId origin);
  void kill(RowId r) { kill(r, key_hash(row(r))); }
  // The same with the hash of the row's keys known.
  void kill(RowId r, std::uint64_t hash);
  void set_subsumed(RowId r) { flags_[r] |= kSubsumed; }

  // Calls visit(row) for each live row whose index columns equal `key` (the values of
  // index.columns(), in order), oldest first; stops early when visit returns false, and then
  // returns false. Only rows in [from, to) are visited: a semi-naive search walks only the new
  // rows (or only the old ones) of a chain instead of reading and rejecting the others.
  template <class Visit>
  bool for_each_row(const ColumnIndex& index, const Value* key, Visit&& visit, RowId from = 0,
                    RowId to = kNoRow) const {
    const std::vector<std::uint32_t>& columns = index.columns();
    std::uint64_t hash = index.hash_key(key);
    RowId start = index.first(hash);
    if (from > 0 && start != kNoRow && start < from) {
      // Chains are in row order: step back from the newest row over the rows in range.
      start = index.last(hash);
      if (start < from) return true;
      for (RowId p = index.prev(start); p != kNoRow && p >= from; p = index.prev(p)) start = p;
    }
    for (RowId r = start; r != kNoRow && r < to; r = index.next(r)) {
      if (!index.same_hash(r, hash)) continue;
      const Value* values = row(r);
      std::size_t k = 0;
      while (k < columns.size() && values[columns[k]] == key[k]) ++k;
      if (k == columns.size() && !visit(r)) return false;
    }
    return true;
  }

  // First row whose timestamp is >= ts (rows are in timestamp order), or visible_end() when
  // that comes first. Remembers the last answer: every rule searched in one iteration asks
  // each of its tables the same question.
  RowId first_row_at_or_after(Timestamp ts) const {
    if (ts != split_memo_.ts || end() != split_memo_.end) {
      split_memo_ = {ts, end(), find_first_row_at_or_after(ts)};
    }
    return std::min(split_memo_.row, visible_end());
  }

  // The index on `mask`, up to date: built on first use, then brought up to date here with the
  // rows appended since (in one batch), while kill() unlinks rows at once.
  const ColumnIndex& index(ColumnMask mask);

  // Drops dead rows when they outnumber live ones. Row ids change: never call during a search.
  void compact_if_sparse();
  // Whether killing this many more rows would make the table sparse (see compact_if_sparse).
  bool sparse_after_killing(std::size_t rows) const {
    std::size_t dead = timestamps_.size() - live_ + rows;
    return dead >= 1024 && dead >= live_ - rows;
  }
  // Kills these live rows (ascending) and drops every dead row at once, without unlinking each
  // killed row from the indexes: the primary index is renumbered, the others are laid out
  // again on their next use. Row ids change: never call during a search.
  void kill_and_compact(const HugePageVector<RowId>& rows);

 private:
  static constexpr std::uint8_t kDead = 1;
  static constexpr std::uint8_t kSubsumed = 2;

  RowId find_first_row_at_or_after(Timestamp ts) const;
  void compact();
  // Whether key_hash is exact for these keys (see there).
  bool exact_hash(const Value* keys) const {
    return num_keys_ < 2 || (num_keys_ == 2 && ((keys[0] | keys[1]) >> 32) == 0);
  }
  KeyIndex::Hit find_hit(const Value* keys, std::uint64_t hash) const;

  std::uint32_t num_keys_;
  HugePageVector<Value> cells_;
  HugePageVector<Timestamp> timestamps_;
  HugePageVector<std::uint8_t> flags_;
  HugePageVector<OriginId> origins_;  // per row, parallel to timestamps_
  std::size_t live_ = 0;
  RowId horizon_ = kNoRow;  // see set_horizon
  KeyIndex primary_;
  std::vector<std::unique_ptr<ColumnIndex>> indexes_;
  std::map<ColumnMask, ColumnIndex*> index_by_mask_;
  // The last first_row_at_or_after question and answer, valid while end() is unchanged (rows
  // are only appended or, in compaction, dropped; both change end() or the answer's ts range).
  struct SplitMemo {
    Timestamp ts = 0;
    RowId end = kNoRow;
    RowId row = 0;
  };
  mutable SplitMemo split_memo_;
};

// Inline: every action's table access hashes its keys and probes the primary index, tens of
// millions of times on a large run. `keys` holds num_keys_ values; inlined into a caller whose
// array has one, GCC cannot tell that keys[1] is read only when there are two.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
inline std::uint64_t Table::key_hash(const Value* keys) const {
  switch (num_keys_) {
    case 0:
      return 0;
    case 1:
      return support::mix64(keys[0]);
    case 2:
      if (((keys[0] | keys[1]) >> 32) == 0) return support::mix64(keys[0] | keys[1] << 32);
      break;
    default:
      break;
  }
  return hash_keys(keys, num_keys_);
}
#pragma GCC diagnostic pop

inline KeyIndex::Hit Table::find_hit(const Value* keys, std::uint64_t hash) const {
  return primary_.find(hash, exact_hash(keys), [&](RowId r) {
    const Value* candidate = row(r);
    for (std::uint32_t k = 0; k < num_keys_; ++k) {
      if (candidate[k] != keys[k]) return false;
    }
    return true;
  });
}

}  // namespace kiln::engine
