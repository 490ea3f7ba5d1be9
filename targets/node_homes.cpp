// Node placement for code generators; see node_homes.hpp.
#include "targets/node_homes.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"

namespace kiln::targets {

using graph::Expr;
using graph::Scalar;
using graph::ScalarId;
using graph::ScalarOp;

NodeHomes::NodeHomes(const graph::Body& body) : body_(body) {
  const std::vector<Scalar>& nodes = body.scalars();
  for (const graph::Loop& loop : body.loops()) loop_vars_.insert(loop.var);
  for (const Scalar& s : nodes) {
    if (s.op == ScalarOp::Reduce) loop_vars_.insert(s.var);
  }

  live_.assign(nodes.size(), false);
  std::vector<ScalarId> stack{body.value()};
  if (body.store_row()) stack.push_back(*body.store_row());
  while (!stack.empty()) {
    ScalarId id = stack.back();
    stack.pop_back();
    if (live_[id]) continue;
    live_[id] = true;
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }

  // Loop variables each live node depends on (ids are topological: args come first).
  auto add_vars = [&](const Expr& e, std::set<std::string>& out) {
    for (const std::string& d : graph::free_dims(e)) {
      if (loop_vars_.count(d)) out.insert(d);
    }
  };
  deps_.assign(nodes.size(), {});
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (!live_[id]) continue;
    const Scalar& s = nodes[id];
    std::set<std::string>& d = deps_[id];
    for (ScalarId a : s.args) d.insert(deps_[a].begin(), deps_[a].end());
    if (s.op == ScalarOp::Load || s.op == ScalarOp::Index) {
      for (const Expr* e : {&s.index, &s.valid, &s.row_stride, &s.row_count}) add_vars(*e, d);
    }
    if (s.op == ScalarOp::Reduce) {
      KILN_ASSERT(!reduce_of_var_.count(s.var), "Body: two reductions over " + s.var);
      reduce_of_var_[s.var] = static_cast<ScalarId>(id);
      d.erase(s.var);
      add_vars(s.extent, d);
    }
  }

  scopes_.push_back(Scope{0, 0, std::nullopt});
  for (std::size_t k = 0; k < body.loops().size(); ++k) scopes_.push_back(Scope{k, k + 1, {}});
  home_.assign(nodes.size(), std::nullopt);
  for (std::size_t id = 0; id < nodes.size(); ++id) {
    if (live_[id]) homed_[place(static_cast<ScalarId>(id))].push_back(static_cast<ScalarId>(id));
  }
  for (auto& [scope, ids] : homed_) std::sort(ids.begin(), ids.end());
}

std::size_t NodeHomes::scope_of_var(const std::string& var) {
  for (std::size_t k = 0; k < body_.loops().size(); ++k) {
    if (body_.loops()[k].var == var) return k + 1;
  }
  ScalarId r = reduce_of_var_.at(var);
  auto it = reduce_scope_.find(r);
  if (it != reduce_scope_.end()) return it->second;
  std::size_t parent = place(r);
  scopes_.push_back(Scope{parent, scopes_[parent].depth + 1, r});
  reduce_scope_[r] = scopes_.size() - 1;
  return scopes_.size() - 1;
}

std::size_t NodeHomes::place(ScalarId id) {
  if (home_[id]) return *home_[id];
  std::size_t best = 0;
  for (const std::string& v : deps_[id]) {
    std::size_t s = scope_of_var(v);
    if (scopes_[s].depth > scopes_[best].depth) best = s;
  }
  home_[id] = best;
  return best;
}

const std::vector<ScalarId>& NodeHomes::homed(std::size_t scope) const {
  static const std::vector<ScalarId> none;
  auto it = homed_.find(scope);
  return it == homed_.end() ? none : it->second;
}

std::size_t NodeHomes::reduce_scope(ScalarId reduce) const {
  auto it = reduce_scope_.find(reduce);
  return it == reduce_scope_.end() ? 0 : it->second;
}

bool NodeHomes::has_child_scope(std::size_t scope) const {
  for (std::size_t s = 0; s < scopes_.size(); ++s) {
    if (s != scope && scopes_[s].parent == scope && scopes_[s].reduce) return true;
  }
  return false;
}

bool NodeHomes::mentions_loop_var(const Expr& e) const {
  for (const std::string& d : graph::free_dims(e)) {
    if (loop_vars_.count(d)) return true;
  }
  return false;
}

std::set<ScalarId> nodes_under(const std::vector<Scalar>& nodes, ScalarId root) {
  std::set<ScalarId> seen;
  std::vector<ScalarId> stack{root};
  while (!stack.empty()) {
    const ScalarId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }
  return seen;
}

}  // namespace kiln::targets
