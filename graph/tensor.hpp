// The GraphTensor API (core): building HLIR graphs the way one writes a model in PyTorch.
//
// A GraphBuilder owns a graph::Graph. A GraphTensor is a cheap value handle: the builder, the
// node that produces the data, and the View through which the data is read. Movement ops
// (permute, transpose, expand, unsqueeze, slice, pad with 0, and reshape when the strides
// allow) only change the view; every other op adds HLIR nodes that read their inputs through
// their views. Implementation: tensor.cpp (builder, broadcasting, arithmetic, matmul),
// tensor_elementwise.cpp, tensor_reduce.cpp (with the norms), tensor_movement.cpp,
// tensor_index.cpp (gather, scatter, iota, arange), tensor_position.cpp (causal_mask, rotary).
//
// Lowering of the composite ops onto primops:
//   a - b        a + (-1) * b
//   a / b        a * recip(b)
//   exp(x)       Exp2(x * (1 / ln 2))
//   log(x)       Log2(x) * ln 2
//   cos(x)       Sin(x + pi/2)
//   rsqrt(x)     Recip(Sqrt(x))
//   sigmoid(x)   Recip(1 + Exp2(x * (-1 / ln 2)))   (exp overflow to inf gives 0, not NaN)
//   tanh(x)      2 * sigmoid(2x) - 1                (no inf/inf for large |x|)
//   silu(x)      x * sigmoid(x)
//   gelu(x)      the tanh approximation (PyTorch gelu(approximate='tanh')):
//                0.5 x (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi), computed with the
//                identity 0.5 (1 + tanh(z)) = sigmoid(2z) as x * sigmoid(2c (x + 0.044715 x^3))
//   relu(x)      x * Cast(LessThan(0, x)): a select by multiplication (relu(NaN) is 0, not NaN)
//   cast(x, t)   Cast
//   less(a, b)   LessThan(a, b); greater(a, b) = LessThan(b, a)
//   not p        LessThan(p, true) on Bool (1 only where p is 0)
//   a <= b       not (b < a); a >= b = not (a < b)
//   equal        (not a < b) * (not b < a)   (Mul on Bool is "and"); not_equal = not equal
//   where(c,a,b) Gather from the pairs (b, a) interleaved along a new last dim (built by pad +
//                Add), at index 2 * Iota + Cast(c, i64). Exact for inf and NaN in either
//                branch, unlike a * c + b * (1 - c) (inf * 0 is NaN, so masking scores with
//                -inf that way poisons every row). Only -0.0 in a selected value becomes +0.0.
//   mean(x, d)   sum(x, d) * (1 / size of d); for a symbolic size, 1 / size is computed in the
//                graph as recip(MaxReduce(Iota[size]) + 1)
//   min(x, d)    -max(-x, d) (u8 and bool through a Cast to i32)
//   variance     mean((x - mean(x))^2)
//   log_softmax  (x - m) - log(sum(exp(x - m))), m = max(x)
//   layer_norm   (x - mean) * rsqrt(variance + eps) over the last axis
//   rms_norm     x * rsqrt(mean(x^2) + eps) over the last axis
//   matmul       broadcast Mul + SumReduce over the shared axis
//   reshape      View::reshape; when it needs a copy, a Cast to the same dtype materializes the
//                tensor contiguously (chosen over Add(x, 0): exact for every dtype, keeps -0.0,
//                and one node with one input).
//   slice, pad   View::slice, View::pad (padding reads 0). A non-zero finite pad value v adds
//                v * Cast(not ones_padded), ones_padded being a padded view of a constant 1;
//                v = -inf adds Log2(Cast(ones_padded)) (0 inside, -inf outside), v = +inf
//                subtracts it.
//   concat       each input padded to the full size along the dim, then summed with Add
//   gather       Gather; scatter = Scatter
//   iota(n)      Iota; arange(start, end, step) = start + step * Iota
//   causal_mask  Log2(Cast(allowed)) with allowed = (k <= q + offset) [* (q + offset - w < k)],
//                q and k Iotas: exactly 0 where allowed and -inf elsewhere. A symbolic offset
//                enters the graph as SumReduce of a constant 1 expanded to [offset].
//   rotary       angles = Cast(positions) * Exp2(Iota[h] * (-2 log2(base) / d)), h = d/2;
//                out = concat(x1 cos - x2 sin, x2 cos + x1 sin), cos/sin as above
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
#include <cstdint>
#include <optional>
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

  // [0, 1, ..., size - 1] (HLIR Iota, 1-D). Floats hold integers exactly only up to their
  // precision (2^24 for f32).
  GraphTensor iota(const Expr& size, DType dtype = DType::I64);
  // start, start + step, ... up to but excluding end (as Python's range); step must not be 0.
  GraphTensor arange(std::int64_t start, std::int64_t end, std::int64_t step = 1,
                     DType dtype = DType::I64);
  // An additive attention mask [rows, cols] of `dtype` (float): 0 where query row i may see key
  // column j, -inf elsewhere. Query i sits at absolute position offset + i (offset = the number
  // of keys already in a KV cache) and sees keys j <= offset + i; with a sliding `window` w
  // (Gemma-3 local layers) also only keys j > offset + i - w, i.e. the last w positions.
  // Every row sees at least its own key when cols >= offset + rows, so softmax stays finite.
  GraphTensor causal_mask(const Expr& rows, const Expr& cols, const Expr& offset = Expr(0),
                          std::optional<std::int64_t> window = std::nullopt,
                          DType dtype = DType::F32);

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
GraphTensor cos(const GraphTensor& x);
GraphTensor rsqrt(const GraphTensor& x);
GraphTensor tanh(const GraphTensor& x);
GraphTensor sigmoid(const GraphTensor& x);
GraphTensor relu(const GraphTensor& x);
GraphTensor silu(const GraphTensor& x);
// The tanh approximation, as PyTorch's gelu(approximate='tanh') (GPT-2, Gemma).
GraphTensor gelu(const GraphTensor& x);

