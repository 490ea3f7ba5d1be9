// A hash index on a subset of a table's columns: rows with equal values in those columns are
// chained together, oldest first (egglog's iteration order). Chains are doubly linked so a killed
// row leaves at once and lookups never wade through dead rows.
#pragma once

#include <cstdint>
#include <vector>

#include <bit>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

// Bit i set = column i is bound (columns are keys..., then the output).
using ColumnMask = std::uint32_t;
inline constexpr std::uint32_t kMaxColumns = 32;

// Hash of the values of `columns` (a row, or a key holding just those values in order). One
// multiply per column (the rotation keeps earlier columns' bits in play, and the column number
// makes equal values in other positions hash apart), one full mix at the end. Inline: keys are
// hashed several times per match applied.
inline std::uint64_t hash_columns(const Value* values, const std::uint32_t* columns,
                                  std::size_t count, bool values_are_key) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ count;
  for (std::size_t i = 0; i < count; ++i) {
    Value v = values_are_key ? values[i] : values[columns[i]];
    h = (std::rotl(h, 26) ^ v ^ (std::uint64_t{columns[i]} << 56)) * 0x9fb21c651e98df25ULL;
  }
  return support::mix64(h);
}

// hash_columns of a table's keys: the columns 0..count-1, without reading a column list.
inline std::uint64_t hash_keys(const Value* keys, std::size_t count) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ count;
  for (std::size_t i = 0; i < count; ++i) {
    h = (std::rotl(h, 26) ^ keys[i] ^ (std::uint64_t{i} << 56)) * 0x9fb21c651e98df25ULL;
  }
  return support::mix64(h);
}

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

  // Rows below this are indexed (if alive); the table links newer rows in batches, just before
  // a search needs them, so appends do not pay for indexes no query is using right now.
  RowId synced() const { return synced_; }
  // Links rows [synced(), end) for which alive(row) holds; hash_row(row) gives each row's hash.
  template <class Alive, class HashRow>
  void sync(RowId end, Alive&& alive, HashRow&& hash_row) {
    RowId begin = synced_;
    if (begin >= end) return;
    if (links_.size() < end) links_.resize(end);
    std::size_t added = 0;
    for (RowId r = begin; r < end; ++r) {
      if (!alive(r)) continue;
      links_[r].hash = hash_row(r) | kPresent;
      ++added;
    }
    entries_ += added;
    while (entries_ > slots_.size()) slots_.resize(slots_.size() * 2);  // relinked below
    if (slots_.size() != slots_capacity_) {
      relink_all(end);
    } else {
      // Independent inserts: load each slot a few rows ahead so the misses overlap.
      constexpr RowId kAhead = 8;
      for (RowId r = begin; r < end; ++r) {
        if (r + kAhead < end && links_[r + kAhead].hash != 0) {
          __builtin_prefetch(&slots_[links_[r + kAhead].hash & (slots_.size() - 1)]);
        }
        if (links_[r].hash != 0) link(r);
      }
    }
    synced_ = end;
  }

  RowId first(std::uint64_t hash) const { return slots_[hash & (slots_.size() - 1)].head; }
  RowId next(RowId row) const { return links_[row].next; }
  // The chain's newest row and a row's predecessor: a walk over the rows at or after some row id
  // starts from the tail, since chains list rows in increasing id order.
  RowId last(std::uint64_t hash) const { return slots_[hash & (slots_.size() - 1)].tail; }
  RowId prev(RowId row) const { return links_[row].prev; }
  // True if the row was indexed with this hash: a cheap filter before comparing columns.
  bool same_hash(RowId row, std::uint64_t hash) const { return links_[row].hash == (hash | kPresent); }
  // Average rows per lookup (rows / non-empty chains): the planner's fan-out estimate.
  double rows_per_key() const { return occupied_ ? double(entries_) / double(occupied_) : 0.0; }
  // Average rows sharing the key of a row (the chain lengths weighted by the rows in them),
  // estimated from rows spread evenly over the table: the fan-out of a lookup whose key is read
  // from a row of the same columns. Where a few e-classes own most rows it is far above
  // rows_per_key(), which counts every key once however many rows hold it.
  double rows_per_key_of_a_row() const;

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
  void link(RowId row);
  void relink_all(RowId end);

  ColumnMask mask_;
  std::vector<std::uint32_t> columns_;
  HugePageVector<Slot> slots_;
  HugePageVector<Link> links_;  // per row
  std::size_t entries_ = 0;
  std::size_t occupied_ = 0;  // non-empty chains
  std::size_t slots_capacity_ = 0;  // slots_.size() when the chains were last laid out
  RowId synced_ = 0;
  // rows_per_key_of_a_row() as computed for the index at (synced_, entries_).
  struct Sampled {
    RowId synced = kNoRow;
    std::size_t entries = 0;
    double rows = 0;
  };
  mutable Sampled sampled_;
};

}  // namespace kiln::engine
