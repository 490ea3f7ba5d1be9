// Union-find over e-class ids, with path halving; the smaller (older) id becomes the root so
// results do not depend on the order of union arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/huge_page_vector.hpp"
#include "engine/value.hpp"

namespace kiln::engine {

class UnionFind {
 public:
  Value make_set() {
    parent_.push_back(parent_.size());
    return parent_.size() - 1;
  }

  Value find(Value id) {
    while (parent_[id] != id) {
      parent_[id] = parent_[parent_[id]];
      id = parent_[id];
    }
    return id;
  }

  bool is_root(Value id) const { return parent_[id] == id; }

  // Find without path compression, for const contexts (extraction, printing).
  Value find_const(Value id) const {
    while (parent_[id] != id) id = parent_[id];
    return id;
  }

  // Merges the classes of a and b; returns the new root, and counts real merges.
  Value unite(Value a, Value b) {
    a = find(a);
    b = find(b);
    if (a == b) return a;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
    ++unions_;
    return a;
  }

  std::size_t size() const { return parent_.size(); }
  // Number of merges ever performed; rebuild compares it to know whether work remains.
  std::uint64_t unions() const { return unions_; }

 private:
  HugePageVector<Value> parent_;
  std::uint64_t unions_ = 0;
};

}  // namespace kiln::engine