// `x` converted to `dtype` (a Cast node; rounding as the interpreter documents).
GraphTensor cast(const GraphTensor& x, DType dtype);

// Comparisons, with broadcasting as for operator+; both sides of one dtype (any dtype); the
// result is Bool. NaN: less and greater are false with a NaN operand (IEEE), but less_equal,
// greater_equal and equal are built as negations of LessThan and are true with one, and
// not_equal is false (IEEE says the opposite).
GraphTensor less(const GraphTensor& a, const GraphTensor& b);
GraphTensor greater(const GraphTensor& a, const GraphTensor& b);
GraphTensor less_equal(const GraphTensor& a, const GraphTensor& b);
GraphTensor greater_equal(const GraphTensor& a, const GraphTensor& b);
GraphTensor equal(const GraphTensor& a, const GraphTensor& b);
GraphTensor not_equal(const GraphTensor& a, const GraphTensor& b);
// `a` where `cond` (Bool) is true, else `b`; the three broadcast together, a and b share a
// dtype. Exact: an inf or NaN in the branch not taken does not leak (see the lowering above).
GraphTensor where(const GraphTensor& cond, const GraphTensor& a, const GraphTensor& b);

// Reductions drop dim `axis`; softmax and log_softmax keep the shape.
GraphTensor sum(const GraphTensor& x, std::size_t axis);
GraphTensor max(const GraphTensor& x, std::size_t axis);
GraphTensor min(const GraphTensor& x, std::size_t axis);
GraphTensor mean(const GraphTensor& x, std::size_t axis);
// The population variance: the mean of squared deviations from the mean (no Bessel factor).
GraphTensor variance(const GraphTensor& x, std::size_t axis);
GraphTensor softmax(const GraphTensor& x, std::size_t axis);
GraphTensor log_softmax(const GraphTensor& x, std::size_t axis);

// Normalization over the last axis, without weights (the caller, e.g. nn, multiplies by the
// weight and adds the bias): layer_norm = (x - mean) / sqrt(variance + eps),
// rms_norm = x / sqrt(mean(x^2) + eps).
GraphTensor layer_norm(const GraphTensor& x, double eps = 1e-5);
GraphTensor rms_norm(const GraphTensor& x, double eps = 1e-6);

// Movement ops.
GraphTensor permute(const GraphTensor& x, const std::vector<std::size_t>& order);
GraphTensor transpose(const GraphTensor& x, std::size_t a, std::size_t b);
GraphTensor reshape(const GraphTensor& x, const std::vector<Expr>& shape);
GraphTensor expand(const GraphTensor& x, std::size_t dim, const Expr& size);
GraphTensor unsqueeze(const GraphTensor& x, std::size_t dim);
// A contiguous copy of `x` (a Cast to the same dtype).
GraphTensor contiguous(const GraphTensor& x);
// Coordinates [begin, end) of dim `dim` (a view; no node).
GraphTensor slice(const GraphTensor& x, std::size_t dim, const Expr& begin, const Expr& end);
// `before` elements of `value` in front of dim `dim` and `after` behind it. Padding with 0 is a
// view; another value adds nodes (see the lowering above). A NaN value is a UserError.
GraphTensor pad(const GraphTensor& x, std::size_t dim, const Expr& before, const Expr& after,
                double value = 0.0);
// The tensors joined along `dim`: same rank and dtype, equal sizes in every other dim.
GraphTensor concat(const std::vector<GraphTensor>& tensors, std::size_t dim);

// Indexing (HLIR Gather / Scatter). gather: rows `indices` (an integer tensor, any shape) of
// `data`, shape indices.shape ++ data.shape[1:] (an embedding lookup when data is [vocab, d]).
// scatter: `dest` with rows indices[j] replaced by values[j] (values shape = indices.shape ++
// dest.shape[1:]; the last write to a row wins), e.g. writing new keys into a KV cache.
GraphTensor gather(const GraphTensor& data, const GraphTensor& indices);
GraphTensor scatter(const GraphTensor& dest, const GraphTensor& indices,
                    const GraphTensor& values);

// Rotary position embedding (RoPE) in the "rotate half" convention of LLaMA / Hugging Face:
// x is [..., seq, head_dim] (float, head_dim a constant even number), positions is [seq]
// (integer or float: the absolute position of each row). With h = head_dim / 2, x1 = x[..., :h],
// x2 = x[..., h:], inv_freq[i] = theta_base^(-2i / head_dim) and angle = position * inv_freq,
// out = x * cos + rotate_half(x) * sin, rotate_half(x) = concat(-x2, x1). The tables are built
// in the graph, so seq may be symbolic.
GraphTensor rotary(const GraphTensor& x, const GraphTensor& positions,
                   double theta_base = 10000.0);

// [..., m, k] x [..., k, n] -> [..., m, n]: any ranks >= 2; the batch dims (all but the last
// two) broadcast as for operator+ (so [B, m, k] x [k, n] shares the rhs).
GraphTensor matmul(const GraphTensor& a, const GraphTensor& b);

// `[seq, 64]`: shapes as printed in error messages.
std::string shape_text(const std::vector<Expr>& shape);

}  // namespace kiln::graph
