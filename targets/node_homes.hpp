// Where each node of a Body is computed (DESIGN §5): the innermost loop its variables need
// (loop-invariant code motion), shared by the code generators of every target.
//
// Scopes: 0 is outside every loop, 1..L inside output loop 0..L-1; each Reduce adds one, a
// child of the scope the Reduce node lives in, which holds the nodes that depend on the
// reduction's variable.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/body.hpp"

namespace kiln::targets {

class NodeHomes {
 public:
  struct Scope {
    std::size_t parent = 0;
    std::size_t depth = 0;
    std::optional<graph::ScalarId> reduce;  // the Reduce whose loop this is
  };

  explicit NodeHomes(const graph::Body& body);

  // Nodes the value (and a Scatter's store row) needs.
  bool live(graph::ScalarId id) const { return live_[id]; }
  // Whether `name` is a loop variable (of an output loop or a reduction), not a kernel dim.
  bool is_loop_var(const std::string& name) const { return loop_vars_.count(name) != 0; }
  // Loop variables that node `id` depends on.
  const std::set<std::string>& deps(graph::ScalarId id) const { return deps_[id]; }
  const std::vector<Scope>& scopes() const { return scopes_; }
  // The scope node `id` is computed in.
  std::size_t home(graph::ScalarId id) const { return *home_[id]; }
  // The live nodes computed in `scope`, in topological (id) order.
  const std::vector<graph::ScalarId>& homed(std::size_t scope) const;
  // The scope of a Reduce's own loop (0 if it has none: nothing depends on its variable).
  std::size_t reduce_scope(graph::ScalarId reduce) const;
  // Whether a reduction's loop is nested directly in `scope`.
  bool has_child_scope(std::size_t scope) const;
  // Whether expression `e` mentions a loop variable.
  bool mentions_loop_var(const graph::Expr& e) const;

 private:
  std::size_t scope_of_var(const std::string& var);
  std::size_t place(graph::ScalarId id);

  const graph::Body& body_;
  std::set<std::string> loop_vars_;
  std::vector<bool> live_;
  std::vector<std::set<std::string>> deps_;
  std::map<std::string, graph::ScalarId> reduce_of_var_;
  std::vector<Scope> scopes_;
  std::map<graph::ScalarId, std::size_t> reduce_scope_;
  std::vector<std::optional<std::size_t>> home_;
  std::map<std::size_t, std::vector<graph::ScalarId>> homed_;
};

// The nodes under `root` (itself included), by id.
std::set<graph::ScalarId> nodes_under(const std::vector<graph::Scalar>& nodes,
                                      graph::ScalarId root);

}  // namespace kiln::targets
