// GraphTensor reductions (sum, max, min, mean, variance), softmax / log_softmax and the norms
// built on them (lowerings in tensor.hpp).
#include "graph/tensor.hpp"
#include "graph/tensor_internal.hpp"

namespace kiln::graph {

using namespace detail;

namespace {

GraphTensor reduce(const std::string& op_text, Op op, const GraphTensor& x, std::size_t axis) {
  check_axis(op_text, x, axis);
  std::vector<Expr> shape = x.shape();
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  Node n = make_node(op, x.dtype(), std::move(shape));
  n.axis = axis;
  return x.builder().add(std::move(n), {x});
}

// The mean along `axis`, keeping the dim (size 1), ready to broadcast against x.
GraphTensor mean_keep(const GraphTensor& x, std::size_t axis) {
  return unsqueeze_impl(mean(x, axis), axis);
}

}  // namespace

GraphTensor sum(const GraphTensor& x, std::size_t axis) {
  return reduce("sum", Op::SumReduce, x, axis);
}
GraphTensor max(const GraphTensor& x, std::size_t axis) {
  return reduce("max", Op::MaxReduce, x, axis);
}
GraphTensor min(const GraphTensor& x, std::size_t axis) {
  check_axis("min", x, axis);
  // Negation saturates in u8 and bool, so those go through i32.
  if (x.dtype() == DType::U8 || x.dtype() == DType::Bool) {
    return cast(min(cast(x, DType::I32), axis), x.dtype());
  }
  return -max(-x, axis);
}
GraphTensor mean(const GraphTensor& x, std::size_t axis) {
  check_axis("mean", x, axis);
  check_float("mean", x);
  const Expr size = x.shape()[axis];
  GraphTensor total = sum(x, axis);
  if (auto n = size.as_constant()) {
    if (*n == 0)
      fail("mean", "axis " + std::to_string(axis) + " of " + shape_text(x.shape()) + " is empty");
    return total * (1.0 / static_cast<double>(*n));
  }
  // 1 / size computed in the graph: the largest index of an Iota over the axis, plus one.
  GraphTensor iota = x.builder().add(make_node(Op::Iota, x.dtype(), {size}), {});
  return total * recip(max(iota, 0) + 1.0);
}
GraphTensor variance(const GraphTensor& x, std::size_t axis) {
  check_axis("variance", x, axis);
  check_float("variance", x);
  GraphTensor deviation = x - mean_keep(x, axis);
  return mean(deviation * deviation, axis);
}
GraphTensor softmax(const GraphTensor& x, std::size_t axis) {
  check_axis("softmax", x, axis);
  check_float("softmax", x);
  Node n = make_node(Op::Softmax, x.dtype(), x.shape());
  n.axis = axis;
  return x.builder().add(std::move(n), {x});
}
GraphTensor log_softmax(const GraphTensor& x, std::size_t axis) {
  check_axis("log_softmax", x, axis);
  check_float("log_softmax", x);
  GraphTensor shifted = x - unsqueeze_impl(max(x, axis), axis);
  return shifted - unsqueeze_impl(log(sum(exp(shifted), axis)), axis);
}

GraphTensor layer_norm(const GraphTensor& x, double eps) {
  check_float("layer_norm", x);
  if (x.rank() == 0) fail("layer_norm", "needs at least one dim, got " + describe(x));
  const std::size_t last = x.rank() - 1;
  GraphTensor centered = x - mean_keep(x, last);
  GraphTensor var = mean(centered * centered, last);
  return centered * unsqueeze_impl(rsqrt(var + eps), last);
}
GraphTensor rms_norm(const GraphTensor& x, double eps) {
  check_float("rms_norm", x);
  if (x.rank() == 0) fail("rms_norm", "needs at least one dim, got " + describe(x));
  const std::size_t last = x.rank() - 1;
  return x * unsqueeze_impl(rsqrt(mean(x * x, last) + eps), last);
}

}  // namespace kiln::graph
