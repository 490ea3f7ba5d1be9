#include "engine/egraph.hpp"

#include <algorithm>
#include <exception>

#include "engine/container.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {

EGraph::EGraph() : primitives_(std::make_shared<PrimitiveTable>()) {}

SortId EGraph::add_sort(Sort sort) {
  KILN_ASSERT(!sort_by_name_.count(sort.name), "duplicate sort " + sort.name);
  SortId id = static_cast<SortId>(sorts_.size());
  sort_by_name_[sort.name] = id;
  sort.container = dynamic_cast<const ContainerSort*>(sort.primitive.get());
  sort.holds_eclasses = sort.primitive && sort.primitive->holds_eclasses();
  sorts_.push_back(std::move(sort));
  return id;
}

std::optional<SortId> EGraph::find_sort(const std::string& name) const {
  auto found = sort_by_name_.find(name);
  if (found == sort_by_name_.end()) return std::nullopt;
  return found->second;
}

FunctionId EGraph::add_function(FunctionDecl decl) {
  KILN_ASSERT(!function_by_name_.count(decl.name), "duplicate function " + decl.name);
  if (decl.inputs.size() + 1 > kMaxColumns) {
    throw support::UserError("function '" + decl.name + "' has more than " +
                             std::to_string(kMaxColumns - 1) + " arguments");
  }
  FunctionId id = static_cast<FunctionId>(functions_.size());
  function_by_name_[decl.name] = id;
  std::vector<SortId> column_sorts = decl.inputs;
  column_sorts.push_back(decl.output);
  std::vector<std::uint8_t> eq_columns;
  for (SortId s : column_sorts) {
    eq_columns.push_back(sorts_[s].is_eq ? kClassColumn
                                         : (sorts_[s].holds_eclasses ? kContainerColumn : kPlainColumn));
  }
  bool any_eq = std::find_if(eq_columns.begin(), eq_columns.end(),
                             [](std::uint8_t k) { return k != kPlainColumn; }) != eq_columns.end();
  auto num_keys = static_cast<std::uint32_t>(decl.inputs.size());
  functions_.push_back(FunctionEntry{std::move(decl), Table(num_keys), std::move(eq_columns),
                                     std::move(column_sorts), any_eq});
  return id;
}

std::optional<FunctionId> EGraph::find_function(const std::string& name) const {
  auto found = function_by_name_.find(name);
  if (found == function_by_name_.end()) return std::nullopt;
  return found->second;
}

bool EGraph::unite(Value a, Value b) {
  if (union_find_.find(a) == union_find_.find(b)) return false;
  union_find_.unite(a, b);
  ++version_;
  return true;
}

RowId EGraph::find_row(const FunctionEntry& f, const Value* keys_in, Value* keys,
                       std::uint64_t* hash) {
  std::size_t n = f.decl.inputs.size();
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = canonical_cell(f, i, keys_in[i]);
  }
  std::uint64_t h = f.table.key_hash(keys);
  if (hash) *hash = h;
  return f.table.find(keys, h);
}

Value EGraph::lookup_or_insert(FunctionId id, const Value* keys_in) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  std::size_t n = f.decl.inputs.size();
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = canonical_cell(f, i, keys_in[i]);
  }
  std::uint64_t hash = f.table.key_hash(keys);
  Value output;
  if (f.table.find_output(keys, hash, &output) != kNoRow) return canonical(f.decl.output, output);
  Value fresh = make_class();
  f.table.append(keys, hash, fresh, now_, false, current_origin_);
  ++version_;
  return fresh;
}

void EGraph::construct_into(FunctionId id, const Value* keys_in, Value eclass) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  std::size_t n = f.decl.inputs.size();
  for (std::size_t i = 0; i < n; ++i) keys[i] = canonical_cell(f, i, keys_in[i]);
  std::uint64_t hash = f.table.key_hash(keys);
  Value output;
  if (f.table.find_output(keys, hash, &output) != kNoRow) {
    unite(output, eclass);
    return;
  }
  f.table.append(keys, hash, canonical(f.decl.output, eclass), now_, false, current_origin_);
  ++version_;
}

std::optional<Value> EGraph::lookup(FunctionId id, const Value* keys_in) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  std::size_t n = f.decl.inputs.size();
  for (std::size_t i = 0; i < n; ++i) keys[i] = canonical_cell(f, i, keys_in[i]);
  Value output;
  if (f.table.find_output(keys, f.table.key_hash(keys), &output) == kNoRow) return std::nullopt;
  return canonical(f.decl.output, output);
}

