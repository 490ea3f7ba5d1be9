// Row-state reductions: the plan; see row_state.hpp.
#include "targets/cpu/row_state.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "targets/cpu/tiled_product.hpp"

namespace kiln::targets::cpu {

using graph::Body;
using graph::Monoid;
using graph::Scalar;
using graph::ScalarId;
using graph::ScalarOp;

namespace {

// The Param slots a monoid expression reads.
std::set<std::size_t> params_read(const std::vector<Scalar>& nodes, ScalarId root) {
  std::set<std::size_t> slots;
  for (ScalarId id : nodes_under(nodes, root)) {
    if (nodes[id].op == ScalarOp::Param) slots.insert(nodes[id].slot);
  }
  return slots;
}

bool trivial(const Scalar& s) { return s.op == ScalarOp::Const || s.op == ScalarOp::Param; }

// Fills in which elements, lifts and state components are the same for every column, and the
// shared parts of the combine expressions.
void plan_monoid(const Body& body, const NodeHomes& homes, RowStatePlan& plan) {
  const std::vector<Scalar>& nodes = body.scalars();
  const Scalar& reduce = nodes[plan.reduce];
  const Monoid& m = body.monoids().at(reduce.slot);
  for (ScalarId e : reduce.args) plan.shared_element.push_back(!homes.deps(e).count(plan.column_var));
  for (ScalarId lift : m.lift) {
    bool shared = true;
    for (std::size_t slot : params_read(nodes, lift)) shared = shared && plan.shared_element[slot];
    plan.shared_lift.push_back(shared);
  }
  // A combine's params: state components 0..S-1, then lifts S..2S-1.
  const std::size_t states = m.identity.size();
  auto shared_param = [&](std::size_t slot) {
    return slot < states ? bool(plan.shared_state[slot]) : bool(plan.shared_lift[slot - states]);
  };
  // Greatest fixed point: a component is shared while everything its combine reads is.
  plan.shared_state.assign(states, true);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t k = 0; k < states; ++k) {
      if (!plan.shared_state[k]) continue;
      for (std::size_t slot : params_read(nodes, m.combine[k])) {
        if (!shared_param(slot)) {
          plan.shared_state[k] = false;
          changed = true;
          break;
        }
      }
    }
  }
  std::set<ScalarId> shared, seen;
  std::vector<ScalarId> stack(m.combine.begin(), m.combine.end());
  while (!stack.empty()) {
    const ScalarId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    if (trivial(nodes[id])) continue;
    const std::set<std::size_t> slots = params_read(nodes, id);
    if (std::all_of(slots.begin(), slots.end(), shared_param)) shared.insert(id);
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }
  plan.shared_combine.assign(shared.begin(), shared.end());
}

// Whether the reduction folds in blocks of keys (row_state.hpp): the online-softmax monoid in
// f32 (its exps are the prelude's vector kiln_exp2f), its score the same for every column and
// its weighted value not, and no per-column node reading a per-key shared one (those are
// computed in the scores' loop, before the weights' loop that reads the per-column ones).
bool folds_in_blocks(const Body& body, const RowStatePlan& plan) {
  const Scalar& reduce = body.scalars()[plan.reduce];
  const Monoid& m = body.monoids().at(reduce.slot);
  if (m.name != "online_softmax" || m.elements != 2 || m.identity.size() != 3 ||
      m.lift.size() != 3 || reduce.dtype != graph::DType::F32) {
    return false;
  }
  if (plan.shared_element != std::vector<bool>{true, false} ||
      plan.shared_state != std::vector<bool>{true, true, false}) {
    return false;
  }
  const std::set<ScalarId> shared(plan.shared_nodes.begin(), plan.shared_nodes.end());
  for (ScalarId n : plan.column_nodes) {
    for (ScalarId a : body.scalars()[n].args) {
      if (shared.count(a)) return false;
    }
  }
  return true;
}

