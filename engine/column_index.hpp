// A hash index on a subset of a table's columns: rows with equal values in those columns are
// chained together, oldest first (egglog's iteration order). Chains are doubly linked so a killed
// row leaves at once and lookups never wade through dead rows.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/value.hpp"

namespace kiln::engine {

// Bit i set = column i is bound (columns are keys..., then the output).
using ColumnMask = std::uint32_t;
inline constexpr std::uint32_t kMaxColumns = 32;

// Hash of the values of `columns` (a row, or a key holding just those values in order).
std::uint64_t hash_columns(const Value* values, const std::uint32_t* columns, std::size_t count,
                           bool values_are_key);

class ColumnIndex {
 public:
  ColumnIndex(ColumnMask mask, std::uint32_t width);

  ColumnMask mask() const { return mask_; }
  const std::vector<std::uint32_t>& columns() const { return columns_; }

  std::uint64_t hash_row(const Value* row) const {
    return hash_columns(row, columns_.data(), columns_.size(), false);
  }
  // `key` holds the values of columns() in order.
  std::uint64_t hash_key(const Value* key) const {
    return hash_columns(key, columns_.data(), columns_.size(), true);
  }

  void add(RowId row, std::uint64_t hash);
  void remove(RowId row);
  void clear(std::size_t row_capacity);

  RowId first(std::uint64_t hash) const { return slots_[hash & (slots_.size() - 1)].head; }
  RowId next(RowId row) const { return links_[row].next; }
  // True if the row was indexed with this hash: a cheap filter before comparing columns.
  bool same_hash(RowId row, std::uint64_t hash) const { return links_[row].hash == (hash | kPresent); }
  // Average rows per lookup (rows / non-empty chains): the planner's fan-out estimate.
  double rows_per_key() const { return occupied_ ? double(entries_) / double(occupied_) : 0.0; }

 private:
  static constexpr std::uint64_t kPresent = std::uint64_t{1} << 63;
  struct Link {
    std::uint64_t hash = 0;  // | kPresent while indexed; 0 = not indexed
    RowId next = kNoRow;
    RowId prev = kNoRow;
  };
  struct Slot {
    RowId head = kNoRow;
    RowId tail = kNoRow;
  };
  void grow();
  void link(RowId row);

  ColumnMask mask_;
  std::vector<std::uint32_t> columns_;
  std::vector<Slot> slots_;
  std::vector<Link> links_;  // per row
  std::size_t entries_ = 0;
  std::size_t occupied_ = 0;  // non-empty chains
};

}  // namespace kiln::engine
