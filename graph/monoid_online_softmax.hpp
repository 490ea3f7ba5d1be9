// The online-softmax monoid (DESIGN §5): a softmax-weighted sum folded in one pass. The
// elements are pairs (x_j, y_j); the state (m, l, a) is the running max of x, the running sum
// of e^(x - m) and the running sum of e^(x - m) * y, so the result a / l equals
//   Sum_j e^(x_j - M) * y_j / Sum_j e^(x_j - M),  M = Max_j x_j,
// without a pass for M first. Combining two states rescales each by e^(m_i - m); the state
// whose max is the combined max keeps scale 1 (so one exp2 per combine: the other side's
// e^(min - max)), and states of -inf (a fully masked prefix, the identity) combine without an
// inf - inf reaching the result.
#pragma once

#include <cstddef>

#include "graph/body.hpp"

namespace kiln::graph {

// Adds the online-softmax monoid over `dtype` to `b` (once) and returns its index: elements
// (x, y), state (m, l, a), identity (-inf, 0, 0), lift (x, 1, y), finalize a / l.
std::size_t online_softmax_monoid(BodyBuilder& b, DType dtype);

}  // namespace kiln::graph
