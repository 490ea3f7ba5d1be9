// The GraphTensor API (core): building HLIR graphs the way one writes a model in PyTorch.
//
// A GraphBuilder owns a graph::Graph. A GraphTensor is a cheap value handle: the builder, the
// node that produces the data, and the View through which the data is read. Movement ops
// (permute, transpose, expand, unsqueeze, and reshape when the strides allow) only change the
// view; every other op adds HLIR nodes that read their inputs through their views.
//
// Lowering of the composite ops onto primops:
//   a - b        a + (-1) * b
//   a / b        a * recip(b)
//   exp(x)       Exp2(x * (1 / ln 2))
//   log(x)       Log2(x) * ln 2
//   relu(x)      x * Cast(LessThan(0, x)): a select by multiplication (relu(NaN) is 0, not NaN)
//   mean(x, d)   sum(x, d) * (1 / size of d); for a symbolic size, 1 / size is computed in the
//                graph as recip(MaxReduce(Iota[size]) + 1)
//   matmul       broadcast Mul + SumReduce over the shared axis
//   reshape      View::reshape; when it needs a copy, a Cast to the same dtype materializes the
//                tensor contiguously (chosen over Add(x, 0): exact for every dtype, keeps -0.0,
//                and one node with one input).
// A scalar constant is a rank-0 Constant node broadcast to the shape needed by a view.
//
// Broadcasting (binary ops): shapes are aligned on the right; a missing leading dim is added
// as size 1, and a dim of (the constant) size 1 is expanded to the other side's size. Other
// sizes must be equal (structurally, on the canonical Expr form).
//
// Errors. Misuse (mismatched shapes or dtypes, a bad axis, a non-float input to a float op,
// tensors from two builders) is a support::UserError naming the op and the shapes.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/hlir.hpp"
#include "graph/view.hpp"

namespace kiln::graph {

class GraphBuilder;

// A symbolic tensor in a GraphBuilder's graph. Copyable; valid while its builder lives.
class GraphTensor {
 public:
  GraphBuilder& builder() const { return *builder_; }
  NodeId node() const { return node_; }
  const View& view() const { return view_; }
  const std::vector<Expr>& shape() const { return view_.shape(); }
  std::size_t rank() const { return view_.rank(); }
  DType dtype() const;

  // The same data read through another view (for movement ops; `view` must fit the producer).
  GraphTensor with_view(View view) const { return GraphTensor(builder_, node_, std::move(view)); }

  // Marks this tensor as a graph output called `name`; returns the Output node.
  NodeId output(const std::string& name) const;

 private:
  friend class GraphBuilder;
  GraphTensor(GraphBuilder* builder, NodeId node, View view)
      : builder_(builder), node_(node), view_(std::move(view)) {}

  GraphBuilder* builder_;
  NodeId node_;
  View view_;
};

class GraphBuilder {
 public:
  GraphBuilder() = default;
  // Tensors point at their builder, so it stays where it was made.
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // A named graph input.
  GraphTensor input(const std::string& name, std::vector<Expr> shape, DType dtype = DType::F32);
  // A scalar (rank 0) constant; broadcast it with unsqueeze/expand, or let binary ops do so.
  GraphTensor constant(double value, DType dtype = DType::F32);

  // Ends the current chunk: ops added from now on start the next one (see Graph::add_break).
  // Put one between repeated blocks (decoder layers) so the compiler searches each distinct
  // block once.
  void graph_break() { graph_.add_break(); }

  const Graph& graph() const { return graph_; }
  Graph& graph() { return graph_; }

  // Adds a node reading `inputs` (in slot order) through their views; returns a contiguous
  // tensor of the node's output. Used by the ops; exposed for ops built outside this file.
  GraphTensor add(Node node, const std::vector<GraphTensor>& inputs);

 private:
  Graph graph_;
};

// Elementwise arithmetic with broadcasting; a double operand is a constant of the other's dtype.
GraphTensor operator+(const GraphTensor& a, const GraphTensor& b);
GraphTensor operator-(const GraphTensor& a, const GraphTensor& b);
GraphTensor operator*(const GraphTensor& a, const GraphTensor& b);
GraphTensor operator/(const GraphTensor& a, const GraphTensor& b);
GraphTensor operator+(const GraphTensor& a, double b);
GraphTensor operator-(const GraphTensor& a, double b);
GraphTensor operator*(const GraphTensor& a, double b);
GraphTensor operator/(const GraphTensor& a, double b);
GraphTensor operator+(double a, const GraphTensor& b);
GraphTensor operator-(double a, const GraphTensor& b);
GraphTensor operator*(double a, const GraphTensor& b);
GraphTensor operator/(double a, const GraphTensor& b);
GraphTensor operator-(const GraphTensor& a);

// Elementwise functions (float dtypes only).
GraphTensor exp(const GraphTensor& x);
GraphTensor log(const GraphTensor& x);
GraphTensor sqrt(const GraphTensor& x);
GraphTensor recip(const GraphTensor& x);
GraphTensor sin(const GraphTensor& x);
GraphTensor relu(const GraphTensor& x);

// Reductions drop dim `axis`; softmax keeps the shape.
GraphTensor sum(const GraphTensor& x, std::size_t axis);
GraphTensor max(const GraphTensor& x, std::size_t axis);
GraphTensor mean(const GraphTensor& x, std::size_t axis);
GraphTensor softmax(const GraphTensor& x, std::size_t axis);

// Movement ops.
GraphTensor permute(const GraphTensor& x, const std::vector<std::size_t>& order);
GraphTensor transpose(const GraphTensor& x, std::size_t a, std::size_t b);
GraphTensor reshape(const GraphTensor& x, const std::vector<Expr>& shape);
GraphTensor expand(const GraphTensor& x, std::size_t dim, const Expr& size);
GraphTensor unsqueeze(const GraphTensor& x, std::size_t dim);
// A contiguous copy of `x` (a Cast to the same dtype).
GraphTensor contiguous(const GraphTensor& x);

// [m, k] x [k, n] -> [m, n]; [B, m, k] x [B, k, n] (or [k, n]) -> [B, m, n].
GraphTensor matmul(const GraphTensor& a, const GraphTensor& b);

// `[seq, 64]`: shapes as printed in error messages.
std::string shape_text(const std::vector<Expr>& shape);

}  // namespace kiln::graph
