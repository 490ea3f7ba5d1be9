// LLIR: the low-level program the runtime executes (DESIGN §1, §7): an ordered DAG of steps,
// each a kernel launch (a graph::Body) or a library call (a LibraryCall), each producing one
// value. Values are graph inputs, persistent state (kept by the executor between runs) or
// temporaries (placed by the buffer plan); outputs are names given to values.
//
// Storage. A Boost.Graph bidirectional adjacency list of steps: vertex i is the i-th step added
// (its StepId), and an edge runs from the step producing a value to each step reading it,
// recording the reader's input slot. Steps are added after the steps they read, so the ids are
// an execution order. Values live beside the graph, indexed by ValueId.
//
// Metadata per step, as Exprs over the symbolic dims (evaluated with a dim map at run time):
//   output size      elements of the output value
//   bytes read       the sizes of the input values in bytes (each input read once; broadcast
//                    re-reads and skipped padding are not modelled)
//   bytes written    the output size in bytes
//   flops            kernels: one per arithmetic Scalar node (everything but constants,
//                    params, indices, loads and casts) times the iterations of the loops
//                    around its use (output loops times the extents of enclosing reductions;
//                    a monoid's lift and combine count per element, finalize per result);
//                    shared nodes count once, as if code motion did not hoist them.
//                    gemm: 2 * batch * m * n * k. Other library calls: 0.
//   alias            the input slot whose buffer the output reuses (Body::output_aliases):
//                    the output must hold that input's contents before the step runs.
//   in_place         with an alias: the step writes into that input's own buffer (the
//                    compiler's extraction chose the in-place form, which its rules allowed
//                    only when nothing else reads the input); without it, the executor copies
//                    the input into the output's buffer first.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/body.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "runtime/target.hpp"

namespace kiln::runtime {

using ValueId = std::size_t;
using StepId = std::size_t;

enum class ValueKind : std::uint8_t {
  Input,      // bound by name on every run
  State,      // persistent: held by the executor; an output of the same name updates it
  Temporary,  // produced by a step, placed by the buffer plan
};

// "input", "state", "temp".
const char* value_kind_name(ValueKind kind);

struct Value {
  ValueKind kind = ValueKind::Temporary;
  std::string name;                  // inputs and state; empty for temporaries
  graph::DType dtype = graph::DType::F32;
  std::vector<graph::Expr> shape;
  graph::Expr size;                  // elements: the product of shape
  std::optional<StepId> producer;    // temporaries: the step computing it
};

struct Step {
  std::variant<graph::Body, LibraryCall> op;
  std::vector<ValueId> inputs;       // by slot
  ValueId output = 0;
  std::string label;                 // for reports and errors, e.g. "%5 Add"
  graph::Expr output_size;
  graph::Expr bytes_read;
  graph::Expr bytes_written;
  graph::Expr flops;
  std::optional<std::size_t> alias;  // the input slot whose contents the output starts from
  bool in_place = false;             // the output is written into that input's buffer

  const graph::Body* body() const { return std::get_if<graph::Body>(&op); }
  const LibraryCall* call() const { return std::get_if<LibraryCall>(&op); }
};

// An edge: the reader's input slot.
struct StepEdge {
  std::size_t slot = 0;
};

// A named output of the program.
struct Output {
  std::string name;
  ValueId value = 0;
};

class Llir {
 public:
  using BoostGraph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Step, StepEdge>;

  // A graph input (ValueKind::Input) or a persistent state value (ValueKind::State). Names are
  // unique among inputs and state (a repeat is a UserError).
  ValueId add_input(const std::string& name, graph::DType dtype, std::vector<graph::Expr> shape,
                    bool persistent = false);
  // A kernel step reading `inputs` by slot; its output has `shape` and the body's dtype, and
  // the body's output size must equal the product of `shape` (internal error otherwise).
  // `in_place`: see the header comment (only for a body with output_aliases()).
  ValueId add_kernel(graph::Body body, std::vector<ValueId> inputs,
                     std::vector<graph::Expr> shape, std::string label, bool in_place = false);
  // A library call step (buffers: inputs, then the output).
  ValueId add_call(LibraryCall call, std::vector<ValueId> inputs, graph::DType dtype,
                   std::vector<graph::Expr> shape, std::string label);
  // Names `value` as output `name` (names are unique: a repeat is a UserError).
  void add_output(const std::string& name, ValueId value);

  std::size_t num_steps() const { return boost::num_vertices(g_); }
  std::size_t num_values() const { return values_.size(); }
  const Step& step(StepId id) const;
  const Value& value(ValueId id) const;
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Output>& outputs() const { return outputs_; }
  // The steps reading the output of `id`, sorted, each once.
  std::vector<StepId> users(StepId id) const;
  // The input or state value called `name`, if any.
  std::optional<ValueId> find_input(const std::string& name) const;

  const BoostGraph& boost_graph() const { return g_; }

 private:
  ValueId add_step(Step step, graph::DType dtype, std::vector<graph::Expr> shape);
  BoostGraph g_;
  std::vector<Value> values_;
  std::vector<Output> outputs_;
};

// The product of `shape` (1 for a scalar).
graph::Expr shape_size(const std::vector<graph::Expr>& shape);

// Deterministic text, one line per value or step in order of creation, then the outputs:
//   %0 = input x f32 [seq, 4]
//   %2 = kernel f32 [seq, 4] (%0, %1) "%3 Add" size=4*seq read=32*seq written=16*seq flops=4*seq
//   %3 = kernel f32 [...] (...) "..." ... alias=0 in_place
//   output y = %2
// Bodies print with `include_bodies` (indented under their step), else only their labels.
std::string to_text(const Llir& llir, bool include_bodies = false);

// Flops of one execution of `body` (see the header comment).
graph::Expr body_flops(const graph::Body& body);

}  // namespace kiln::runtime
