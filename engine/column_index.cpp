#include "engine/column_index.hpp"

#include <algorithm>
#include <bit>

#include "support/hash.hpp"

namespace kiln::engine {

ColumnIndex::ColumnIndex(ColumnMask mask, std::uint32_t width) : mask_(mask) {
  for (std::uint32_t c = 0; c < width; ++c) {
    if (mask & (1u << c)) columns_.push_back(c);
  }
  slots_.assign(16, Slot{});
  slots_capacity_ = slots_.size();
}

void ColumnIndex::clear(std::size_t row_capacity) {
  std::size_t slots = 16;
  while (slots < row_capacity) slots *= 2;
  slots_.assign(slots, Slot{});
  slots_capacity_ = slots_.size();
  links_.clear();
  entries_ = 0;
  occupied_ = 0;
  synced_ = 0;
}

// Lays out every chain again for the current number of slots (after growth).
void ColumnIndex::relink_all(RowId end) {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  slots_capacity_ = slots_.size();
  occupied_ = 0;
  for (RowId r = 0; r < end; ++r) {
    if (links_[r].hash != 0) link(r);
  }
}

// Appends the row at the tail of its chain, so chains list rows oldest first.
void ColumnIndex::link(RowId row) {
  Slot& slot = slots_[links_[row].hash & (slots_.size() - 1)];
  Link& l = links_[row];
  l.next = kNoRow;
  l.prev = slot.tail;
  if (slot.tail == kNoRow) {
    slot.head = row;
    ++occupied_;
  } else {
    links_[slot.tail].next = row;
  }
  slot.tail = row;
}

void ColumnIndex::remove(RowId row) {
  if (row >= links_.size() || links_[row].hash == 0) return;
  Slot& slot = slots_[links_[row].hash & (slots_.size() - 1)];
  Link& l = links_[row];
  (l.prev == kNoRow ? slot.head : links_[l.prev].next) = l.next;
  (l.next == kNoRow ? slot.tail : links_[l.next].prev) = l.prev;
  if (slot.head == kNoRow) --occupied_;
  l.hash = 0;
  --entries_;
}

void ColumnIndex::add(RowId row, std::uint64_t hash) {
  if (links_.size() <= row) links_.resize(row + 1);
  if (++entries_ > slots_.size()) {
    slots_.resize(slots_.size() * 2);
    relink_all(row);  // before this row is linked, so it is linked once
  }
  links_[row].hash = hash | kPresent;
  link(row);
  synced_ = std::max(synced_, row + 1);
}

double ColumnIndex::rows_per_key_of_a_row() const {
  if (sampled_.synced == synced_ && sampled_.entries == entries_) return sampled_.rows;
  // Rows at hashed (deterministic) positions, so a regular layout of the rows (every other
  // row on one key) cannot line up with the samples; each one's chain is walked for rows
  // with its hash, up to a cap that bounds the cost on a key held by most of the table.
  constexpr std::uint64_t kSamples = 32;
  constexpr std::size_t kMaxWalk = 256;
  std::size_t end = std::min<std::size_t>(synced_, links_.size());
  double total = 0;
  std::size_t taken = 0;
  for (std::uint64_t k = 0; end != 0 && k < kSamples; ++k) {
    std::uint64_t hash = links_[support::mix64(k) % end].hash;
    if (hash == 0) continue;  // dead or not indexed
    std::size_t same = 0, walked = 0;
    for (RowId p = first(hash); p != kNoRow && walked < kMaxWalk; p = links_[p].next, ++walked) {
      same += links_[p].hash == hash;
    }
    total += double(same);
    ++taken;
  }
  double rows = taken ? total / double(taken) : rows_per_key();
  sampled_ = {synced_, entries_, rows};
  return rows;
}

}  // namespace kiln::engine