void EGraph::write_row(FunctionEntry& f, RowId r, const Value* keys, std::uint64_t hash,
                       Value output, bool subsumed, OriginId origin) {
  if (r == kNoRow) {
    f.table.append(keys, hash, output, now_, subsumed, origin);
    ++version_;
    return;
  }
  if (subsumed && !f.table.subsumed(r)) {
    f.table.set_subsumed(r);
    ++version_;
  }
  Value old_value = canonical(f.decl.output, f.table.output(r));
  // A custom merge runs even on equal values: `(+ old new)` accumulates.
  if (old_value == output && f.decl.merge != MergeKind::Custom) return;
  switch (f.decl.merge) {
    case MergeKind::Union:
      unite(old_value, output);
      return;
    case MergeKind::NoMerge:
      throw support::RuntimeFailure("conflicting outputs for function '" + f.decl.name +
                               "' (it was declared :no-merge)");
    case MergeKind::Custom: {
      Value merged = canonical(f.decl.output, f.decl.merge_fn(*this, old_value, output));
      if (merged == old_value) return;
      bool was_subsumed = f.table.subsumed(r);
      OriginId was_origin = f.table.origin(r);
      f.table.kill(r);
      f.table.append(keys, hash, merged, now_, was_subsumed, was_origin);
      ++version_;
      return;
    }
  }
}

void EGraph::set(FunctionId id, const Value* keys_in, Value output) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  std::uint64_t hash = 0;
  RowId r = find_row(f, keys_in, keys, &hash);
  write_row(f, r, keys, hash, canonical(f.decl.output, output), false, current_origin_);
}

bool EGraph::remove(FunctionId id, const Value* keys_in) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  RowId r = find_row(f, keys_in, keys);
  if (r == kNoRow) return false;
  f.table.kill(r);
  ++version_;
  return true;
}

bool EGraph::subsume(FunctionId id, const Value* keys_in) {
  FunctionEntry& f = functions_[id];
  Value keys[kMaxColumns];
  RowId r = find_row(f, keys_in, keys);
  if (r == kNoRow) return false;
  if (!f.table.subsumed(r)) {
    f.table.set_subsumed(r);
    ++version_;
  }
  return true;
}

// One sweep over every table: rows mentioning a non-canonical id are re-written canonically.
// Returns true if the sweep merged classes (so another sweep is needed).
Value EGraph::canonical_container(const ContainerSort& sort, Value v) {
  const std::vector<Value>& items = sort.items(v);
  std::size_t i = 0;
  for (; i < items.size(); ++i) {
    if (canonical(sort.item_sort(items, i), items[i]) != items[i]) break;
  }
  if (i == items.size()) return v;
  std::vector<Value> fresh(items.begin(), items.end());
  for (; i < fresh.size(); ++i) fresh[i] = canonical(sort.item_sort(items, i), fresh[i]);
  return sort.make(std::move(fresh));
}

