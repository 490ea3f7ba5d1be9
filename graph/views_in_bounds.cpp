// Views inside their buffers at given dims; see views_in_bounds.hpp.
#include "graph/views_in_bounds.hpp"

#include <algorithm>
#include <cstdint>

#include "graph/view.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

std::string view_outside_buffer(const Graph& g, const DimValues& dims) {
  for (NodeId id : g.topological_order()) {
    for (const Graph::Input& in : g.inputs(id)) {
      const View& view = in.edge->view;
      std::int64_t least = evaluate(view.offset(), dims), most = least;
      bool reads = true;
      for (std::size_t d = 0; d < view.rank(); ++d) {
        std::int64_t lo = 0, hi = evaluate(view.shape()[d], dims);
        if (view.mask()) {
          lo = std::max(lo, evaluate((*view.mask())[d].lo, dims));
          hi = std::min(hi, evaluate((*view.mask())[d].hi, dims));
        }
        if (lo >= hi) {
          reads = false;  // an empty valid range: the view reads nothing
          break;
        }
        const std::int64_t stride = evaluate(view.strides()[d], dims);
        least += std::min(lo * stride, (hi - 1) * stride);
        most += std::max(lo * stride, (hi - 1) * stride);
      }
      if (!reads) continue;
      std::int64_t elements = 1;
      for (const Expr& d : g.node(in.producer).shape) elements *= evaluate(d, dims);
      if (least < 0 || most >= elements) {
        const Node& consumer = g.node(id);
        const Node& producer = g.node(in.producer);
        return "%" + std::to_string(id) + " (" + std::string(op_name(consumer.op)) + ") reads " +
               "positions " + std::to_string(least) + " to " + std::to_string(most) + " of %" +
               std::to_string(in.producer) + " (" + std::string(op_name(producer.op)) +
               (producer.name.empty() ? std::string() : " '" + producer.name + "'") + "), which " +
               "holds " + std::to_string(elements) + " elements (view " + to_string(view) + ")";
      }
    }
  }
  return "";
}

void check_views_in_bounds(const Graph& g, const DimValues& dims) {
  const std::string why = view_outside_buffer(g, dims);
  if (why.empty()) return;
  std::string at;
  for (const auto& [name, value] : dims) {
    at += (at.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  }
  throw support::UserError("the graph cannot run at " + at + ": " + why +
                           " (a dim past what a buffer holds, such as a position beyond a KV "
                           "cache's rows?)");
}

}  // namespace kiln::graph
