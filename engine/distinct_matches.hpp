// egglog does not enumerate every variable of a query: an atom whose variables are either
// shared with another atom or read by nothing (no action, no primitive) only has to have a row
// for the shared ones, so its unread variables are projected out. With `(S x y) (A x)` and
// actions reading only x, each x is one match however many S rows it has; a one-atom query, an
// atom that shares no variable, or one with an unread variable beside a read one that only it
// binds, is enumerated row by row (docs/egglog-semantics.md, surprise 18). kiln's joins
// enumerate every row, so such a rule's matches are made distinct on the variables kept, per
// semi-naive variant. That changes what a rule does when its actions are not idempotent (a
// `:merge (+ old new)` counts each x once) and which matches share a batch.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "engine/query.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

// The variables a rule's matches must be distinct on, given the variables its actions read;
// empty when no variable is projected out (every match counts).
std::vector<std::uint32_t> distinct_match_variables(const Query& query,
                                                    const std::vector<std::uint32_t>& read_by_actions);

// The matches seen so far of one search variant, on their kept variables.
class DistinctMatches {
 public:
  void start(std::vector<std::uint32_t> vars) {
    vars_ = std::move(vars);
    clear();
  }
  void clear() {
    if (keys_.empty()) return;
    seen_ = {};  // a large set's buckets would be walked by every later clear()
    keys_.clear();
  }
  bool active() const { return !vars_.empty(); }
  // True the first time these values of the kept variables are seen.
  bool first(const Value* match_vars) {
    std::size_t at = keys_.size();
    for (std::uint32_t v : vars_) keys_.push_back(match_vars[v]);
    if (seen_.insert(Key{this, at}).second) return true;
    keys_.resize(at);
    return false;
  }

 private:
  struct Key {
    const DistinctMatches* owner;
    std::size_t at;  // in owner->keys_
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::uint64_t h = 0;
      for (std::size_t i = 0; i < k.owner->vars_.size(); ++i) h = support::mix64(h ^ k.owner->keys_[k.at + i]);
      return h;
    }
  };
  struct KeyEqual {
    bool operator()(const Key& a, const Key& b) const {
      for (std::size_t i = 0; i < a.owner->vars_.size(); ++i) {
        if (a.owner->keys_[a.at + i] != b.owner->keys_[b.at + i]) return false;
      }
      return true;
    }
  };
  std::vector<std::uint32_t> vars_;
  std::vector<Value> keys_;
  std::unordered_set<Key, KeyHash, KeyEqual> seen_;
};

}  // namespace kiln::engine