bool EGraph::rebuild_pass() {
  std::uint64_t unions_before = union_find_.unions();
  HugePageVector<RowId>& stale = scratch_.stale;
  HugePageVector<std::uint64_t>& hashes = scratch_.hashes;
  constexpr std::size_t kSlotAhead = 16, kRowAhead = 8;
  for (FunctionEntry& f : functions_) {
    if (!f.has_eq_columns) continue;
    Table& t = f.table;
    std::uint32_t width = t.width();
    stale.clear();
    for (RowId r = 0, end = t.end(); r < end; ++r) {
      if (!t.alive(r)) continue;
      const Value* row = t.row(r);
      for (std::uint32_t c = 0; c < width; ++c) {
        std::uint8_t kind = f.eq_columns[c];
        if (kind == kPlainColumn) continue;
        if (kind == kClassColumn ? !union_find_.is_root(row[c])
                                 : canonical(f.column_sorts[c], row[c]) != row[c]) {
          stale.push_back(r);
          break;
        }
      }
    }
    if (stale.empty()) continue;
    // Kill all stale rows first so a re-written row never merges into a stale one. A killed
    // row keeps its cells, subsumed flag and origin until compaction (after the last pass),
    // so the re-writes below read them in place: no copy of the stale rows is made.
    std::size_t n = stale.size();
    hashes.resize(n);
    // Unless the kills make the table sparse: then it is compacted at once, which drops the
    // stale rows without unlinking each from the indexes, and the re-writes read them from a
    // copy. The live rows keep their order, so the table ends as a compaction after the pass
    // would leave it.
    bool moved_out = t.sparse_after_killing(n);
    if (moved_out) {
      scratch_.cells.resize(n * width);
      scratch_.subsumed.resize(n);
      scratch_.origins.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::copy_n(t.row(stale[i]), width, &scratch_.cells[i * width]);
        scratch_.subsumed[i] = t.subsumed(stale[i]);
        scratch_.origins[i] = t.origin(stale[i]);
      }
      t.kill_and_compact(stale);
    } else {
      for (std::size_t i = 0; i < n; ++i) hashes[i] = t.key_hash(t.row(stale[i]));
      // The kills are independent: each one's index slot is loaded a few rows ahead, so the
      // cache misses of several kills overlap.
      for (std::size_t i = 0; i < n; ++i) {
        if (i + kSlotAhead < n) t.prefetch_slot_of(hashes[i + kSlotAhead]);
        t.kill(stale[i], hashes[i]);
      }
    }
    ++version_;
    auto stale_row = [&](std::size_t i) {
      return moved_out ? &scratch_.cells[i * width] : t.row(stale[i]);
    };
    // The same for the re-inserts: the slot, then the row, of the canonical keys of a row a
    // few rows ahead. Merges in between may change those keys: a prefetch is only a hint.
    // Containers are left out: canonicalizing one ahead would intern new values out of order.
    bool look_ahead = std::find(f.eq_columns.begin(), f.eq_columns.end(), kContainerColumn) ==
                      f.eq_columns.end();
    auto hash_ahead = [&](std::size_t i) {
      Value keys[kMaxColumns];
      const Value* row = stale_row(i);
      for (std::uint32_t c = 0; c + 1 < width; ++c) keys[c] = canonical_cell(f, c, row[c]);
      return t.key_hash(keys);
    };
    // Every row goes back even if one merge fails (a :no-merge conflict): the failing row
    // yields to the row already there, the error is raised once the table is whole again.
    std::exception_ptr failure;
    for (std::size_t i = 0; look_ahead && i < n && i < kSlotAhead; ++i) hashes[i] = hash_ahead(i);
    for (std::size_t i = 0; i < n; ++i) {
      if (look_ahead && i + kSlotAhead < n) {
        hashes[i + kSlotAhead] = hash_ahead(i + kSlotAhead);
        t.prefetch_slot_of(hashes[i + kSlotAhead]);
      }
      if (look_ahead && i + kRowAhead < n) t.prefetch_row_of(hashes[i + kRowAhead]);
      // Copied out: write_row appends, which may move the table's cells.
      Value row[kMaxColumns];
      const Value* killed = stale_row(i);
      for (std::uint32_t c = 0; c < width; ++c) row[c] = canonical_cell(f, c, killed[c]);
      bool subsumed = moved_out ? scratch_.subsumed[i] != 0 : t.subsumed(stale[i]);
      OriginId origin = moved_out ? scratch_.origins[i] : t.origin(stale[i]);
      try {
        std::uint64_t hash = t.key_hash(row);
        write_row(f, t.find(row, hash), row, hash, canonical(f.decl.output, row[width - 1]),
                  subsumed, origin);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
  return union_find_.unions() != unions_before;
}

void EGraph::rebuild() {
  if (union_find_.unions() == unions_at_rebuild_) return;
  while (rebuild_pass()) {
  }
  unions_at_rebuild_ = union_find_.unions();
  for (FunctionEntry& f : functions_) f.table.compact_if_sparse();
}

std::size_t EGraph::total_rows() const {
  std::size_t total = 0;
  for (const FunctionEntry& f : functions_) total += f.table.size();
  return total;
}

OriginId EGraph::intern_origin(const std::string& rule_name) {
  auto [it, inserted] = origin_by_name_.try_emplace(rule_name, static_cast<OriginId>(origin_names_.size()));
  if (inserted) {
    KILN_ASSERT(origin_names_.size() < kNoOrigin, "too many rule origins");
    origin_names_.push_back(rule_name);
  }
  return it->second;
}

std::optional<std::string> EGraph::row_origin(FunctionId f, RowId row) const {
  OriginId origin = functions_[f].table.origin(row);
  if (origin == kNoOrigin) return std::nullopt;
  return origin_names_[origin];
}

std::vector<std::string> EGraph::rules_in_eclass(SortId sort, Value eclass) const {
  bool eq = sorts_[sort].is_eq;
  Value target = eq ? union_find_.find_const(eclass) : eclass;
  std::vector<OriginId> origins;
  for (const FunctionEntry& f : functions_) {
    if (f.decl.output != sort) continue;
    const Table& t = f.table;
    for (RowId r = 0, end = t.end(); r < end; ++r) {
      if (!t.alive(r) || t.origin(r) == kNoOrigin) continue;
      Value out = eq ? union_find_.find_const(t.output(r)) : t.output(r);
      if (out == target) origins.push_back(t.origin(r));
    }
  }
  std::sort(origins.begin(), origins.end());
  origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
  std::vector<std::string> names;
  names.reserve(origins.size());
  for (OriginId o : origins) names.push_back(origin_names_[o]);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kiln::engine
