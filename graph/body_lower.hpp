// The one-op Body of an HLIR compute node (DESIGN §5, kernel_rewrite): the kernel that computes
// exactly that node, reading input slot k from buffer k through the edge's View.
//
// Loops run over the node's output shape in order, except that Softmax's normalized axis is
// moved innermost so that its max and sum (which do not depend on that axis) are computed
// once per row. Reductions add their own loop (`r0`, `r1`, ...).
//
// Gather loads a row chosen by an index it loads (a dynamic row); Scatter is the in-place
// kernel that writes `values` into the rows `indices` of a buffer that already holds `dest`
// (output_aliases() == 0; the runtime copies dest there first unless the buffer is consumed).
// Its loops over the indices are serial, so that the last write to a row wins.
#pragma once

#include "graph/body.hpp"
#include "graph/hlir.hpp"

namespace kiln::graph {

// True for the ops that have a one-op Body: every op but Input and CustomOp. (An Output's Body
// copies its input into the output buffer, for outputs read through a non-contiguous view.)
bool has_one_op_body(Op op);

// The one-op Body of node `id`. A node without one, or a form not supported yet (a Gather
// whose table is padded along its rows, a Scatter whose destination is read through a
// non-contiguous view), is a UserError naming the node.
Body one_op_body(const Graph& g, NodeId id);

}  // namespace kiln::graph
