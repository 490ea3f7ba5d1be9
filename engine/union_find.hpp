// Union-find over e-class ids, with path halving; the smaller (older) id becomes the root so
// results do not depend on the order of union arguments. Parents are stored in 32 bits: every
// table access of a rule's actions canonicalizes its keys here, at random places of an array
// with one entry per class ever made, so half the bytes is half the cache lines and pages.
// A bit per id also says whether it was merged away: rebuild asks that of every cell of every
// row, and the bits of a million classes fit in the L2 cache where their parents do not.
//
// Frozen, it keeps two views. While a rule iteration applies its matches, egglog's actions see
// the classes as they were when the iteration began: a union takes effect for lookups, deletes
// and subsumes at the rebuild that follows (so `(delete (F x))` removes the row keyed by x even
// after another match merged x away). canonical() gives that view; find() and unite() keep the
// real classes. A second bit per id marks the ids merged away while frozen. Those were roots
// when frozen, so canonical() stops at them, and path halving may relink them freely; an id
// merged before the freeze keeps its parent until the thaw, so its chain still leads to the
// old root. (Halving only those is what keeps finds short: nearly every merge of a large
// iteration happens while frozen.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {

class UnionFind {
 public:
  Value make_set() {
    Id id = static_cast<Id>(parent_.size());
    KILN_ASSERT(id != kMaxId, "more e-classes than 32-bit ids can name");
    parent_.push_back(id);
    if (id % 64 == 0) {
      merged_.push_back(0);
      merged_frozen_.push_back(0);
    }
    return id;
  }

  Value find(Value v) {
    Id id = static_cast<Id>(v);
    while (parent_[id] != id) {
      if (!frozen_ || merged_while_frozen(id)) parent_[id] = parent_[parent_[id]];
      id = parent_[id];
    }
    return id;
  }

  // The class as actions see it: while frozen, as it was at freeze(); otherwise find().
  Value canonical(Value v) {
    if (!frozen_) return find(v);
    Id id = static_cast<Id>(v);
    while (!is_root(id) && !merged_while_frozen(id)) id = parent_[id];
    return id;
  }
  // Whether canonical(v) == v.
  bool is_canonical(Value v) const { return is_root(v) || (frozen_ && merged_while_frozen(static_cast<Id>(v))); }

  void freeze() { frozen_ = true; }
  void thaw() {
    frozen_ = false;
    std::fill(merged_frozen_.begin(), merged_frozen_.end(), 0);
  }
  bool frozen() const { return frozen_; }

  bool is_root(Value id) const { return (merged_[id / 64] >> (id % 64) & 1) == 0; }

  // Find without path compression, for const contexts (extraction, printing).
  Value find_const(Value v) const {
    Id id = static_cast<Id>(v);
    while (parent_[id] != id) id = parent_[id];
    return id;
  }

  // Merges the classes of a and b; returns the new root, and counts real merges.
  Value unite(Value a, Value b) {
    a = find(a);
    b = find(b);
    if (a == b) return a;
    if (b < a) std::swap(a, b);
    parent_[b] = static_cast<Id>(a);
    merged_[b / 64] |= std::uint64_t{1} << (b % 64);
    if (frozen_) merged_frozen_[b / 64] |= std::uint64_t{1} << (b % 64);
    ++unions_;
    return a;
  }

  std::size_t size() const { return parent_.size(); }
  // Number of merges ever performed; rebuild compares it to know whether work remains.
  std::uint64_t unions() const { return unions_; }

 private:
  using Id = std::uint32_t;
  static constexpr Id kMaxId = ~Id{0};
  HugePageVector<Id> parent_;
  bool merged_while_frozen(Id id) const { return (merged_frozen_[id / 64] >> (id % 64) & 1) != 0; }

  HugePageVector<std::uint64_t> merged_;  // bit id: id is no longer a root
  HugePageVector<std::uint64_t> merged_frozen_;  // bit id: merged away while frozen
  bool frozen_ = false;
  std::uint64_t unions_ = 0;
};

}  // namespace kiln::engine
