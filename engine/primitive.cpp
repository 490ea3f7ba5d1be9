// The table of primitive operations by name, and the reason a call failed.
#include "engine/primitive.hpp"

#include <memory>
#include <string>

namespace kiln::engine {

std::string& primitive_failure_reason() {
  thread_local std::string reason;
  return reason;
}

const Primitive& PrimitiveTable::add(Primitive primitive) {
  owned_.push_back(std::make_unique<Primitive>(std::move(primitive)));
  by_name_[owned_.back()->name].push_back(owned_.back().get());
  return *owned_.back();
}

const std::vector<const Primitive*>& PrimitiveTable::overloads(const std::string& name) const {
  static const std::vector<const Primitive*> none;
  auto found = by_name_.find(name);
  return found == by_name_.end() ? none : found->second;
}

}  // namespace kiln::engine
