// The GraphTensor API (core); see tensor.hpp for the lowering of each op onto HLIR primops.
#include "graph/tensor.hpp"

#include <cmath>
#include <numbers>
#include <sstream>
#include <utility>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

[[noreturn]] void fail(const std::string& op, const std::string& message) {
  throw UserError(op + ": " + message);
}

Node make_node(Op op, DType dtype, std::vector<Expr> shape) {
  Node n;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  return n;
}

void check_axis(const std::string& op, const GraphTensor& x, std::size_t axis) {
  if (axis >= x.rank()) {
    fail(op, "axis " + std::to_string(axis) + " is out of range for shape " +
                 shape_text(x.shape()));
  }
}

void check_float(const std::string& op, const GraphTensor& x) {
  if (!is_float(x.dtype())) {
    fail(op, "needs a float tensor, got " + std::string(dtype_name(x.dtype())) + " " +
                 shape_text(x.shape()));
  }
}

// A view with `dim` of size 1 inserted (always possible without a copy for our views, but fall
// back to a copy to stay correct).
GraphTensor unsqueeze_impl(const GraphTensor& x, std::size_t dim) {
  std::vector<Expr> shape = x.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(dim), Expr(1));
  return reshape(x, shape);
}

bool is_one(const Expr& e) { return e.as_constant() == std::int64_t{1}; }

// Broadcasts a and b to one shape (see tensor.hpp), after checking builder and dtype.
std::pair<GraphTensor, GraphTensor> broadcast(const std::string& op, GraphTensor a,
                                              GraphTensor b) {
  auto shapes = [&] {
    return shape_text(a.shape()) + " and " + shape_text(b.shape());
  };
  if (&a.builder() != &b.builder()) fail(op, "tensors from two different builders");
  if (a.dtype() != b.dtype()) {
    fail(op, "dtypes differ: " + std::string(dtype_name(a.dtype())) + " " +
                 shape_text(a.shape()) + " and " + std::string(dtype_name(b.dtype())) + " " +
                 shape_text(b.shape()));
  }
  const std::string original = shapes();
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

GraphTensor binary(const std::string& op_text, Op op, const GraphTensor& a,
                   const GraphTensor& b) {
  auto [x, y] = broadcast(op_text, a, b);
  return x.builder().add(make_node(op, x.dtype(), x.shape()), {x, y});
}

GraphTensor unary(Op op, const GraphTensor& x) {
  return x.builder().add(make_node(op, x.dtype(), x.shape()), {x});
}

GraphTensor scalar_like(const GraphTensor& like, double value) {
  return like.builder().constant(value, like.dtype());
}

GraphTensor reduce(const std::string& op_text, Op op, const GraphTensor& x, std::size_t axis) {
  check_axis(op_text, x, axis);
  std::vector<Expr> shape = x.shape();
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  Node n = make_node(op, x.dtype(), std::move(shape));
  n.axis = axis;
  return x.builder().add(std::move(n), {x});
}

}  // namespace

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

GraphTensor exp(const GraphTensor& x) {
  check_float("exp", x);
  return unary(Op::Exp2, x * (1.0 / std::numbers::ln2));
}
GraphTensor log(const GraphTensor& x) {
  check_float("log", x);
  return unary(Op::Log2, x) * std::numbers::ln2;
}
GraphTensor sqrt(const GraphTensor& x) {
  check_float("sqrt", x);
  return unary(Op::Sqrt, x);
}
GraphTensor recip(const GraphTensor& x) {
  check_float("recip", x);
  return unary(Op::Recip, x);
}
GraphTensor sin(const GraphTensor& x) {
  check_float("sin", x);
  return unary(Op::Sin, x);
}
GraphTensor relu(const GraphTensor& x) {
  check_float("relu", x);
  auto [zero, y] = broadcast("relu", scalar_like(x, 0.0), x);
  GraphTensor positive =
      x.builder().add(make_node(Op::LessThan, DType::Bool, y.shape()), {zero, y});
  return x * x.builder().add(make_node(Op::Cast, x.dtype(), y.shape()), {positive});
}

GraphTensor sum(const GraphTensor& x, std::size_t axis) {
  return reduce("sum", Op::SumReduce, x, axis);
}
GraphTensor max(const GraphTensor& x, std::size_t axis) {
  return reduce("max", Op::MaxReduce, x, axis);
}
GraphTensor mean(const GraphTensor& x, std::size_t axis) {
  check_axis("mean", x, axis);
  check_float("mean", x);
  const Expr size = x.shape()[axis];
  GraphTensor total = sum(x, axis);
  if (auto n = size.as_constant()) {
    if (*n == 0) fail("mean", "axis " + std::to_string(axis) + " of " + shape_text(x.shape()) +
                                  " is empty");
    return total * (1.0 / static_cast<double>(*n));
  }
  // 1 / size computed in the graph: the largest index of an Iota over the axis, plus one.
  GraphTensor iota = x.builder().add(make_node(Op::Iota, x.dtype(), {size}), {});
  return total * recip(max(iota, 0) + 1.0);
}
GraphTensor softmax(const GraphTensor& x, std::size_t axis) {
  check_axis("softmax", x, axis);
  check_float("softmax", x);
  Node n = make_node(Op::Softmax, x.dtype(), x.shape());
  n.axis = axis;
  return x.builder().add(std::move(n), {x});
}

