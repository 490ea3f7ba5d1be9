// The schema of one table: constructor (eq-sort output, merged by union), function (any output,
// merged by a merge function or not at all), or relation (Unit output).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/value.hpp"

namespace kiln::engine {

class EGraph;

enum class FunctionKind { Constructor, Function, Relation };

// What happens when a write meets an existing row with a different output.
enum class MergeKind {
  Union,    // outputs are e-classes: union them (constructors)
  NoMerge,  // a conflict is an error
  Custom,   // merge_fn(old, new) gives the new output
};

// Returns the merged value; throws support::UserError if the merge itself fails.
using MergeFn = std::function<Value(EGraph&, Value old_value, Value new_value)>;

struct FunctionDecl {
  std::string name;
  FunctionKind kind = FunctionKind::Function;
  std::vector<SortId> inputs;
  SortId output = 0;
  MergeKind merge = MergeKind::NoMerge;
  MergeFn merge_fn;
  std::uint64_t cost = 1;       // per e-node, for tree-cost extraction
  bool unextractable = false;   // never chosen by extraction
};

}  // namespace kiln::engine
