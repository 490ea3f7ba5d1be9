// GraphTensor movement ops: views (permute, transpose, reshape, expand, unsqueeze, slice, pad)
// and the few that need nodes (contiguous, reshape that copies, pad with a value, concat).
#include <cmath>
#include <limits>

#include "graph/tensor.hpp"
#include "graph/tensor_internal.hpp"

namespace kiln::graph {

using namespace detail;

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
    fail("permute",
         "order " + text + "] is not a permutation of the dims of " + shape_text(x.shape()));
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
  return cast(x, x.dtype());
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
    fail("expand", "dim " + std::to_string(dim) + " of " + shape_text(x.shape()) + " has size " +
                       to_string(x.shape()[dim]) + ", not 1");
  }
  return x.with_view(x.view().expand(dim, size));
}

GraphTensor unsqueeze(const GraphTensor& x, std::size_t dim) {
  if (dim > x.rank()) {
    fail("unsqueeze",
         "dim " + std::to_string(dim) + " is out of range for shape " + shape_text(x.shape()));
  }
  return unsqueeze_impl(x, dim);
}

GraphTensor slice(const GraphTensor& x, std::size_t dim, const Expr& begin, const Expr& end) {
  check_axis("slice", x, dim);
  auto b = begin.as_constant();
  auto e = end.as_constant();
  auto n = x.shape()[dim].as_constant();
  if ((b && *b < 0) || (b && e && *e < *b) || (e && n && *e > *n)) {
    fail("slice", "[" + to_string(begin) + ", " + to_string(end) + ") is not within dim " +
                      std::to_string(dim) + " of " + shape_text(x.shape()));
  }
  return x.with_view(x.view().slice(dim, begin, end));
}

GraphTensor pad(const GraphTensor& x, std::size_t dim, const Expr& before, const Expr& after,
                double value) {
  check_axis("pad", x, dim);
  auto b = before.as_constant();
  auto a = after.as_constant();
  if ((b && *b < 0) || (a && *a < 0)) {
    fail("pad", "negative padding (" + to_string(before) + ", " + to_string(after) + ") for dim " +
                    std::to_string(dim) + " of " + shape_text(x.shape()));
  }
  if (std::isnan(value)) fail("pad", "a NaN pad value is not supported for " + describe(x));
  GraphTensor padded = x.with_view(x.view().pad(dim, before, after));
  if (value == 0.0) return padded;
  if (std::isinf(value) && !is_float(x.dtype())) {
    fail("pad", "an infinite pad value needs a float tensor, got " + describe(x));
  }
  // 1 inside, 0 in the padding: a constant 1 read through the same padding.
  GraphTensor ones = broadcast_to("pad", scalar_like(x, 1.0), x.shape());
  GraphTensor inside = ones.with_view(ones.view().pad(dim, before, after));
  if (std::isinf(value)) {
    GraphTensor log_inside = x.builder().add(make_node(Op::Log2, x.dtype(), padded.shape()),
                                             {inside});  // 0 inside, -inf in the padding
    return value < 0 ? padded + log_inside : padded - log_inside;
  }
  // 1 in the padding, 0 inside (where an inf or NaN of x stays as it is, as value * 0 is 0).
  GraphTensor one = broadcast_to("pad", scalar_like(x, 1.0), padded.shape());
  GraphTensor in_padding = cast(less_than(inside, one), x.dtype());
  return padded + in_padding * value;
}

GraphTensor concat(const std::vector<GraphTensor>& tensors, std::size_t dim) {
  if (tensors.empty()) fail("concat", "needs at least one tensor");
  const GraphTensor& first = tensors[0];
  auto all_shapes = [&] {
    std::string text;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      text += (i ? ", " : "") + describe(tensors[i]);
    }
    return text;
  };
  check_axis("concat", first, dim);
  Expr total(0);
  for (const GraphTensor& t : tensors) {
    check_same_builder("concat", first, t);
    bool ok = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (std::size_t d = 0; ok && d < t.rank(); ++d) {
      if (d != dim && !(t.shape()[d] == first.shape()[d])) ok = false;
    }
    if (!ok) {
      fail("concat", "along dim " + std::to_string(dim) +
                         " needs one dtype and equal sizes in "
                         "the other dims, got " +
                         all_shapes());
    }
    total = total + t.shape()[dim];
  }
  if (tensors.size() == 1) return first;
  // Each piece padded to the full size; the padding reads 0, so the sum is the concatenation.
  Expr begin(0);
  GraphTensor result = first;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Expr size = tensors[i].shape()[dim];
    GraphTensor piece = pad(tensors[i], dim, begin, total - begin - size);
    result = i == 0 ? piece : result + piece;
    begin = begin + size;
  }
  return result;
}

}  // namespace kiln::graph
