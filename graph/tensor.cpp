// The GraphTensor API (core): the builder, broadcasting, arithmetic and matmul. The other ops
// live in tensor_elementwise, tensor_reduce, tensor_movement, tensor_index and tensor_position;
// see tensor.hpp for the lowering of each op onto HLIR primops.
#include "graph/tensor.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "graph/tensor_internal.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace detail {

void fail(const std::string& op, const std::string& message) {
  throw support::UserError(op + ": " + message);
}

Node make_node(Op op, DType dtype, std::vector<Expr> shape) {
  Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  return n;
}

std::string describe(const GraphTensor& x) {
  return std::string(dtype_name(x.dtype())) + " " + shape_text(x.shape());
}

void check_axis(const std::string& op, const GraphTensor& x, std::size_t axis) {
  if (axis >= x.rank()) {
    fail(op, "axis " + std::to_string(axis) + " is out of range for shape " +
                 shape_text(x.shape()));
  }
}

void check_float(const std::string& op, const GraphTensor& x) {
  if (!is_float(x.dtype())) fail(op, "needs a float tensor, got " + describe(x));
}

void check_same_builder(const std::string& op, const GraphTensor& a, const GraphTensor& b) {
  if (&a.builder() != &b.builder()) fail(op, "tensors from two different builders");
}

bool is_one(const Expr& e) { return e.as_constant() == std::int64_t{1}; }

// Always possible without a copy for our views, but reshape falls back to a copy to stay
// correct.
GraphTensor unsqueeze_impl(const GraphTensor& x, std::size_t dim) {
  std::vector<Expr> shape = x.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(dim), Expr(1));
  return reshape(x, shape);
}

std::pair<GraphTensor, GraphTensor> broadcast_shapes(const std::string& op, GraphTensor a,
                                                     GraphTensor b) {
  check_same_builder(op, a, b);
  const std::string original = shape_text(a.shape()) + " and " + shape_text(b.shape());
  while (a.rank() < b.rank()) a = unsqueeze_impl(a, 0);
  while (b.rank() < a.rank()) b = unsqueeze_impl(b, 0);
  for (std::size_t d = 0; d < a.rank(); ++d) {
    const Expr sa = a.shape()[d];
    const Expr sb = b.shape()[d];
    if (sa == sb) continue;
    if (is_one(sa)) {
      a = expand(a, d, sb);
    } else if (is_one(sb)) {
      b = expand(b, d, sa);
    } else {
      fail(op, "shapes " + original + " do not broadcast (dim " + std::to_string(d) + ": " +
                   to_string(sa) + " vs " + to_string(sb) + ")");
    }
  }
  return {a, b};
}

std::pair<GraphTensor, GraphTensor> broadcast(const std::string& op, GraphTensor a,
                                              GraphTensor b) {
  check_same_builder(op, a, b);
  if (a.dtype() != b.dtype()) fail(op, "dtypes differ: " + describe(a) + " and " + describe(b));
  return broadcast_shapes(op, std::move(a), std::move(b));
}

GraphTensor binary(const std::string& op_text, Op op, const GraphTensor& a, const GraphTensor& b,
                   DType dtype) {
  auto [x, y] = broadcast(op_text, a, b);
  return x.builder().add(make_node(op, dtype, x.shape()), {x, y});
}

GraphTensor binary(const std::string& op_text, Op op, const GraphTensor& a,
                   const GraphTensor& b) {
  return binary(op_text, op, a, b, a.dtype());
}

GraphTensor unary(Op op, const GraphTensor& x) {
  return x.builder().add(make_node(op, x.dtype(), x.shape()), {x});
}

GraphTensor scalar_like(const GraphTensor& like, double value) {
  return like.builder().constant(value, like.dtype());
}

GraphTensor broadcast_to(const std::string& op, GraphTensor x, const std::vector<Expr>& shape) {
  if (x.rank() > shape.size()) {
    fail(op, "cannot broadcast " + shape_text(x.shape()) + " to " + shape_text(shape));
  }
  while (x.rank() < shape.size()) x = unsqueeze_impl(x, 0);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (x.shape()[d] == shape[d]) continue;
    if (!is_one(x.shape()[d])) {
      fail(op, "cannot broadcast " + shape_text(x.shape()) + " to " + shape_text(shape));
    }
    x = expand(x, d, shape[d]);
  }
  return x;
}

GraphTensor less_than(const GraphTensor& a, const GraphTensor& b) {
  return a.builder().add(make_node(Op::LessThan, DType::Bool, a.shape()), {a, b});
}

GraphTensor logical_not(const GraphTensor& p) {
  GraphTensor yes = broadcast_to("not", p.builder().constant(1.0, DType::Bool), p.shape());
  return less_than(p, yes);
}

GraphTensor dim_value(GraphBuilder& b, const Expr& size, DType dtype) {
  if (auto n = size.as_constant()) return b.constant(static_cast<double>(*n), dtype);
  GraphTensor ones = unsqueeze_impl(b.constant(1.0, dtype), 0);
  return sum(expand(ones, 0, size), 0);
}

}  // namespace detail

