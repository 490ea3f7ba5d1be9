#include "engine/table.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

ColumnIndex::ColumnIndex(ColumnMask mask, std::uint32_t width) : mask_(mask) {
  for (std::uint32_t c = 0; c < width; ++c) {
    if (mask & (1u << c)) columns_.push_back(c);
  }
  heads_.assign(16, kNoRow);
  tails_.assign(16, kNoRow);
}

std::uint64_t ColumnIndex::hash_row(const Value* row) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::uint32_t c : columns_) h = support::mix64(h ^ row[c]) + c;
  return h;
}

std::uint64_t ColumnIndex::hash_key(const Value* key) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i < columns_.size(); ++i) h = support::mix64(h ^ key[i]) + columns_[i];
  return h;
}

void ColumnIndex::clear(std::size_t row_capacity) {
  std::size_t slots = 16;
  while (slots < row_capacity) slots *= 2;
  heads_.assign(slots, kNoRow);
  tails_.assign(slots, kNoRow);
  next_.clear();
  prev_.clear();
  hashes_.clear();
  entries_ = 0;
}

void ColumnIndex::grow() {
  heads_.assign(heads_.size() * 2, kNoRow);
  tails_.assign(heads_.size(), kNoRow);
  for (RowId r = 0; r < next_.size(); ++r) {
    if (hashes_[r] != 0) link(r);  // 0: never added (a dead row skipped at build time)
  }
}

// Appends the row at the tail of its chain, so chains list rows oldest first (as egglog does).
void ColumnIndex::link(RowId row) {
  std::size_t slot = hashes_[row] & (heads_.size() - 1);
  next_[row] = kNoRow;
  prev_[row] = tails_[slot];
  if (tails_[slot] == kNoRow) {
    heads_[slot] = row;
  } else {
    next_[tails_[slot]] = row;
  }
  tails_[slot] = row;
}

void ColumnIndex::remove(RowId row) {
  if (row >= hashes_.size() || hashes_[row] == 0) return;
  std::size_t slot = hashes_[row] & (heads_.size() - 1);
  RowId before = prev_[row];
  RowId after = next_[row];
  (before == kNoRow ? heads_[slot] : next_[before]) = after;
  (after == kNoRow ? tails_[slot] : prev_[after]) = before;
  hashes_[row] = 0;
  --entries_;
}

void ColumnIndex::add(RowId row, std::uint64_t hash, std::size_t total_rows) {
  hash |= kPresent;
  if (next_.size() <= row) {
    next_.resize(row + 1, kNoRow);
    prev_.resize(row + 1, kNoRow);
    hashes_.resize(row + 1, 0);
  }
  if (++entries_ > heads_.size()) grow();  // before this row is chained, so it is chained once
  hashes_[row] = hash;
  link(row);
}

Table::Table(std::uint32_t num_keys) : num_keys_(num_keys) {
  KILN_ASSERT(num_keys + 1 <= kMaxColumns, "too many columns");
  ColumnMask primary = (num_keys == 0) ? 0 : ((1u << num_keys) - 1);
  indexes_.push_back(std::make_unique<ColumnIndex>(primary, width()));
  index_by_mask_[primary] = indexes_.back().get();
}

Table::Table(const Table& other)
    : num_keys_(other.num_keys_),
      cells_(other.cells_),
      timestamps_(other.timestamps_),
      flags_(other.flags_),
      live_(other.live_) {
  for (const auto& index : other.indexes_) {
    indexes_.push_back(std::make_unique<ColumnIndex>(*index));
    index_by_mask_[index->mask()] = indexes_.back().get();
  }
}

RowId Table::find(const Value* keys) const {
  const ColumnIndex& primary = *indexes_[0];
  // The primary index hashes key columns 0..k-1 in order, so the keys are the search key.
  std::uint64_t h = primary.hash_key(keys);
  for (RowId r = primary.first(h); r != kNoRow; r = primary.next(r)) {
    if (!primary.same_hash(r, h) || !alive(r)) continue;
    const Value* candidate = row(r);
    std::uint32_t k = 0;
    while (k < num_keys_ && candidate[k] == keys[k]) ++k;
    if (k == num_keys_) return r;
  }
  return kNoRow;
}

RowId Table::append(const Value* keys, Value output, Timestamp ts, bool subsumed) {
  RowId r = end();
  KILN_ASSERT(timestamps_.empty() || timestamps_.back() <= ts, "rows must be appended in time order");
  cells_.insert(cells_.end(), keys, keys + num_keys_);
  cells_.push_back(output);
  timestamps_.push_back(ts);
  flags_.push_back(subsumed ? kSubsumed : 0);
  ++live_;
  const Value* values = row(r);
  for (auto& index : indexes_) index->add(r, index->hash_row(values), end());
  return r;
}

void Table::kill(RowId r) {
  KILN_ASSERT(alive(r), "killing a dead row");
  flags_[r] |= kDead;
  --live_;
  for (auto& index : indexes_) index->remove(r);
}

RowId Table::first_row_at_or_after(Timestamp ts) const {
  auto it = std::lower_bound(timestamps_.begin(), timestamps_.end(), ts);
  return static_cast<RowId>(it - timestamps_.begin());
}

const ColumnIndex& Table::index(ColumnMask mask) {
  auto found = index_by_mask_.find(mask);
  if (found != index_by_mask_.end()) return *found->second;
  auto index = std::make_unique<ColumnIndex>(mask, width());
  index->clear(live_);
  for (RowId r = 0; r < end(); ++r) {
    if (alive(r)) index->add(r, index->hash_row(row(r)), end());
  }
  indexes_.push_back(std::move(index));
  index_by_mask_[mask] = indexes_.back().get();
  return *indexes_.back();
}

void Table::compact_if_sparse() {
  std::size_t dead = timestamps_.size() - live_;
  if (dead < 1024 || dead < live_) return;
  std::size_t w = width();
  std::size_t out = 0;
  for (std::size_t r = 0; r < timestamps_.size(); ++r) {
    if (flags_[r] & kDead) continue;
    if (out != r) {
      std::copy_n(&cells_[r * w], w, &cells_[out * w]);
      timestamps_[out] = timestamps_[r];
      flags_[out] = flags_[r];
    }
    ++out;
  }
  cells_.resize(out * w);
  timestamps_.resize(out);
  flags_.resize(out);
  rebuild_indexes();
}

void Table::rebuild_indexes() {
  for (auto& index : indexes_) {
    index->clear(live_);
    for (RowId r = 0; r < end(); ++r) index->add(r, index->hash_row(row(r)), end());
  }
}

}  // namespace kiln::engine
