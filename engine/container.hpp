// Container sorts — egglog's Vec, Set, MultiSet, Map, Pair and Maybe — parameterised by element sorts
// and nestable. A container is an interned list of element values, so equal containers are equal
// Values. A container that holds e-classes (directly or through nested containers) is re-interned
// with canonical elements whenever its classes merge (EGraph::canonical and rebuild), which makes
// it equal to the container built from the merged classes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/intern.hpp"
#include "engine/sort.hpp"

namespace kiln::engine {

enum class ContainerKind { Vec, Set, MultiSet, Map, Pair, Maybe };

struct ValueListHash {
  std::size_t operator()(const std::vector<Value>& items) const;
};

class ContainerSort final : public PrimitiveSort {
 public:
  ContainerSort(ContainerKind kind, std::vector<SortId> params, bool holds_eclasses);

  // Raw elements for dumps only: terms (with e-classes extracted) come from TreeExtractor.
  std::string print(Value v) const override;
  bool holds_eclasses() const override { return holds_eclasses_; }
  // A container costs the sum of its elements (egglog: the empty container costs 0).
  std::uint64_t literal_cost() const override { return 0; }

  ContainerKind kind() const { return kind_; }
  const std::vector<SortId>& params() const { return params_; }
  // The sort of stored item i (a Map stores key, value, key, value, ...).
  SortId item_sort(std::size_t i) const {
    return params_.size() == 1 ? params_[0] : params_[i % params_.size()];
  }
  // Normalizes (Set: sorted, unique; MultiSet: sorted; Map: one entry per key, the last given
  // wins, sorted by key) and interns. The order is the raw Value order, as in egglog.
  Value make(std::vector<Value> items) const;
  const std::vector<Value>& items(Value v) const { return store_.get(v); }
  // The head egglog prints: vec-of / vec-empty, set-of, multiset-of, map-of, pair,
  // maybe-some / maybe-none.
  const char* head(Value v) const;

 private:
  ContainerKind kind_;
  std::vector<SortId> params_;
  bool holds_eclasses_;
  mutable Interner<std::vector<Value>, ValueListHash> store_;
};

// The container kind named `name` (Vec, Set, ...) and its number of sort parameters, or false.
bool container_kind(const std::string& name, ContainerKind& kind, std::size_t& arity);

// Declares sort `name` = kind(params) and registers its primitives (vec-of, set-insert, ...) as
// overloads typed for exactly this sort.
SortId add_container_sort(EGraph& egraph, const Builtins& builtins, const std::string& name,
                          ContainerKind kind, std::vector<SortId> params);

}  // namespace kiln::engine
