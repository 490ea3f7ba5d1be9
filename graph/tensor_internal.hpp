// Helpers shared by the GraphTensor op files (tensor*.cpp); not part of the public API.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "graph/tensor.hpp"

namespace kiln::graph::detail {

// Throws the UserError `op: message`.
[[noreturn]] void fail(const std::string& op, const std::string& message);

Node make_node(Op op, DType dtype, std::vector<Expr> shape);

// `dtype shape`, e.g. `f32 [2, 3]`, for error messages.
std::string describe(const GraphTensor& x);

void check_axis(const std::string& op, const GraphTensor& x, std::size_t axis);
void check_float(const std::string& op, const GraphTensor& x);
void check_same_builder(const std::string& op, const GraphTensor& a, const GraphTensor& b);

bool is_one(const Expr& e);

// `x` with a dim of size 1 inserted at `dim` (no range check).
GraphTensor unsqueeze_impl(const GraphTensor& x, std::size_t dim);

// Broadcasts a and b to one shape (see tensor.hpp) after checking builder and dtype.
std::pair<GraphTensor, GraphTensor> broadcast(const std::string& op, GraphTensor a, GraphTensor b);
// The same, ignoring dtypes (for where's Bool condition).
std::pair<GraphTensor, GraphTensor> broadcast_shapes(const std::string& op, GraphTensor a,
                                                     GraphTensor b);

// A node of `op` over the broadcast a and b with output dtype `dtype`.
GraphTensor binary(const std::string& op_text, Op op, const GraphTensor& a, const GraphTensor& b,
                   DType dtype);
GraphTensor binary(const std::string& op_text, Op op, const GraphTensor& a, const GraphTensor& b);
GraphTensor unary(Op op, const GraphTensor& x);
// A rank-0 constant of x's dtype.
GraphTensor scalar_like(const GraphTensor& like, double value);
// `x` read through a view broadcast to `shape` (x a scalar or of a shape that broadcasts).
GraphTensor broadcast_to(const std::string& op, GraphTensor x, const std::vector<Expr>& shape);
// LessThan(a, b) on tensors already of one shape and dtype.
GraphTensor less_than(const GraphTensor& a, const GraphTensor& b);
// Logical not of a Bool tensor: LessThan(p, true).
GraphTensor logical_not(const GraphTensor& p);
// The value of `size` as a rank-0 tensor of `dtype`: a constant when it is one, otherwise a
// SumReduce of a constant 1 expanded to [size] (0 for an empty dim).
GraphTensor dim_value(GraphBuilder& b, const Expr& size, DType dtype);

}  // namespace kiln::graph::detail
