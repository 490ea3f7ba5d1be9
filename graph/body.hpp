// Body: the kernel IR (DESIGN §5). A Body computes one output buffer from input buffers as a
// loop nest around a scalar expression DAG:
//
//   for o0 < e0, o1 < e1, ...            output loops, outermost first (parallel or serial)
//     out[store_index] = value           one store per iteration
//
// where `value` is a DAG of Scalar nodes: constants, loads of input buffers at an index Expr
// over the loop variables, elementwise ops, and Reduce nodes. A Reduce runs its own loop
// variable r over [0, extent) and folds its element values with a Monoid.
//
// Why this shape:
// - Loads carry a flat position Expr (View::index of the coordinates), not a View: two loads of
//   one element compare equal whatever views led to them, and inlining a producer into a
//   consumer (fusion) is substitution of the producer's loop variables.
// - Where a node is computed is not stored: a backend computes each node inside the innermost
//   loop its variables need (loop-invariant code motion), so the nest order (a schedule
//   choice) is just the order of `loops`, and hoisting a reduction out of a loop needs no IR.
// - A Monoid is data (identity, lift, combine, finalize over Param nodes), so reductions other
//   than sum and max (the online-softmax triple: running max, running sum, running accumulator)
//   are Bodies too, and a reduction can be split into partial states merged by `combine`.
//
// Loop variables are dims of Expr (`o0`, `o1`, ... for output loops, `r0`, `r1`, ... for
// reductions, numbered in order of creation); the kernel's symbolic dims (`seq`) are passed in
// at run time. Every variable ranges over [0, extent).
//
// A guard (an Expr over the loop variables, 1 by default) marks the iterations that compute and
// store: where it is 0 the iteration does nothing. A tiled loop's ragged last tile is guarded
// (graph/body_tile.hpp); its loads carry the guard in their validity, so a backend may compute
// an iteration's nodes before testing it.
//
// Two extras make Gather and Scatter Bodies: a Load may add a *dynamic row*, a scalar operand
// (an integer loaded from an index tensor) times a stride, and bounds-checks it against a row
// count (out of range reads NaN, or 0 for integer dtypes); the store may do the same (Scatter
// writes rows of a buffer that holds a copy of its destination: `output_aliases` names that
// input).
//
// Bodies are values: immutable once built, hash-consed inside (equal Scalar nodes share an
// id), printed deterministically by to_text, and keyed by XXH3-128 of that text (key()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "support/hash.hpp"

namespace kiln::graph {

using ScalarId = std::uint32_t;

enum class ScalarOp : std::uint8_t {
  Const,     // `value`
  Param,     // argument `slot` of a Monoid's lift / combine / finalize
  Index,     // the integer `index` (an Expr over loop variables and dims) as a value
  Load,      // input `slot` at `index`; 0 where `valid` is 0; args[0], if any, is a dynamic row
  Cast,      // args[0] converted to `dtype`
  Exp2, Log2, Sin, Recip, Sqrt,  // args[0]
  Add, Mul, Mod, LessThan, Max, Min,  // args[0], args[1]; LessThan gives 1 or 0 in `dtype`
  Select,    // args[0] != 0 ? args[1] : args[2]
  Reduce,    // monoid `slot` over variable `var` < `extent`, folding elements args[...]
};

// The op's name in the text form (`load`, `exp2`, `reduce`, ...).
const char* scalar_op_name(ScalarOp op);

struct Scalar {
  ScalarOp op = ScalarOp::Const;
  DType dtype = DType::F32;
  std::vector<ScalarId> args;
  double value = 0.0;      // Const
  std::size_t slot = 0;    // Load: input; Param: argument; Reduce: monoid
  Expr index;              // Load: position in the input; Index: the value
  Expr valid = Expr(1);    // Load: 1 where the element is real data
  Expr row_stride;         // Load with a dynamic row: position += row * row_stride
  Expr row_count;          // Load with a dynamic row: rows must lie in [0, row_count)
  std::string var;         // Reduce: its loop variable
  Expr extent;             // Reduce: its trip count
  friend bool operator==(const Scalar&, const Scalar&) = default;
};

// A reduction's algebra over a state of one or more components (all of the Reduce's dtype).
// An element (E values, Params 0..E-1) becomes a state by `lift`; two states (Params 0..S-1
// and S..2S-1) merge by `combine`, which must be associative with `identity` as unit; the
// result is `finalize` of the state (Params 0..S-1). Backends fold as
// `state = combine(state, lift(element))`.
struct Monoid {
  std::string name;
  std::size_t elements = 1;
  std::vector<double> identity;
  std::vector<ScalarId> lift;
  std::vector<ScalarId> combine;
  ScalarId finalize = 0;
  friend bool operator==(const Monoid&, const Monoid&) = default;
};

struct Loop {
  std::string var;
  Expr extent;
  bool parallel = true;  // false: iterations must run in order (Scatter's last write wins)
  friend bool operator==(const Loop&, const Loop&) = default;
};

class Body {
 public:
  const std::vector<Scalar>& scalars() const { return scalars_; }
  const Scalar& scalar(ScalarId id) const { return scalars_.at(id); }
  const std::vector<Monoid>& monoids() const { return monoids_; }
  const std::vector<Loop>& loops() const { return loops_; }
  // The output buffer's element count and the flat position each iteration stores to.
  const Expr& output_size() const { return output_size_; }
  const Expr& store_index() const { return store_index_; }
  // A dynamic row added to the store position (Scatter), with its stride and row count.
  std::optional<ScalarId> store_row() const { return store_row_; }
  const Expr& store_row_stride() const { return store_row_stride_; }
  const Expr& store_row_count() const { return store_row_count_; }
  // 1 where an iteration computes and stores, 0 where it does nothing (a ragged tile's tail).
  const Expr& guard() const { return guard_; }
  // The input whose contents the output buffer must hold before the kernel runs (Scatter).
  std::optional<std::size_t> output_aliases() const { return output_aliases_; }
  ScalarId value() const { return value_; }
  DType dtype() const { return scalars_.at(value_).dtype; }
  // The dtype of each input buffer, by slot.
  const std::vector<DType>& inputs() const { return inputs_; }

