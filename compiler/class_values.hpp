// The reference value of an e-class (DESIGN §7, "every e-class checked"): what every executable
// e-node in it must compute, at the small check dims.
//
// An e-class holding an original node of the chunk graph has that node's value from the
// reference interpreter. Any other e-class (one a rule created: a reshaped product, a fused
// intermediate) gets the value of a term extracted from the e-graph: the first HLIR op e-node of
// the class (in function, row order) whose input e-classes all have values, evaluated by the
// interpreter as a one-op graph over those values. Kernel and Gemm e-nodes never define a
// value where an HLIR op can: they are what gets checked against it. An e-class of Kernels only
// (a split reduction's partial states, which no HLIR op computes) takes the value of its first
// Kernel whose inputs have values, interpreted: its other Kernels are checked against it, and
// its consumers' checks against their HLIR values judge it. Values are computed once per
// e-class.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/egraph_view.hpp"
#include "engine/extract.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/interpret.hpp"

namespace kiln::compiler {

struct ClassValue {
  graph::DType dtype = graph::DType::F32;
  std::vector<graph::Expr> shape;  // symbolic: the buffer's shape at any dims
  std::vector<double> data;        // row-major, at the check dims
  std::string term;                // how it was obtained: `%3` (original node) or `(Add ...)`
  // The reductions behind a Kernel-only value (a split's partial states fold chunks of the
  // reduction its reader completes): a reader's check tolerance grows by it.
  std::int64_t reduction_length = 1;
  // Per element, how far the reference's own roundings move it (graph::rounding_spread; original
  // nodes only, empty otherwise): a check allows that much more.
  std::vector<double> spread = {};
};

class ClassValues {
 public:
  ClassValues(const EGraphView& view, graph::DimValues check_dims);

  // Pins an e-class to an original node's value.
  void set(engine::Value eclass, ClassValue value);
  // The value of an e-class; nullptr when no term of it can be evaluated.
  const ClassValue* get(engine::Value eclass);
  // Why an e-class that get() found no value for has none: its first e-node's reason (an input
  // without a value, an interpreter error); empty when it has a value or was not asked.
  std::string why_missing(engine::Value eclass) const;
  // The value of an e-class from a term other than `node` at its root (for judging the rule
  // that made `node`): an original node's value, or another e-node's; nullopt: none.
  std::optional<ClassValue> other_than(engine::Value eclass, const engine::ENode& node);

  // One HLIR op e-node on its input e-classes' values: the value, or why it cannot be computed
  // (an input without a value, a view reading outside its input, an op the interpreter lacks).
  struct Evaluated {
    std::optional<ClassValue> value;
    std::string why;
  };
  Evaluated evaluate(const engine::ENode& node);

  // The longest reduction_length of the values of `inputs` (1 for values of HLIR terms): what a
  // Kernel reading them completes beyond its own reductions.
  std::int64_t upstream_reduction(const std::vector<engine::Value>& inputs);

  // A Kernel e-node's Body interpreted on its inputs' values, in an e-class of Kernels only.
  Evaluated evaluate_kernel(const engine::ENode& node);

  // A short rendering of an e-node for reports: `(Add c12 c7)` with inputs as e-class ids.
  std::string describe(const engine::ENode& node) const;

  const graph::DimValues& dims() const { return dims_; }

 private:
  const EGraphView& view_;
  graph::DimValues dims_;
  std::map<engine::Value, std::optional<ClassValue>> values_;
  std::map<engine::Value, std::string> why_missing_;
  std::set<engine::Value> pinned_;  // original nodes
  std::set<engine::Value> visiting_;
  bool hit_cycle_ = false;
};

// The most memory the reference values of one group may take: a quarter of this machine's
// memory, at most 4 GiB (a compile holds more than these values).
std::int64_t reference_memory_limit();
// A UserError, naming the largest tensor and the dims, when interpreting `g` at `dims` would pass
// reference_memory_limit().
void check_reference_fits(const graph::Graph& g, const graph::DimValues& dims);

// The check dims: every dim of `dims` capped at `cap` (kernels are generic in their dims, so a
// small binding checks the same code without materializing large products).
graph::DimValues check_dims_of(const graph::DimValues& dims, std::int64_t cap = 13);

}  // namespace kiln::compiler
