// GraphTensor indexing: gather and scatter of rows (HLIR Gather / Scatter), and the index
// constructors iota and arange (HLIR Iota).
#include "graph/tensor.hpp"
#include "graph/tensor_internal.hpp"

namespace kiln::graph {

using namespace detail;

namespace {

void check_indices(const std::string& op, const GraphTensor& indices) {
  if (!is_integer(indices.dtype())) {
    fail(op, "indices must be an integer tensor, got " + describe(indices));
  }
}

// indices.shape ++ data.shape[1:]: the shape of the rows `indices` of `data`.
std::vector<Expr> rows_shape(const GraphTensor& data, const GraphTensor& indices) {
  std::vector<Expr> shape = indices.shape();
  shape.insert(shape.end(), data.shape().begin() + 1, data.shape().end());
  return shape;
}

}  // namespace

GraphTensor gather(const GraphTensor& data, const GraphTensor& indices) {
  check_same_builder("gather", data, indices);
  check_indices("gather", indices);
  if (data.rank() == 0) fail("gather", "data needs at least one dim, got " + describe(data));
  return data.builder().add(make_node(Op::Gather, data.dtype(), rows_shape(data, indices)),
                            {data, indices});
}

GraphTensor scatter(const GraphTensor& dest, const GraphTensor& indices,
                    const GraphTensor& values) {
  check_same_builder("scatter", dest, indices);
  check_same_builder("scatter", dest, values);
  check_indices("scatter", indices);
  if (dest.rank() == 0) fail("scatter", "dest needs at least one dim, got " + describe(dest));
  if (values.dtype() != dest.dtype()) {
    fail("scatter", "dtypes differ: dest " + describe(dest) + " and values " + describe(values));
  }
  const std::vector<Expr> expected = rows_shape(dest, indices);
  if (values.shape() != expected) {
    fail("scatter", "values " + shape_text(values.shape()) + " should be " + shape_text(expected) +
                        " for dest " + shape_text(dest.shape()) + " and indices " +
                        shape_text(indices.shape()));
  }
  return dest.builder().add(make_node(Op::Scatter, dest.dtype(), dest.shape()),
                            {dest, indices, values});
}

GraphTensor GraphBuilder::iota(const Expr& size, DType dtype) {
  if (auto n = size.as_constant(); n && *n < 0) {
    fail("iota", "negative size " + to_string(size));
  }
  if (dtype == DType::Bool) fail("iota", "needs a numeric dtype, not bool");
  return add(make_node(Op::Iota, dtype, {size}), {});
}

GraphTensor GraphBuilder::arange(std::int64_t start, std::int64_t end, std::int64_t step,
                                 DType dtype) {
  if (step == 0) fail("arange", "step is 0");
  const std::int64_t span = step > 0 ? end - start : start - end;
  const std::int64_t magnitude = step > 0 ? step : -step;
  const std::int64_t count = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
  GraphTensor i = iota(count, dtype);
  if (step != 1) i = i * static_cast<double>(step);
  if (start != 0) i = i + static_cast<double>(start);
  return i;
}

}  // namespace kiln::graph
