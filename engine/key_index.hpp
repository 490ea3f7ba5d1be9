// The primary index of a table: an open-addressing hash map from a row's keys to the one live
// row holding them. A slot keeps the keys' full 64-bit hash, the row id and, when it fits in
// 32 bits, the row's output. For most keys the hash is exact: Table::key_hash is a bijection of
// keys that pack into 64 bits (one key, or two keys below 2^32), so equal hashes mean equal keys
// and a lookup reads neither the row's keys nor its output: one memory access instead of two.
// Other keys are compared against the row. The hash also places the slot (its high bits pick
// the slot), so growing the map moves slots without reading a row to hash it again.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {

class KeyIndex {
 public:
  KeyIndex() { slots_.assign(16, Slot{}); }

  // Largest row id a slot can hold (the top bit marks exact hashes).
  static constexpr RowId kMaxRow = 0x7ffffffdu;

  // What find() learned: the row (kNoRow: none) and its output when the slot holds it.
  struct Hit {
    RowId row = kNoRow;
    bool has_output = false;
    Value output = 0;
  };

  // The row with this hash for which the keys match, or kNoRow. `exact`: the hash is exact for
  // the keys looked up, so a slot with the same exact hash holds them; otherwise
  // `same_keys(row)` compares them.
  template <class SameKeys>
  Hit find(std::uint64_t hash, bool exact, SameKeys&& same_keys) const {
    std::size_t mask = slots_.size() - 1;
    RowId want_exact = exact ? kExactBit : 0;
    for (std::size_t i = place(hash) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.row == kNoRow) return Hit{};
      if (s.hash != hash || s.row == kTombstone || (s.row & kExactBit) != want_exact) continue;
      RowId row = s.row & ~kExactBit;
      if (exact || same_keys(row)) {
        return Hit{row, s.output != kNoOutput, s.output};
      }
    }
  }

  // Hints for batched lookups: start loading the slot a hash lands in, then (once that is
  // cached) the row it holds, so lookups a few matches later do not wait on memory.
  void prefetch_slot(std::uint64_t hash) const {
    __builtin_prefetch(&slots_[place(hash) & (slots_.size() - 1)]);
  }
  // The row a find() of this hash will read, if it reads one: the first slot with this hash
  // within a cache line of probes whose keys or output are not in the slot. kNoRow otherwise.
  RowId peek(std::uint64_t hash) const {
    std::size_t mask = slots_.size() - 1;
    std::size_t i = place(hash) & mask;
    for (int probe = 0; probe < kPeekProbes; ++probe, i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.row == kNoRow) return kNoRow;
      if (s.hash == hash && s.row != kTombstone) {
        bool in_slot = (s.row & kExactBit) != 0 && s.output != kNoOutput;
        return in_slot ? kNoRow : s.row & ~kExactBit;
      }
    }
    return kNoRow;
  }

  // Adds a row (its keys must not be present); `exact` as for find().
  void insert(std::uint64_t hash, bool exact, RowId row, Value output) {
    KILN_ASSERT(row <= kMaxRow, "too many rows in one table");
    if ((used_ + 1) * 4 > slots_.size() * 3) rehash();
    std::size_t mask = slots_.size() - 1;
    std::size_t i = place(hash) & mask;
    while (slots_[i].row != kNoRow && slots_[i].row != kTombstone) i = (i + 1) & mask;
    if (slots_[i].row == kNoRow) ++used_;
    slots_[i] = Slot{hash, row | (exact ? kExactBit : 0),
                     output < kNoOutput ? static_cast<std::uint32_t>(output) : kNoOutput};
    ++live_;
  }

  void erase(std::uint64_t hash, RowId row) {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = place(hash) & mask; slots_[i].row != kNoRow; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.row != kTombstone && (s.row & ~kExactBit) == row) {
        s.row = kTombstone;
        --live_;
        return;
      }
    }
  }

  // After the table dropped its dead rows: every live entry's row becomes new_row[row], and an
  // entry whose row was dropped (new_row kNoRow) becomes a tombstone. A slot's place depends on
  // its hash alone, so entries stay where they are: no second array at the run's busiest
  // moment, and the rows rebuild writes back with the same keys take their tombstones again.
  // Inserts lay the map out afresh once tombstones and entries fill it (rehash).
  void renumber(const HugePageVector<RowId>& new_row) {
    for (Slot& s : slots_) {
      if (s.row == kNoRow || s.row == kTombstone) continue;
      RowId row = new_row[s.row & ~kExactBit];
      if (row == kNoRow) {
        s.row = kTombstone;
        --live_;
      } else {
        s.row = row | (s.row & kExactBit);
      }
    }
  }

  // Drops everything and sizes the map for `rows` entries.
  void clear(std::size_t rows) {
    std::size_t n = 16;
    while (n * 3 < rows * 4 + 4) n *= 2;
    slots_.assign(n, Slot{});
    used_ = live_ = 0;
  }

 private:
  static constexpr RowId kTombstone = kNoRow - 1;
  static constexpr RowId kExactBit = 0x80000000u;  // on a live slot's row: the hash is exact
  static constexpr std::uint32_t kNoOutput = 0xffffffffu;  // the output is read from the row
  static constexpr int kPeekProbes = 4;  // one cache line of slots
  struct Slot {
    std::uint64_t hash = 0;
    RowId row = kNoRow;
    std::uint32_t output = kNoOutput;
  };
  static std::size_t place(std::uint64_t hash) { return static_cast<std::size_t>(hash >> 32); }

  // Puts a live slot into the first free place of its probe sequence (no tombstones yet).
  void place_copy(const Slot& s) {
    std::size_t mask = slots_.size() - 1;
    std::size_t i = place(s.hash) & mask;
    while (slots_[i].row != kNoRow) i = (i + 1) & mask;
    slots_[i] = s;
    ++used_;
    ++live_;
  }

  void rehash() {
    HugePageVector<Slot> old = std::move(slots_);
    std::size_t n = old.size();
    if ((live_ + 1) * 2 > n) n *= 2;  // mostly live: grow; mostly tombstones: same size
    slots_.assign(n, Slot{});
    used_ = live_ = 0;
    for (const Slot& s : old) {
      if (s.row != kNoRow && s.row != kTombstone) place_copy(s);
    }
  }

  HugePageVector<Slot> slots_;
  std::size_t used_ = 0;  // live + tombstones
  std::size_t live_ = 0;
};

}  // namespace kiln::engine
