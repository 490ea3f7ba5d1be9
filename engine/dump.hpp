// Deterministic dumps of an e-graph: e-classes numbered by first appearance, e-nodes in table
// and row order, so two runs of the same program give byte-identical files.
#pragma once

#include <string>

#include "engine/egraph.hpp"

namespace kiln::engine {

// Graphviz DOT: one cluster per e-class, one node per e-node, edges to child e-classes.
std::string to_dot(const EGraph& egraph);
// JSON: {"classes": [{"id", "sort", "nodes": [{"op", "children": [...] }]}]}.
std::string to_json(const EGraph& egraph);

}  // namespace kiln::engine
