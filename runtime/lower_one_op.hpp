// The simplest HLIR -> LLIR lowering: one kernel per compute node, each its one-op Body
// (graph/body_lower.hpp). The baseline every optimized program is compared with, and the way
// to run any graph on any target before the search exists.
//
// Input nodes become input values, persistent ones state values. An Output node reading its
// producer through the producer's contiguous view names the producer's value (no copy);
// otherwise it is a copy kernel (its one-op Body) whose value it names. An Output named like a
// persistent Input is that state's value for the next run (graph/hlir.hpp).
#pragma once

#include "graph/hlir.hpp"
#include "runtime/llir.hpp"

namespace kiln::runtime {

// Lowers a valid graph (validate() is run first: its errors are UserErrors, as are those of
// one_op_body, e.g. a CustomOp). Steps follow the graph's topological order; labels are
// "%<node id> <Op>".
Llir lower_one_op(const graph::Graph& g);

}  // namespace kiln::runtime
