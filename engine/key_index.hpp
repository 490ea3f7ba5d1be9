// The primary index of a table: an open-addressing hash map from a row's keys to the one live
// row holding them. Slots keep a hash tag next to the row id, so a lookup usually touches one
// slot and one row. The tag also places the slot (its low bits are the slot number), so growing
// the map moves slots without reading a row to hash it again.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"

namespace kiln::engine {

class KeyIndex {
 public:
  KeyIndex() { slots_.assign(16, Slot{}); }

  // The row with this hash for which `same_keys(row)` holds, or kNoRow.
  template <class SameKeys>
  RowId find(std::uint64_t hash, SameKeys&& same_keys) const {
    std::size_t mask = slots_.size() - 1;
    std::uint32_t tag = tag_of(hash);
    for (std::size_t i = tag & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.row == kNoRow) return kNoRow;
      if (s.tag == tag && s.row != kTombstone && same_keys(s.row)) return s.row;
    }
  }

  // Hints for batched lookups: start loading the slot a hash lands in, then (once that is
  // cached) the row it holds, so lookups a few matches later do not wait on memory.
  void prefetch_slot(std::uint64_t hash) const {
    __builtin_prefetch(&slots_[tag_of(hash) & (slots_.size() - 1)]);
  }
  // The row a find() of this hash most likely ends at: the first slot with its tag within a
  // few probes (a tag can collide; then the hint is wrong and costs nothing but the load).
  RowId peek(std::uint64_t hash) const {
    std::size_t mask = slots_.size() - 1;
    std::uint32_t tag = tag_of(hash);
    std::size_t i = tag & mask;
    for (int probe = 0; probe < kPeekProbes; ++probe, i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.row == kNoRow) return kNoRow;
      if (s.tag == tag && s.row != kTombstone) return s.row;
    }
    return kNoRow;
  }

  // Adds a row (its keys must not be present).
  void insert(std::uint64_t hash, RowId row) {
    if ((used_ + 1) * 4 > slots_.size() * 3) rehash();
    std::size_t mask = slots_.size() - 1;
    std::size_t i = tag_of(hash) & mask;
    while (slots_[i].row != kNoRow && slots_[i].row != kTombstone) i = (i + 1) & mask;
    if (slots_[i].row == kNoRow) ++used_;
    slots_[i] = Slot{tag_of(hash), row};
    ++live_;
  }

  void erase(std::uint64_t hash, RowId row) {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t i = tag_of(hash) & mask; slots_[i].row != kNoRow; i = (i + 1) & mask) {
      if (slots_[i].row == row) {
        slots_[i].row = kTombstone;
        --live_;
        return;
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
  static constexpr int kPeekProbes = 8;  // one cache line of slots
  struct Slot {
    std::uint32_t tag = 0;
    RowId row = kNoRow;
  };
  static std::uint32_t tag_of(std::uint64_t hash) { return static_cast<std::uint32_t>(hash >> 32); }

  void rehash() {
    HugePageVector<Slot> old = std::move(slots_);
    std::size_t n = old.size();
    if ((live_ + 1) * 2 > n) n *= 2;  // mostly live: grow; mostly tombstones: same size
    slots_.assign(n, Slot{});
    used_ = live_ = 0;
    std::size_t mask = n - 1;
    for (const Slot& s : old) {
      if (s.row == kNoRow || s.row == kTombstone) continue;
      std::size_t i = s.tag & mask;
      while (slots_[i].row != kNoRow) i = (i + 1) & mask;
      slots_[i] = s;
      ++used_;
      ++live_;
    }
  }

  HugePageVector<Slot> slots_;
  std::size_t used_ = 0;  // live + tombstones
  std::size_t live_ = 0;
};

}  // namespace kiln::engine
