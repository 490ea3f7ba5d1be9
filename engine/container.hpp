// Container sorts — egglog's Vec, Set, MultiSet, Map, Pair and Maybe — parameterised by element sorts
// and nestable. A container is an interned list of element values, so equal containers are equal
// Values. A container that holds e-classes (directly or through nested containers) is re-interned
// with canonical elements whenever its classes merge (EGraph::canonical and rebuild), which makes
// it equal to the container built from the merged classes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/intern.hpp"
#include "engine/sort.hpp"

namespace kiln::engine {

enum class ContainerKind { Vec, Set, MultiSet, Map, Pair, Maybe, Fn };

// The target of a function value (egglog's UnstableFn): a constructor, function or primitive
// with the sorts it takes (the value's partial arguments first) and returns. Functions are
// found by name when called, so a value never outlives its function's meaning.
struct Callable {
  std::string name;
  const Primitive* primitive = nullptr;  // null: the constructor or function `name`
  std::vector<SortId> inputs;
  SortId output = 0;
};

struct ValueListHash {
  std::size_t operator()(const std::vector<Value>& items) const;
};

class ContainerSort final : public PrimitiveSort {
 public:
  // `plain` is a sort of raw values (i64): a function value's first item, its target's index.
  ContainerSort(ContainerKind kind, std::vector<SortId> params, bool holds_eclasses,
                SortId plain = 0);

  // Raw elements for dumps only: terms (with e-classes extracted) come from TreeExtractor.
  std::string print(Value v) const override;
  bool holds_eclasses() const override { return holds_eclasses_; }
  // A container costs the sum of its elements (egglog: the empty container costs 0).
  std::uint64_t literal_cost() const override { return 0; }

  ContainerKind kind() const { return kind_; }
  const std::vector<SortId>& params() const { return params_; }
  // The sort of item i of a value's items (a Map stores key, value, key, value, ...; a function
  // value its target's index, then its partial arguments).
  SortId item_sort(const std::vector<Value>& items, std::size_t i) const {
    if (kind_ == ContainerKind::Fn) {
      return i == 0 ? plain_ : callables_[static_cast<std::size_t>(items[0])].inputs[i - 1];
    }
    return params_.size() == 1 ? params_[0] : params_[i % params_.size()];
  }
  // Function values: the index of a target (registered once), and the target of an index.
  Value callable_index(const Callable& target) const;
  const Callable& callable(Value index) const { return callables_[static_cast<std::size_t>(index)]; }
  // Normalizes (Set: sorted, unique; MultiSet: sorted; Map: one entry per key, the last given
  // wins, sorted by key) and interns. The order is the raw Value order, as in egglog.
  Value make(std::vector<Value> items) const;
  const std::vector<Value>& items(Value v) const { return store_.get(v); }
  // The head egglog prints: vec-of / vec-empty, set-of, multiset-of, map-of, pair,
  // maybe-some / maybe-none.
  const char* head(Value v) const;

 private:
  ContainerKind kind_;
  std::vector<SortId> params_;  // a function value's: its remaining inputs, then its output
  bool holds_eclasses_;
  SortId plain_;
  mutable std::vector<Callable> callables_;
  mutable Interner<std::vector<Value>, ValueListHash> store_;
};

// The container kind named `name` (Vec, Set, ...) and its number of sort parameters, or false.
bool container_kind(const std::string& name, ContainerKind& kind, std::size_t& arity);

// Calls visit(eclass) for every e-class that `value` of `sort` holds: the value itself for an
// eq-sort, else the elements of a container (through nested containers, and a function value's
// partial arguments). Extraction and dumps follow these as children.
void for_each_eclass(const EGraph& egraph, SortId sort, Value value, const std::function<void(Value)>& visit);

// Declares sort `name` = (UnstableFn (inputs...) output) and registers its unstable-app.
SortId add_function_value_sort(EGraph& egraph, const Builtins& builtins, const std::string& name,
                               std::vector<SortId> inputs, SortId output);

// The primitive that builds a value of function-value sort `sort` for `target` from the
// partial arguments (what `(unstable-fn "name" args...)` compiles to).
const Primitive& function_value_builder(EGraph& egraph, SortId sort, const Callable& target);

// Declares sort `name` = kind(params) and registers its primitives (vec-of, set-insert, ...) as
// overloads typed for exactly this sort.
SortId add_container_sort(EGraph& egraph, const Builtins& builtins, const std::string& name,
                          ContainerKind kind, std::vector<SortId> params);

}  // namespace kiln::engine
