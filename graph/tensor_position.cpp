// GraphTensor position ops for attention: the causal (optionally sliding-window) mask and the
// rotary position embedding, both built in the graph so that sequence lengths may be symbolic.
#include <cmath>

#include "graph/tensor.hpp"
#include "graph/tensor_internal.hpp"

namespace kiln::graph {

using namespace detail;

GraphTensor GraphBuilder::causal_mask(const Expr& rows, const Expr& cols, const Expr& offset,
                                      std::optional<std::int64_t> window, DType dtype) {
  if (!is_float(dtype)) {
    fail("causal_mask", "needs a float dtype, got " + std::string(dtype_name(dtype)));
  }
  if (window && *window < 1) {
    fail("causal_mask", "window must be at least 1, got " + std::to_string(*window));
  }
  // Absolute position of each query (a column) and index of each key (a row).
  GraphTensor query = unsqueeze(iota(rows, DType::I64), 1) + dim_value(*this, offset, DType::I64);
  GraphTensor key = unsqueeze(iota(cols, DType::I64), 0);
  GraphTensor allowed = less_equal(key, query);  // [rows, cols]
  if (window) allowed = allowed * less(query - static_cast<double>(*window), key);
  // Log2 of 1 is 0 and of 0 is -inf: exact, and no inf * 0 anywhere.
  GraphTensor ones_zeros = cast(allowed, dtype);
  return add(make_node(Op::Log2, dtype, ones_zeros.shape()), {ones_zeros});
}

GraphTensor rotary(const GraphTensor& x, const GraphTensor& positions, double theta_base) {
  check_float("rotary", x);
  check_same_builder("rotary", x, positions);
  auto shapes = [&] { return describe(x) + " and positions " + describe(positions); };
  if (x.rank() < 2) fail("rotary", "x must be [..., seq, head_dim], got " + shapes());
  const std::size_t last = x.rank() - 1;
  auto head_dim = x.shape()[last].as_constant();
  if (!head_dim || *head_dim <= 0 || *head_dim % 2 != 0) {
    fail("rotary", "head_dim must be a positive even constant, got " + shapes());
  }
  if (positions.rank() != 1 || !(positions.shape()[0] == x.shape()[last - 1])) {
    fail("rotary", "positions must be [seq] with seq = dim " + std::to_string(last - 1) +
                       " of x, got " + shapes());
  }
  if (positions.dtype() == DType::Bool) {
    fail("rotary", "positions must be numbers, got " + shapes());
  }
  if (!(theta_base > 0.0) || !std::isfinite(theta_base)) {
    fail("rotary", "theta_base must be positive and finite, got " + std::to_string(theta_base));
  }
  const std::int64_t h = *head_dim / 2;
  // Tables in f32 at least (as Hugging Face does), then cast to x's dtype.
  const DType table = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  GraphBuilder& b = x.builder();
  // inv_freq[i] = base^(-2i / d) = 2^(i * (-2 log2(base) / d)).
  const double scale = -2.0 * std::log2(theta_base) / static_cast<double>(*head_dim);
  GraphTensor inv_freq = unary(Op::Exp2, b.iota(h, table) * scale);
  GraphTensor pos = positions.dtype() == table ? positions : cast(positions, table);
  GraphTensor angles = unsqueeze(pos, 1) * unsqueeze(inv_freq, 0);  // [seq, h]
  GraphTensor c = cos(angles);
  GraphTensor s = sin(angles);
  if (table != x.dtype()) {
    c = cast(c, x.dtype());
    s = cast(s, x.dtype());
  }
  GraphTensor x1 = slice(x, last, 0, h);
  GraphTensor x2 = slice(x, last, h, *head_dim);
  return concat({x1 * c - x2 * s, x2 * c + x1 * s}, last);
}

}  // namespace kiln::graph
