// The online-softmax rewrite (DESIGN §5): inside a Body, a softmax-weighted sum along an axis
//
//   Sum_j  e^(x_j - M) * (1 / Sum_r e^(x_r - M)) * y_j,      M = Max_r x_r
//
// (the shape a Softmax's one-op Body takes once inlined into the reduction that weights y by
// it: three passes over x) becomes one Reduce over j with the online-softmax monoid
// (graph/monoid_online_softmax.hpp) folding the pairs (x_j, y_j): one pass, no max first.
// Once x's producer (a product, a scale, a mask) is inlined too, the kernel streams over j
// and never materializes x. The product may hold its factors in any order; y_j is the product
// of the factors that are not the two softmax ones (1 when there are none).
// Rounding: a / l instead of Sum(e * (1/l) * y); every candidate is still checked.
#pragma once

#include <optional>
#include <string>

#include "graph/body.hpp"

namespace kiln::graph {

// The Body with every softmax-weighted sum replaced by its online form; nullopt, with the
// reason in `why`, when the Body holds none.
std::optional<Body> online_softmax(const Body& body, std::string& why);

}  // namespace kiln::graph
