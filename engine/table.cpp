#include "engine/table.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

Table::Table(std::uint32_t num_keys) : num_keys_(num_keys) {
  KILN_ASSERT(num_keys + 1 <= kMaxColumns, "too many columns");
}

Table::Table(const Table& other)
    : num_keys_(other.num_keys_),
      cells_(other.cells_),
      timestamps_(other.timestamps_),
      flags_(other.flags_),
      origins_(other.origins_),
      live_(other.live_),
      primary_(other.primary_) {
  for (const auto& index : other.indexes_) {
    indexes_.push_back(std::make_unique<ColumnIndex>(*index));
    index_by_mask_[index->mask()] = indexes_.back().get();
  }
}

RowId Table::append(const Value* keys, std::uint64_t hash, Value output, Timestamp ts,
                    bool subsumed, OriginId origin) {
  RowId r = end();
  KILN_ASSERT(timestamps_.empty() || timestamps_.back() <= ts, "rows must be appended in time order");
  Value* cells = cells_.append_uninitialized(width());
  for (std::uint32_t k = 0; k < num_keys_; ++k) cells[k] = keys[k];
  cells[num_keys_] = output;
  timestamps_.push_back(ts);
  flags_.push_back(subsumed ? kSubsumed : 0);
  origins_.push_back(origin);
  ++live_;
  primary_.insert(hash, exact_hash(keys), r, output);
  return r;  // secondary indexes catch up in index()
}

void Table::kill(RowId r, std::uint64_t hash) {
  KILN_ASSERT(alive(r), "killing a dead row");
  KILN_ASSERT(horizon_ == kNoRow, "a row killed while searches see the table behind a horizon");
  flags_[r] |= kDead;
  --live_;
  primary_.erase(hash, r);
  for (auto& index : indexes_) {
    if (r < index->synced()) index->remove(r);
  }
}

RowId Table::find_first_row_at_or_after(Timestamp ts) const {
  auto it = std::lower_bound(timestamps_.begin(), timestamps_.end(), ts);
  return static_cast<RowId>(it - timestamps_.begin());
}

const ColumnIndex& Table::index(ColumnMask mask) {
  ColumnIndex* index;
  auto found = index_by_mask_.find(mask);
  if (found != index_by_mask_.end()) {
    index = found->second;
  } else {
    indexes_.push_back(std::make_unique<ColumnIndex>(mask, width()));
    index = indexes_.back().get();
    index->clear(visible_size());
    index_by_mask_[mask] = index;
  }
  index->sync(visible_end(), [&](RowId r) { return alive(r); },
              [&](RowId r) { return index->hash_row(row(r)); });
  return *index;
}

void Table::compact_if_sparse() {
  if (sparse_after_killing(0)) compact();
}

void Table::kill_and_compact(const HugePageVector<RowId>& rows) {
  for (RowId r : rows) {
    KILN_ASSERT(alive(r), "killing a dead row");
    flags_[r] |= kDead;
  }
  live_ -= rows.size();
  compact();
}

void Table::compact() {
  KILN_ASSERT(horizon_ == kNoRow, "a table compacted while searches see it behind a horizon");
  std::size_t w = width();
  HugePageVector<RowId> new_row;
  new_row.resize(timestamps_.size(), kNoRow);
  std::size_t out = 0;
  for (std::size_t r = 0; r < timestamps_.size(); ++r) {
    if (flags_[r] & kDead) continue;
    if (out != r) {
      std::copy_n(&cells_[r * w], w, &cells_[out * w]);
      timestamps_[out] = timestamps_[r];
      flags_[out] = flags_[r];
      origins_[out] = origins_[r];
    }
    new_row[r] = static_cast<RowId>(out);
    ++out;
  }
  cells_.resize(out * w);
  split_memo_ = SplitMemo{};
  timestamps_.resize(out);
  flags_.resize(out);
  origins_.resize(out);
  primary_.renumber(new_row);
  // The other indexes link the rows again when a search next asks for them (index()): after
  // the last iteration of a run, or for an index no later rule uses, that work is never done.
  for (auto& index : indexes_) index->clear(live_);
}

}  // namespace kiln::engine