using namespace detail;

std::string shape_text(const std::vector<Expr>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << to_string(shape[i]);
  out << ']';
  return out.str();
}

DType GraphTensor::dtype() const { return builder_->graph().node(node_).dtype; }

NodeId GraphTensor::output(const std::string& name) const {
  if (name.empty()) fail("output", "the name is empty");
  Node n = make_node(Op::Output, dtype(), shape());
  n.name = name;
  return builder_->add(std::move(n), {*this}).node();
}

GraphTensor GraphBuilder::input(const std::string& name, std::vector<Expr> shape, DType dtype) {
  if (name.empty()) fail("input", "the name is empty");
  Node n = make_node(Op::Input, dtype, shape);
  n.name = name;
  return GraphTensor(this, graph_.add_node(std::move(n)), View::contiguous(std::move(shape)));
}

GraphTensor GraphBuilder::constant(double value, DType dtype) {
  Node n = make_node(Op::Constant, dtype, {});
  n.value = value;
  return GraphTensor(this, graph_.add_node(std::move(n)), View::contiguous({}));
}

GraphTensor GraphBuilder::add(Node node, const std::vector<GraphTensor>& inputs) {
  for (const GraphTensor& t : inputs) {
    if (&t.builder() != this) fail(std::string(op_name(node.op)), "input from another builder");
  }
  std::vector<Expr> shape = node.shape;
  NodeId id = graph_.add_node(std::move(node));
  for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
    graph_.add_edge(inputs[slot].node(), id, slot, inputs[slot].view());
  }
  return GraphTensor(this, id, View::contiguous(std::move(shape)));
}

GraphTensor operator+(const GraphTensor& a, const GraphTensor& b) {
  return binary("add", Op::Add, a, b);
}
GraphTensor operator*(const GraphTensor& a, const GraphTensor& b) {
  return binary("mul", Op::Mul, a, b);
}
GraphTensor operator-(const GraphTensor& a, const GraphTensor& b) {
  broadcast("sub", a, b);  // checks with the op's own name before lowering
  return a + (-b);
}
GraphTensor operator/(const GraphTensor& a, const GraphTensor& b) {
  broadcast("div", a, b);
  check_float("div", a);
  return a * recip(b);
}
GraphTensor operator-(const GraphTensor& a) { return a * scalar_like(a, -1.0); }

GraphTensor operator+(const GraphTensor& a, double b) { return a + scalar_like(a, b); }
GraphTensor operator-(const GraphTensor& a, double b) { return a + scalar_like(a, -b); }
GraphTensor operator*(const GraphTensor& a, double b) { return a * scalar_like(a, b); }
GraphTensor operator/(const GraphTensor& a, double b) { return a / scalar_like(a, b); }
GraphTensor operator+(double a, const GraphTensor& b) { return scalar_like(b, a) + b; }
GraphTensor operator-(double a, const GraphTensor& b) { return scalar_like(b, a) - b; }
GraphTensor operator*(double a, const GraphTensor& b) { return scalar_like(b, a) * b; }
GraphTensor operator/(double a, const GraphTensor& b) { return scalar_like(b, a) / b; }

GraphTensor matmul(const GraphTensor& a, const GraphTensor& b) {
  auto shapes = [&] { return shape_text(a.shape()) + " and " + shape_text(b.shape()); };
  check_same_builder("matmul", a, b);
  if (a.dtype() != b.dtype()) {
    fail("matmul", "dtypes differ: " + std::string(dtype_name(a.dtype())) + " and " +
                       std::string(dtype_name(b.dtype())) + " for " + shapes());
  }
  const std::size_t ra = a.rank();
  const std::size_t rb = b.rank();
  if (ra < 2 || rb < 2) fail("matmul", "expects [..., m, k] x [..., k, n], got " + shapes());
  const Expr& ka = a.shape()[ra - 1];
  const Expr& kb = b.shape()[rb - 2];
  if (!(ka == kb)) {
    fail("matmul", "inner dims differ (" + to_string(ka) + " vs " + to_string(kb) + ") for " +
                       shapes());
  }
  // Batch dims, aligned on the right, must broadcast.
  for (std::size_t i = 3; i <= std::min(ra, rb); ++i) {
    const Expr& sa = a.shape()[ra - i];
    const Expr& sb = b.shape()[rb - i];
    if (!(sa == sb) && !is_one(sa) && !is_one(sb)) {
      fail("matmul", "batch dims differ (" + to_string(sa) + " vs " + to_string(sb) + ") for " +
                         shapes());
    }
  }
  // a: [..., m, k, 1]; b: [..., 1, k, n]; the product [..., m, k, n] is summed over k.
  GraphTensor product = unsqueeze_impl(a, ra) * unsqueeze_impl(b, rb - 2);
  return sum(product, product.rank() - 2);
}

}  // namespace kiln::graph
