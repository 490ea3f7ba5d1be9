// An append-only intern table: equal objects get the same Value, so primitive sorts over rich
// data (strings, symbolic expressions, kernel bodies) compare and hash as plain integers.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "engine/value.hpp"

namespace kiln::engine {

template <class T, class Hasher = std::hash<T>>
class Interner {
 public:
  Value intern(const T& object) {
    auto found = ids_.find(object);
    if (found != ids_.end()) return found->second;
    Value id = objects_.size();
    objects_.push_back(object);
    ids_.emplace(objects_.back(), id);
    return id;
  }
  const T& get(Value id) const { return objects_[id]; }
  std::size_t size() const { return objects_.size(); }

 private:
  std::deque<T> objects_;  // stable addresses; ids are positions, so iteration order is insertion
  std::unordered_map<T, Value, Hasher> ids_;
};

}  // namespace kiln::engine
