// Deterministic dumps of an e-graph: e-classes numbered by first appearance, e-nodes in table
// and row order, so two runs of the same program give byte-identical files.
#pragma once

#include <optional>
#include <string>

#include "engine/egraph.hpp"

namespace kiln::engine {

// Graphviz DOT: one cluster per e-class, one node per e-node, edges to child e-classes.
// With a root, only the e-classes reachable from it.
std::string to_dot(const EGraph& egraph, std::optional<Value> root = std::nullopt);
// JSON: {"classes": [{"id", "sort", "nodes": [{"op", "children": [...], "literals": [...]}]}]}.
std::string to_json(const EGraph& egraph, std::optional<Value> root = std::nullopt);

}  // namespace kiln::engine
