// Primitive operations: pure functions over primitive values, callable from queries (where a
// failure filters the match) and actions (where a failure is an error).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/value.hpp"

namespace kiln::engine {

// An input sort slot that accepts any sort; all such slots of one call must agree.
inline constexpr SortId kAnySort = 0xffffffffu;

// Returns false when the operation fails (division by zero, overflow, ...); it may say why
// through primitive_failure_reason().
using PrimitiveFn = std::function<bool(const Value* args, std::size_t count, Value& result)>;

struct Primitive {
  std::string name;
  std::vector<SortId> inputs;
  SortId output = 0;  // kAnySort: the output has the sort of the kAnySort inputs
  // The last input sort repeats zero or more times: at least inputs.size() - 1 arguments
  // (String `+` has inputs {String} and accepts 0..n).
  bool variadic = false;
  PrimitiveFn apply;
  // The sort this primitive was registered for (a container's own primitives), or null. The
  // table outlives a `pop` that removes the sort, so such a primitive is live only while sort
  // `owner_id` is still `owner` (EGraph::is_live).
  const void* owner = nullptr;
  SortId owner_id = 0;
  // Declared by a program's `(primitive ...)`: live while the e-graph lists it
  // (EGraph::declare_primitive), so a `pop` forgets it.
  bool declared = false;
  // Where a call may stand. A declared primitive whose body builds terms cannot run in a query
  // (a search only reads); one whose body reads a function's value cannot run in a rule's
  // actions (egglog leaves both names unbound there).
  bool in_queries = true;
  bool in_rule_actions = true;
};

// Why the primitive call that just returned false failed, when the primitive says (a sort's own
// error message): a failing action reports it to the rule author after "primitive 'p' failed".
// Per thread; an action clears it before each call, a query ignores it (a failure filters there).
std::string& primitive_failure_reason();

class EGraph;

// The e-graph the current primitive call runs against, for primitives that call functions
// (unstable-app): run_actions (which may create e-nodes) and searches (which only look rows
// up) set it. Per thread; an inline variable, so the check in run_actions costs a compare.
struct PrimitiveContext {
  EGraph* egraph = nullptr;
  bool may_insert = false;
};
inline thread_local PrimitiveContext current_primitive_context;
inline PrimitiveContext& primitive_context() { return current_primitive_context; }

// Sets the context for a scope and restores the previous one.
class PrimitiveContextScope {
 public:
  PrimitiveContextScope(EGraph& egraph, bool may_insert) : saved_(current_primitive_context) {
    current_primitive_context = PrimitiveContext{&egraph, may_insert};
  }
  ~PrimitiveContextScope() { current_primitive_context = saved_; }
  PrimitiveContextScope(const PrimitiveContextScope&) = delete;
  PrimitiveContextScope& operator=(const PrimitiveContextScope&) = delete;

 private:
  PrimitiveContext saved_;
};

// All primitives by name; one name may have several overloads (e.g. `+` on i64 and f64).
class PrimitiveTable {
 public:
  const Primitive& add(Primitive primitive);
  // Overloads in registration order; empty if the name is unknown.
  const std::vector<const Primitive*>& overloads(const std::string& name) const;
  bool contains(const std::string& name) const { return by_name_.count(name) != 0; }

 private:
  std::vector<std::unique_ptr<Primitive>> owned_;
  std::map<std::string, std::vector<const Primitive*>> by_name_;
};

}  // namespace kiln::engine