// Splits the shared nodes of a blocked fold into the inner reductions with what they read,
// and the rest (row_state.hpp).
void split_key_loops(const Body& body, RowStatePlan& plan) {
  const std::vector<Scalar>& nodes = body.scalars();
  const std::set<ScalarId> shared(plan.shared_nodes.begin(), plan.shared_nodes.end());
  std::set<ScalarId> under, seen;
  std::vector<ScalarId> stack;
  for (ScalarId n : plan.shared_nodes) {
    if (nodes[n].op == ScalarOp::Reduce) stack.push_back(n);
  }
  while (!stack.empty()) {
    const ScalarId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    if (shared.count(id)) under.insert(id);
    for (ScalarId a : nodes[id].args) stack.push_back(a);
  }
  std::set<ScalarId> arrays;
  const ScalarId score = nodes[plan.reduce].args[0];
  if (under.count(score)) arrays.insert(score);
  for (ScalarId n : plan.shared_nodes) {
    if (under.count(n)) {
      plan.key_reductions.push_back(n);
      continue;
    }
    plan.key_elementwise.push_back(n);
    for (ScalarId a : nodes[n].args) {
      if (under.count(a)) arrays.insert(a);
    }
  }
  plan.key_arrays.assign(arrays.begin(), arrays.end());
  if (plan.key_reductions.empty()) return;
  // The mask that guards the reductions: an operand of the score free of them.
  const Scalar& x = nodes[score];
  const auto free_of_reductions = [&](ScalarId id) {
    std::set<ScalarId> seen_here;
    std::vector<ScalarId> todo{id};
    while (!todo.empty()) {
      const ScalarId n = todo.back();
      todo.pop_back();
      if (!seen_here.insert(n).second) continue;
      if (under.count(n) || nodes[n].op == ScalarOp::Reduce) return false;
      for (ScalarId a : nodes[n].args) todo.push_back(a);
    }
    return true;
  };
  const auto minus_inf = [&](ScalarId id) {
    return nodes[id].op == ScalarOp::Const && std::isinf(nodes[id].value) && nodes[id].value < 0;
  };
  if (x.op == ScalarOp::Select && minus_inf(x.args[2]) && free_of_reductions(x.args[0])) {
    plan.key_guard = x.args[0];
    plan.guard_selects = true;
  } else if (x.op == ScalarOp::Add) {
    for (ScalarId g : x.args) {
      if (free_of_reductions(g) && !free_of_reductions(x.args[0] == g ? x.args[1] : x.args[0])) {
        plan.key_guard = g;
      }
    }
  }
  if (!plan.key_guard) return;
  // The shared nodes the guard reads (the others are computed outside the key loops).
  std::set<ScalarId> reads;
  std::vector<ScalarId> todo{*plan.key_guard};
  while (!todo.empty()) {
    const ScalarId n = todo.back();
    todo.pop_back();
    if (!reads.insert(n).second) continue;
    for (ScalarId a : nodes[n].args) todo.push_back(a);
  }
  for (ScalarId n : plan.key_elementwise) {
    if (reads.count(n)) plan.guard_nodes.push_back(n);
  }
}

// Whether the iterations of output loop `k` around a blocked fold can be taken in tiles, each
// key block serving the tile's rows (RowStatePlan::tiles_rows, key_tile_loop): no row inputs,
// the keys the same for every row, and what depends on the row in the loops inside k cheap to
// compute per row (no reduction). Loops between k and c then run inside the tile: legal, as
// every output loop's iterations are independent, where their extents do not depend on k.
bool rows_tile(const Body& body, const NodeHomes& homes, const RowStatePlan& plan, std::size_t k) {
  const std::vector<graph::Loop>& loops = body.loops();
  const std::string& row = loops[k].var;
  if (!plan.row_inputs.empty()) return false;
  const std::vector<std::string> dims = graph::free_dims(body.scalars()[plan.reduce].extent);
  if (std::find(dims.begin(), dims.end(), row) != dims.end()) return false;
  for (std::size_t inner = k + 1; inner + 1 < loops.size(); ++inner) {
    const std::vector<std::string> extent = graph::free_dims(loops[inner].extent);
    if (!loops[inner].parallel || std::find(extent.begin(), extent.end(), row) != extent.end()) {
      return false;
    }
  }
  for (std::size_t scope = k + 1; scope < loops.size(); ++scope) {
    for (ScalarId id : homes.homed(scope)) {
      if (body.scalars()[id].op == ScalarOp::Reduce && homes.deps(id).count(row)) return false;
    }
  }
  return true;
}

// Every inner reduction of a blocked fold as a key product for tiles of output loop k, or none
// (RowStatePlan::key_products).
std::vector<KeyProduct> plan_key_products(const Body& body, const NodeHomes& homes,
                                          const RowStatePlan& plan, std::size_t k) {
  const std::vector<Scalar>& nodes = body.scalars();
  const std::size_t row_scope = body.loops().size() - 1;
  const std::string& row = body.loops()[k].var;
  const std::string& key = nodes[plan.reduce].var;
  for (ScalarId n : plan.column_nodes) {
    if (homes.deps(n).count(row)) return {};
  }
  std::vector<KeyProduct> products;
  for (ScalarId n : plan.key_reductions) {
    const Scalar& s = nodes[n];
    if (s.op != ScalarOp::Reduce || s.dtype != graph::DType::F32) return {};
    const Monoid& m = body.monoids().at(s.slot);
    if (m.name != "sum" || m.identity != std::vector<double>{0.0} || m.lift.size() != 1 ||
        nodes[m.lift[0]].op != ScalarOp::Param || nodes[m.finalize].op != ScalarOp::Param ||
        nodes[m.combine[0]].op != ScalarOp::Add) {
      return {};
    }
    const std::optional<std::int64_t> extent = s.extent.as_constant();
    const std::size_t scope = homes.reduce_scope(n);
    if (!extent || *extent < 1 || *extent > kMaxKeyProductExtent || scope == 0 ||
        homes.has_child_scope(scope)) {
      return {};
    }
    const Scalar& product = nodes[s.args[0]];
    if (product.op != ScalarOp::Mul || product.dtype != graph::DType::F32) return {};
    KeyProduct p{n, product.args[0], product.args[1], *extent};
    if (homes.deps(p.row_operand).count(key)) std::swap(p.row_operand, p.key_operand);
    if (homes.deps(p.row_operand).count(key) || homes.deps(p.key_operand).count(row)) return {};
    // What the operands read: the reduction's own nodes (computed with them) and the output
    // loops' nodes (for the key operand, free of the row: computed outside the fold).
    for (ScalarId operand : {p.row_operand, p.key_operand}) {
      for (ScalarId a : nodes_under(nodes, operand)) {
        if (!trivial(nodes[a]) && homes.home(a) != scope && homes.home(a) > row_scope) return {};
      }
    }
    products.push_back(p);
  }
  return products;
}

