// Whether a Body folds products; see body_folds_products.hpp.
#include "graph/body_folds_products.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kiln::graph {

bool folds_products(const Body& body) {
  const std::vector<Scalar>& scalars = body.scalars();
  // Input slots loaded below each node, as a bit set (slots past 63 share the last bit).
  std::vector<std::uint64_t> slots(scalars.size(), 0);
  for (std::size_t id = 0; id < scalars.size(); ++id) {  // arguments come before their users
    const Scalar& s = scalars[id];
    if (s.op == ScalarOp::Load) slots[id] |= std::uint64_t{1} << std::min<std::size_t>(s.slot, 63);
    for (ScalarId a : s.args) slots[id] |= slots[a];
    if (s.op == ScalarOp::Reduce && (slots[id] & (slots[id] - 1)) != 0) return true;
  }
  return false;
}

}  // namespace kiln::graph
