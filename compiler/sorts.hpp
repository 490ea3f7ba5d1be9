// The graph library's values as engine primitive sorts (DESIGN §3): `Expr` (symbolic integers),
// `Shape` (a list of Exprs), `View` (ShapeTracker) and `Body` (a kernel's loop nest), with the primitives rules use to compute
// shapes and views inside queries and actions. The engine knows nothing of graph/; this glue
// does (DESIGN §2). docs/rule-language.md lists every primitive.
//
// Values are interned per sort: equal Exprs (structurally, in canonical form) are one Value,
// so rows compare and join as integers. Printing shows the data, never the intern number, as a
// literal that reads back: `(expr "2*seq + 1")`, `(shape "[seq, 64]")`,
// `(view "View(shape=[seq, 64], strides=[64, 1], offset=0)")`. A Body has no text form to read
// back: it prints as its key, `(body "kiln_<32 hex digits>")`, and enters the e-graph from C++
// (the compiler interns one-op and transformed Bodies) or from primitives.
//
// Failures. A primitive fails (filters the match in a query; is a located run-time error in
// an action, "primitive 'expr' failed" at the call) on a bad literal, a constant zero divisor,
// overflow, an out-of-range dim, a non-constant Expr asked for its value, or a view operation
// the View API rejects (a reshape that needs a copy, an impossible composition, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "engine/intern.hpp"
#include "graph/body.hpp"
#include "graph/expr.hpp"
#include "graph/view.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

// A primitive sort whose values are interned objects of type T.
template <class T, class Hash>
class InternedSort : public engine::PrimitiveSort {
 public:
  engine::Value make(const T& object) const { return objects_.intern(object); }
  const T& get(engine::Value v) const { return objects_.get(v); }

 private:
  mutable engine::Interner<T, Hash> objects_;
};

using Shape = std::vector<graph::Expr>;

struct ShapeHash {
  std::size_t operator()(const Shape& s) const;
};

class ExprSort final : public InternedSort<graph::Expr, graph::ExprHash> {
 public:
  std::string print(engine::Value v) const override;
};

class ShapeSort final : public InternedSort<Shape, ShapeHash> {
 public:
  std::string print(engine::Value v) const override;
};

class ViewSort final : public InternedSort<graph::View, graph::ViewHash> {
 public:
  std::string print(engine::Value v) const override;
};

struct BodyHash {
  std::size_t operator()(const graph::Body& b) const {
    return static_cast<std::size_t>(b.key().low);
  }
};

class BodySort final : public InternedSort<graph::Body, BodyHash> {
 public:
  std::string print(engine::Value v) const override;
};

// The sorts as registered in one e-graph, with the builtin sorts their primitives use.
struct GraphSorts {
  engine::SortId expr = 0, shape = 0, view = 0, body = 0;
  engine::SortId i64 = 0, unit = 0, string = 0;
  std::shared_ptr<const ExprSort> expr_sort;
  std::shared_ptr<const ShapeSort> shape_sort;
  std::shared_ptr<const ViewSort> view_sort;
  std::shared_ptr<const BodySort> body_sort;
  std::shared_ptr<const engine::StringSort> string_sort;
};

// Registers Expr, Shape, View and Body and their primitives in `egraph`, which must already have the
// builtin sorts (engine::add_builtins; every dsl::Session has them). Call once per e-graph,
// before the program that uses them runs (rules/hlir.egg needs them).
GraphSorts register_graph_sorts(engine::EGraph& egraph);

// The primitives of each sort (expr_sort.cpp, view_sort.cpp); register_graph_sorts calls them.
void add_expr_primitives(engine::EGraph& egraph, const GraphSorts& sorts);
void add_shape_and_view_primitives(engine::EGraph& egraph, const GraphSorts& sorts);
// body-key (Body -> String), body-inputs (Body -> i64: input buffers), body-loops (Body -> i64:
// output loops), body-reduces (Body -> i64: reduction nodes), body-compute-nodes (Body -> i64),
// body-polynomials (Body -> i64: sin and exp2 nodes),
// body-text (Body -> String); body-inline (Body i64 Body -> Body), body-merge-inputs
// (Body i64 i64 -> Body), body-read-factor and body-row-read-factor (Body i64 Body -> i64)
// and body-online-softmax (Body -> Body) for the fusion rules; body-tile and body-reorder
// (Body i64 i64 -> Body), body-split-partial and body-split-combine (Body i64 -> Body),
// body-iterations and body-reduce-extent (Body -> i64), body-reduce-symbolic and
// body-folds-products (Body -> bool) for the schedule rules.
void add_body_primitives(engine::EGraph& egraph, const GraphSorts& sorts);
// one-op-body (an HLIR op's one-op Body from its attributes and input views, by arity),
// dtype-join (String String -> String, fails on different dtypes), shape-drop and shape-merge
// (Shape i64 -> Shape), view-has-mask (View -> bool); kernel_primitives.cpp, for
// kernel_rewrite.egg, dtype_prop.egg, matmul_flattening/ and the library rules.
void add_kernel_primitives(engine::EGraph& egraph, const GraphSorts& sorts);

// Fails a primitive call with `reason` (shown to the rule author when the call is an action's).
inline bool fail_because(const char* reason) {
  engine::primitive_failure_reason() = reason;
  return false;
}

// Wraps a primitive body so that a support::UserError from the graph library (bad text, zero
// divisor, overflow, bad view argument) becomes a primitive failure, never an escape from a
// query, with the error's message as the failure's reason.
template <class F>
engine::PrimitiveFn guarded(F body) {
  return [body](const engine::Value* args, std::size_t count, engine::Value& result) {
    try {
      return static_cast<bool>(body(args, count, result));
    } catch (const support::UserError& e) {
      engine::primitive_failure_reason() = e.message();  // for a rule author, when in an action
      return false;
    }
  };
}

}  // namespace kiln::compiler