// The weighted value where it can be read in place (RowStatePlan::value_load): the only node
// of the columns, a plain f32 load stepping by one element along c.
std::optional<ScalarId> value_in_place(const Body& body, const RowStatePlan& plan) {
  const ScalarId value = body.scalars()[plan.reduce].args[1];
  const Scalar& load = body.scalars()[value];
  if (plan.column_nodes != std::vector<ScalarId>{value} || load.op != ScalarOp::Load ||
      !load.args.empty() || !(load.valid == graph::Expr(1)) || load.dtype != graph::DType::F32 ||
      body.inputs()[load.slot] != graph::DType::F32 ||
      !(load_step(load, plan.column_var) == graph::Expr(1))) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<RowStatePlan> plan_row_state(const Body& body, const NodeHomes& homes) {
  const std::vector<graph::Loop>& loops = body.loops();
  // The loops outside c carry the threads (c itself is no longer split across them).
  if (loops.size() < 2 || body.store_row() || !loops.back().parallel) return std::nullopt;
  if (!(body.guard() == graph::Expr(1))) return std::nullopt;  // its own store is unguarded
  const std::optional<std::int64_t> columns = loops.back().extent.as_constant();
  if (!columns || *columns < 1 || *columns > kMaxRowStateColumns) return std::nullopt;
  const std::vector<Scalar>& nodes = body.scalars();
  const std::size_t column_scope = loops.size();
  const std::string& c = loops.back().var;
  for (ScalarId id : homes.homed(column_scope)) {
    const Scalar& s = nodes[id];
    if (s.op != ScalarOp::Reduce) continue;
    const std::vector<std::string> extent_dims = graph::free_dims(s.extent);
    if (std::find(extent_dims.begin(), extent_dims.end(), c) != extent_dims.end()) continue;
    const std::size_t scope = homes.reduce_scope(id);
    if (scope == 0) continue;
    RowStatePlan plan;
    plan.reduce = id;
    plan.column_var = c;
    plan.columns = *columns;
    bool shared_work = false, shared_loads = false;
    for (ScalarId n : homes.homed(scope)) {
      if (homes.deps(n).count(c)) {
        plan.column_nodes.push_back(n);
      } else {
        plan.shared_nodes.push_back(n);
        shared_loads = shared_loads || nodes[n].op == ScalarOp::Load;
        shared_work = shared_work || (!trivial(nodes[n]) && nodes[n].op != ScalarOp::Load);
      }
    }
    if (!shared_work && !(shared_loads && *columns >= kMinColumnsForSharedLoads)) continue;
    // The nodes of c's scope under the Reduce (ids are topological: a node's args come first).
    std::set<ScalarId> under, inputs;
    std::vector<ScalarId> stack(s.args.begin(), s.args.end());
    while (!stack.empty()) {
      const ScalarId n = stack.back();
      stack.pop_back();
      if (!under.insert(n).second) continue;
      if (homes.home(n) == column_scope) inputs.insert(n);
      for (ScalarId a : nodes[n].args) stack.push_back(a);
    }
    plan.row_inputs.assign(inputs.begin(), inputs.end());
    plan_monoid(body, homes, plan);
    if (folds_in_blocks(body, plan)) {
      plan.key_block = kKeyBlock;
      split_key_loops(body, plan);
      plan.tiles_rows = rows_tile(body, homes, plan, loops.size() - 2);
      // Key products tile the innermost loop they can (the rows around c, or, where the keys
      // depend on those, an outer loop: a query position's heads have different keys).
      for (std::size_t k = loops.size() - 1; k-- > 0 && plan.key_products.empty();) {
        if (!rows_tile(body, homes, plan, k)) continue;
        plan.key_products = plan_key_products(body, homes, plan, k);
        plan.key_tile_loop = k;
      }
      if (!plan.key_products.empty()) plan.value_load = value_in_place(body, plan);
    }
    return plan;
  }
  return std::nullopt;
}

}  // namespace kiln::targets::cpu