GraphTensor permute(const GraphTensor& x, const std::vector<std::size_t>& order) {
  std::vector<bool> seen(x.rank(), false);
  bool ok = order.size() == x.rank();
  for (std::size_t d : order) {
    if (!ok || d >= x.rank() || seen[d]) {
      ok = false;
      break;
    }
    seen[d] = true;
  }
  if (!ok) {
    std::string text = "[";
    for (std::size_t i = 0; i < order.size(); ++i) {
      text += (i ? ", " : "") + std::to_string(order[i]);
    }
    fail("permute", "order " + text + "] is not a permutation of the dims of " +
                        shape_text(x.shape()));
  }
  return x.with_view(x.view().permute(order));
}

GraphTensor transpose(const GraphTensor& x, std::size_t a, std::size_t b) {
  check_axis("transpose", x, a);
  check_axis("transpose", x, b);
  std::vector<std::size_t> order(x.rank());
  for (std::size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::swap(order[a], order[b]);
  return permute(x, order);
}

GraphTensor contiguous(const GraphTensor& x) {
  return x.builder().add(make_node(Op::Cast, x.dtype(), x.shape()), {x});
}

GraphTensor reshape(const GraphTensor& x, const std::vector<Expr>& shape) {
  Expr from = x.view().numel();
  Expr to = View::contiguous(shape).numel();
  auto a = from.as_constant();
  auto b = to.as_constant();
  if (a && b && *a != *b) {
    fail("reshape", "cannot reshape " + shape_text(x.shape()) + " (" + std::to_string(*a) +
                        " elements) to " + shape_text(shape) + " (" + std::to_string(*b) +
                        " elements)");
  }
  if (auto view = x.view().reshape(shape)) return x.with_view(std::move(*view));
  GraphTensor copy = contiguous(x);
  auto view = copy.view().reshape(shape);
  if (!view) {
    fail("reshape", "cannot reshape " + shape_text(x.shape()) + " to " + shape_text(shape));
  }
  return copy.with_view(std::move(*view));
}

GraphTensor expand(const GraphTensor& x, std::size_t dim, const Expr& size) {
  check_axis("expand", x, dim);
  if (!is_one(x.shape()[dim])) {
    fail("expand", "dim " + std::to_string(dim) + " of " + shape_text(x.shape()) +
                       " has size " + to_string(x.shape()[dim]) + ", not 1");
  }
  return x.with_view(x.view().expand(dim, size));
}

GraphTensor unsqueeze(const GraphTensor& x, std::size_t dim) {
  if (dim > x.rank()) {
    fail("unsqueeze", "dim " + std::to_string(dim) + " is out of range for shape " +
                          shape_text(x.shape()));
  }
  return unsqueeze_impl(x, dim);
}

GraphTensor matmul(const GraphTensor& a, const GraphTensor& b) {
  auto shapes = [&] { return shape_text(a.shape()) + " and " + shape_text(b.shape()); };
  if (&a.builder() != &b.builder()) fail("matmul", "tensors from two different builders");
  if (a.dtype() != b.dtype()) {
    fail("matmul", "dtypes differ: " + std::string(dtype_name(a.dtype())) + " and " +
                       std::string(dtype_name(b.dtype())) + " for " + shapes());
  }
  const std::size_t ra = a.rank();
  const std::size_t rb = b.rank();
  if (!((ra == 2 && rb == 2) || (ra == 3 && (rb == 2 || rb == 3)))) {
    fail("matmul", "expects [m, k] x [k, n] or [B, m, k] x [B, k, n] / [k, n], got " + shapes());
  }
  const Expr& ka = a.shape()[ra - 1];
  const Expr& kb = b.shape()[rb - 2];
  if (!(ka == kb)) {
    fail("matmul", "inner dims differ (" + to_string(ka) + " vs " + to_string(kb) + ") for " +
                       shapes());
  }
  if (ra == 3 && rb == 3 && !(a.shape()[0] == b.shape()[0]) && !is_one(a.shape()[0]) &&
      !is_one(b.shape()[0])) {
    fail("matmul", "batch dims differ for " + shapes());
  }
  // a: [..., m, k, 1]; b: [..., 1, k, n]; the product is summed over k.
  GraphTensor x = unsqueeze_impl(a, ra);
  GraphTensor y = unsqueeze_impl(b, rb - 2);
  return sum(x * y, ra - 1);
}

}  // namespace kiln::graph
