// Reordering output loops; see body_reorder.hpp.
#include "graph/body_reorder.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "graph/body_copy.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

Body reorder_loops(const Body& body, const std::vector<std::size_t>& order) {
  using support::UserError;
  const std::vector<Loop>& loops = body.loops();
  std::vector<bool> seen(loops.size(), false);
  if (order.size() != loops.size()) {
    throw UserError("an order of " + std::to_string(order.size()) + " loops for a Body of " +
                    std::to_string(loops.size()));
  }
  for (std::size_t k : order) {
    if (k >= loops.size() || seen[k]) throw UserError("the loop order is not a permutation");
    seen[k] = true;
  }
  // A serial loop stays where it is, and so does every loop relative to it: the loops before
  // it are a permutation of the loops before it, and it keeps its place.
  for (std::size_t k = 0; k < loops.size(); ++k) {
    if (loops[k].parallel) continue;
    for (std::size_t j = 0; j < loops.size(); ++j) {
      if ((j < k) != (order[j] < k) || (j == k) != (order[j] == k)) {
        throw UserError("loop " + loops[k].var +
                        " is serial: its iterations' order is what the Body computes");
      }
    }
  }
  BodyBuilder b(body.inputs());
  std::map<std::string, Expr> subst;
  for (std::size_t k : order) {
    subst[loops[k].var] = b.output_loop(loops[k].extent, loops[k].parallel);
  }
  std::map<std::string, Expr> extents;
  BodyCopier copier(b, body, subst, [](std::size_t k) { return k; }, Expr(1), extents);
  return copier.finish(body.output_aliases());
}

std::vector<std::size_t> move_loop_order(std::size_t loops, std::size_t from, std::size_t to) {
  if (from >= loops || to >= loops) {
    throw support::UserError("no loop " + std::to_string(std::max(from, to)) + " in a Body of " +
                             std::to_string(loops) + " loops");
  }
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < loops; ++k) {
    if (k != from) order.push_back(k);
  }
  order.insert(order.begin() + static_cast<std::ptrdiff_t>(to), from);
  return order;
}

}  // namespace kiln::graph
