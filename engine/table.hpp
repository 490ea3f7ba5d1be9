// A function's rows: `keys -> output`, each with a write timestamp and flags, plus hash indexes
// on column subsets. Rows are append-only; an update kills the old row and appends a new one,
// so timestamps grow along the row vector and "rows newer than t" is a suffix.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "engine/value.hpp"

namespace kiln::engine {

// Bit i set = column i is bound (columns are keys..., then the output).
using ColumnMask = std::uint32_t;
inline constexpr std::uint32_t kMaxColumns = 32;

// Rows chained by the hash of the columns in one mask, oldest first. Chains are doubly linked
// so a killed row leaves its chain at once and lookups never wade through dead rows.
class ColumnIndex {
 public:
  ColumnIndex(ColumnMask mask, std::uint32_t width);

  ColumnMask mask() const { return mask_; }
  const std::vector<std::uint32_t>& columns() const { return columns_; }

  std::uint64_t hash_row(const Value* row) const;
  // `key` holds the values of columns() in order.
  std::uint64_t hash_key(const Value* key) const;

  void add(RowId row, std::uint64_t hash, std::size_t total_rows);
  void remove(RowId row);
  void clear(std::size_t row_capacity);

  RowId first(std::uint64_t hash) const { return heads_[hash & (heads_.size() - 1)]; }
  RowId next(RowId row) const { return next_[row]; }
  // True if the row was indexed with this hash: a cheap filter before comparing columns.
  bool same_hash(RowId row, std::uint64_t hash) const { return hashes_[row] == (hash | kPresent); }
  std::size_t entries() const { return entries_; }

 private:
  void grow();
  void link(RowId row);

  ColumnMask mask_;
  std::vector<std::uint32_t> columns_;
  std::vector<RowId> heads_;
  std::vector<RowId> tails_;
  std::vector<RowId> next_;
  std::vector<RowId> prev_;
  static constexpr std::uint64_t kPresent = std::uint64_t{1} << 63;
  std::vector<std::uint64_t> hashes_;  // per row, | kPresent; 0 = not indexed
  std::size_t entries_ = 0;
};

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
  // Live rows, including subsumed ones.
  std::size_t size() const { return live_; }
  // All row slots ever appended since the last compaction (live or dead).
  RowId end() const { return static_cast<RowId>(timestamps_.size()); }

  const Value* row(RowId r) const { return &cells_[static_cast<std::size_t>(r) * width()]; }
  Value output(RowId r) const { return row(r)[num_keys_]; }
  Timestamp timestamp(RowId r) const { return timestamps_[r]; }
  bool alive(RowId r) const { return (flags_[r] & kDead) == 0; }
  bool subsumed(RowId r) const { return (flags_[r] & kSubsumed) != 0; }

  // The live row with these keys, or kNoRow.
  RowId find(const Value* keys) const;
  RowId append(const Value* keys, Value output, Timestamp ts, bool subsumed);
  void kill(RowId r);
  void set_subsumed(RowId r) { flags_[r] |= kSubsumed; }

  // First row whose timestamp is >= ts (rows are in timestamp order).
  RowId first_row_at_or_after(Timestamp ts) const;

  // The index on `mask`, built on first use and kept up to date by append().
  const ColumnIndex& index(ColumnMask mask);

  // Drops dead rows when they outnumber live ones. Row ids change: never call during a search.
  void compact_if_sparse();

 private:
  static constexpr std::uint8_t kDead = 1;
  static constexpr std::uint8_t kSubsumed = 2;

  void rebuild_indexes();

  std::uint32_t num_keys_;
  std::vector<Value> cells_;
  std::vector<Timestamp> timestamps_;
  std::vector<std::uint8_t> flags_;
  std::size_t live_ = 0;
  // Primary index on all keys is indexes_[0]; others are created on demand.
  std::vector<std::unique_ptr<ColumnIndex>> indexes_;
  std::map<ColumnMask, ColumnIndex*> index_by_mask_;
};

}  // namespace kiln::engine
