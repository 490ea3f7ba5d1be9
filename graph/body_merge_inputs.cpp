// Merging two inputs of a Body; see body_merge_inputs.hpp.
#include "graph/body_merge_inputs.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/body_copy.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

Body merge_inputs(const Body& body, std::size_t keep, std::size_t drop) {
  const std::size_t n = body.inputs().size();
  if (keep >= n || drop >= n || keep == drop) {
    throw support::UserError("cannot merge inputs " + std::to_string(keep) + " and " +
                             std::to_string(drop) + " of a kernel with " + std::to_string(n));
  }
  if (body.inputs()[keep] != body.inputs()[drop]) {
    throw support::UserError("inputs " + std::to_string(keep) + " and " + std::to_string(drop) +
                             " have different dtypes");
  }
  auto slot_of = [keep, drop](std::size_t k) {
    if (k == drop) k = keep;
    return k > drop ? k - 1 : k;
  };
  std::vector<DType> inputs = body.inputs();
  inputs.erase(inputs.begin() + static_cast<std::ptrdiff_t>(drop));
  BodyBuilder b(inputs);
  std::map<std::string, Expr> extents;
  for (const Loop& l : body.loops()) b.output_loop(l.extent, l.parallel);
  BodyCopier copier(b, body, {}, slot_of, Expr(1), extents);
  std::optional<std::size_t> aliases = body.output_aliases();
  if (aliases) aliases = slot_of(*aliases);
  return copier.finish(aliases);
}

}  // namespace kiln::graph
