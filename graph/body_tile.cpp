// Tiling an output loop; see body_tile.hpp.
#include "graph/body_tile.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph/body_copy.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

Body tile_loop(const Body& body, std::size_t loop, std::int64_t tile) {
  using support::UserError;
  const std::vector<Loop>& loops = body.loops();
  if (loop >= loops.size()) {
    throw UserError("no loop " + std::to_string(loop) + " to tile in a Body of " +
                    std::to_string(loops.size()) + " loops");
  }
  if (tile < 2) throw UserError("a tile of " + std::to_string(tile) + " iterations splits nothing");
  if (body.store_row()) throw UserError("the Body writes rows through an index (Scatter)");
  const Loop& tiled = loops[loop];
  for (const Scalar& s : body.scalars()) {
    if (s.op != ScalarOp::Reduce) continue;
    const std::vector<std::string> named = free_dims(s.extent);
    if (std::find(named.begin(), named.end(), tiled.var) != named.end()) {
      throw UserError("a reduction's extent `" + to_string(s.extent) + "` names loop " +
                      tiled.var);
    }
  }
  if (auto n = tiled.extent.as_constant(); n && *n <= tile) {
    throw UserError("loop " + tiled.var + " of " + std::to_string(*n) +
                    " iterations fits in one tile of " + std::to_string(tile));
  }

  BodyBuilder b(body.inputs());
  std::map<std::string, Expr> subst;
  Expr guard(1);
  for (std::size_t k = 0; k < loops.size(); ++k) {
    if (k != loop) {
      subst[loops[k].var] = b.output_loop(loops[k].extent, loops[k].parallel);
      continue;
    }
    const Expr outer = b.output_loop(ceil_div(tiled.extent, Expr(tile)), tiled.parallel);
    const Expr inner = b.output_loop(Expr(tile), tiled.parallel);
    const Expr i = outer * tile + inner;
    subst[tiled.var] = i;
    const std::optional<std::int64_t> n = tiled.extent.as_constant();
    if (!n || *n % tile != 0) guard = lt(i, tiled.extent);
  }
  std::map<std::string, Expr> extents;
  BodyCopier copier(b, body, subst, [](std::size_t k) { return k; }, Expr(1), extents);
  copier.guard_loads(guard);
  // The copier carries the source's guard over; the tile's own is and-ed in after.
  Body copied = copier.finish(body.output_aliases());
  if (guard == Expr(1)) return copied;
  b.set_guard(simplify(copied.guard() * guard));
  return b.finish(copied.value(), copied.output_size(), copied.store_index());
}

}  // namespace kiln::graph