  // Deterministic text (see to_text) and its XXH3-128 key.
  support::Hash128 key() const;
  friend bool operator==(const Body& a, const Body& b) { return to_text(a) == to_text(b); }
  friend std::string to_text(const Body& body);

 private:
  friend class BodyBuilder;
  std::vector<Scalar> scalars_;
  std::vector<Monoid> monoids_;
  std::vector<Loop> loops_;
  Expr output_size_;
  Expr store_index_;
  std::optional<ScalarId> store_row_;
  Expr store_row_stride_;
  Expr store_row_count_;
  Expr guard_ = Expr(1);
  std::optional<std::size_t> output_aliases_;
  ScalarId value_ = 0;
  std::vector<DType> inputs_;
};

// The deterministic text form (live nodes only, renumbered), e.g.
//   body f32 (in0 f32)
//     %0 = load f32 in0[o0]
//     loop o0 < n
//     store [o0] of n = %0
std::string to_text(const Body& body);

// Builds a Body. Nodes are hash-consed: adding an equal node again returns the same id.
// Variables come from output_loop() and reduce_var(); uses of unknown variables, inputs or
// monoids are internal errors (the builder is used by compiler code, not users).
class BodyBuilder {
 public:
  // The input buffers' dtypes, by slot.
  explicit BodyBuilder(std::vector<DType> inputs);

  // Node `id` as built so far.
  const Scalar& scalar(ScalarId id) const { return body_.scalars_.at(id); }

  // Appends an output loop (inside the previous ones) and returns its variable.
  Expr output_loop(const Expr& extent, bool parallel = true);
  // A fresh reduction variable (`r0`, `r1`, ...) for reduce().
  std::string reduce_var();

  ScalarId constant(double value, DType dtype);
  ScalarId param(std::size_t slot, DType dtype);
  ScalarId index(const Expr& value, DType dtype);
  ScalarId load(std::size_t input, const Expr& index, const Expr& valid = Expr(1));
  // A load at `index + row * row_stride`, row being the integer value of `row`.
  ScalarId load_row(std::size_t input, const Expr& index, ScalarId row, const Expr& row_stride,
                    const Expr& row_count, const Expr& valid = Expr(1));
  ScalarId unary(ScalarOp op, ScalarId x);
  ScalarId cast(ScalarId x, DType dtype);
  // Add, Mul, Mod, Max, Min: both operands' dtype; LessThan: `dtype` of the result.
  ScalarId binary(ScalarOp op, ScalarId a, ScalarId b);
  ScalarId less_than(ScalarId a, ScalarId b, DType result);
  ScalarId select(ScalarId condition, ScalarId if_true, ScalarId if_false);
  ScalarId reduce(std::size_t monoid, const std::string& var, const Expr& extent,
                  std::vector<ScalarId> elements, DType dtype);

  // The built-in monoids (added on first use) and user-defined ones.
  std::size_t sum_monoid(DType dtype);
  std::size_t max_monoid(DType dtype);
  std::size_t add_monoid(Monoid monoid);

  // Iterations where `guard` is 0 compute and store nothing (see Body::guard).
  void set_guard(const Expr& guard);

  // Finishes: every iteration stores `value` at `store_index` of a buffer of `output_size`
  // elements (plus `row * row_stride` for a dynamic row).
  Body finish(ScalarId value, const Expr& output_size, const Expr& store_index);
  Body finish_rows(ScalarId value, const Expr& output_size, const Expr& store_index,
                   ScalarId row, const Expr& row_stride, const Expr& row_count,
                   std::size_t output_aliases);

 private:
  ScalarId add(Scalar s);
  Scalar load_node(std::size_t input, const Expr& index, const Expr& valid) const;
  void check_id(ScalarId id) const;

  Body body_;
  std::map<std::string, ScalarId> interned_;  // a node's text form -> its id
  std::size_t next_reduce_var_ = 0;
};

// The symbolic dims a Body needs at run time (every dim its Exprs mention that is not one of its
// loop variables), sorted by name: the order in which compiled kernels take their values.
std::vector<std::string> body_dims(const Body& body);

// Evaluates a Body on concrete buffers (the Body's reference semantics, for tests and for
// checking transformations). `inputs[k]` holds input k's elements as doubles; `output` must
// have output_size() elements and, when output_aliases() is set, hold that input's contents.
// Each node's result is rounded to its dtype, as the HLIR interpreter does. An out-of-range
// dynamic row or position is a UserError.
void interpret_body(const Body& body, const std::vector<const std::vector<double>*>& inputs,
                    const DimValues& dims, std::vector<double>& output);

// A monoid of `body` evaluated on concrete values with the interpreter's semantics: the state
// of one element, the combination of two states, the result of a state. For tests of a
// monoid's laws (identity, associativity) and for merging partial states.
std::vector<double> monoid_lift(const Body& body, std::size_t monoid,
                                const std::vector<double>& element);
std::vector<double> monoid_combine(const Body& body, std::size_t monoid,
                                   const std::vector<double>& a, const std::vector<double>& b);
double monoid_finalize(const Body& body, std::size_t monoid, const std::vector<double>& state);

}  // namespace kiln::graph
