// GraphTensor elementwise ops: float functions, cast, comparisons and where (lowerings in
// tensor.hpp).
#include <cmath>
#include <numbers>

#include "graph/tensor.hpp"
#include "graph/tensor_internal.hpp"

namespace kiln::graph {

using namespace detail;

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
GraphTensor cos(const GraphTensor& x) {
  check_float("cos", x);
  return unary(Op::Sin, x + std::numbers::pi / 2);
}
GraphTensor rsqrt(const GraphTensor& x) {
  check_float("rsqrt", x);
  return unary(Op::Recip, unary(Op::Sqrt, x));
}

namespace {

// 1 / (1 + e^-x), with e^-x as one Exp2.
GraphTensor sigmoid_impl(const GraphTensor& x) {
  return unary(Op::Recip, unary(Op::Exp2, x * (-1.0 / std::numbers::ln2)) + 1.0);
}

}  // namespace

GraphTensor sigmoid(const GraphTensor& x) {
  check_float("sigmoid", x);
  return sigmoid_impl(x);
}
GraphTensor tanh(const GraphTensor& x) {
  check_float("tanh", x);
  return sigmoid_impl(x * 2.0) * 2.0 - 1.0;
}
GraphTensor silu(const GraphTensor& x) {
  check_float("silu", x);
  return x * sigmoid_impl(x);
}
GraphTensor gelu(const GraphTensor& x) {
  check_float("gelu", x);
  const double c = std::sqrt(2.0 / std::numbers::pi);
  return x * sigmoid_impl((x + x * x * x * 0.044715) * (2.0 * c));
}
GraphTensor relu(const GraphTensor& x) {
  check_float("relu", x);
  GraphTensor zero = broadcast_to("relu", scalar_like(x, 0.0), x.shape());
  return x * cast(less_than(zero, x), x.dtype());
}

GraphTensor cast(const GraphTensor& x, DType dtype) {
  return x.builder().add(make_node(Op::Cast, dtype, x.shape()), {x});
}

GraphTensor less(const GraphTensor& a, const GraphTensor& b) {
  return binary("less", Op::LessThan, a, b, DType::Bool);
}
GraphTensor greater(const GraphTensor& a, const GraphTensor& b) {
  auto [x, y] = broadcast("greater", a, b);
  return less_than(y, x);
}
GraphTensor less_equal(const GraphTensor& a, const GraphTensor& b) {
  auto [x, y] = broadcast("less_equal", a, b);
  return logical_not(less_than(y, x));
}
GraphTensor greater_equal(const GraphTensor& a, const GraphTensor& b) {
  auto [x, y] = broadcast("greater_equal", a, b);
  return logical_not(less_than(x, y));
}

namespace {

GraphTensor equal_impl(const std::string& op, const GraphTensor& a, const GraphTensor& b) {
  auto [x, y] = broadcast(op, a, b);
  GraphTensor not_less = logical_not(less_than(x, y));
  GraphTensor not_greater = logical_not(less_than(y, x));
  return x.builder().add(make_node(Op::Mul, DType::Bool, x.shape()), {not_less, not_greater});
}

}  // namespace

GraphTensor equal(const GraphTensor& a, const GraphTensor& b) {
  return equal_impl("equal", a, b);
}
GraphTensor not_equal(const GraphTensor& a, const GraphTensor& b) {
  return logical_not(equal_impl("not_equal", a, b));
}

GraphTensor where(const GraphTensor& cond, const GraphTensor& a, const GraphTensor& b) {
  if (cond.dtype() != DType::Bool) {
    fail("where", "the condition must be bool, got " + describe(cond));
  }
  auto [x0, y0] = broadcast("where", a, b);
  auto [c, x] = broadcast_shapes("where", cond, x0);
  GraphTensor y = broadcast_to("where", y0, c.shape());
  const std::size_t r = c.rank();
  // pairs[..., 0] = b, pairs[..., 1] = a: each value plus the other's padding (0).
  GraphTensor pairs = pad(unsqueeze_impl(y, r), r, 0, 1) + pad(unsqueeze_impl(x, r), r, 1, 0);
  GraphTensor flat = reshape(pairs, {View::contiguous(pairs.shape()).numel()});
  GraphBuilder& builder = c.builder();
  GraphTensor linear = builder.add(make_node(Op::Iota, DType::I64, c.shape()), {});
  GraphTensor index = linear * 2.0 + cast(c, DType::I64);
  return gather(flat, index);
}

}  // namespace kiln::graph
