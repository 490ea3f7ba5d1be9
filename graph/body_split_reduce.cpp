// Splitting a reduction; see body_split_reduce.hpp.
#include "graph/body_split_reduce.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/body_copy.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

// The Reduce nodes the value reaches without entering another Reduce's elements.
std::set<ScalarId> outermost_reduces(const Body& body) {
  std::set<ScalarId> found, seen;
  std::vector<ScalarId> stack{body.value()};
  while (!stack.empty()) {
    const ScalarId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Scalar& s = body.scalar(id);
    if (s.op == ScalarOp::Reduce) {
      found.insert(id);
      continue;
    }
    for (ScalarId a : s.args) stack.push_back(a);
  }
  return found;
}

std::size_t same_slot(std::size_t k) { return k; }

}  // namespace

std::optional<ScalarId> outermost_reduce(const Body& body) {
  const std::set<ScalarId> reduces = outermost_reduces(body);
  if (reduces.size() != 1) return std::nullopt;
  return *reduces.begin();
}

SplitReduce split_reduce(const Body& body, std::int64_t parts) {
  if (parts < 2) throw UserError("a reduction split into " + std::to_string(parts) + " parts");
  if (body.store_row()) throw UserError("the Body writes rows through an index (Scatter)");
  const std::vector<Loop>& loops = body.loops();
  for (const Loop& l : loops) {
    if (!l.parallel) throw UserError("loop " + l.var + " is serial");
  }
  const std::set<ScalarId> reduces = outermost_reduces(body);
  if (reduces.size() != 1) {
    throw UserError("the Body's value has " + std::to_string(reduces.size()) +
                    " outermost reductions, not one");
  }
  const ScalarId reduce = *reduces.begin();
  const Scalar& r = body.scalar(reduce);
  const Monoid& m = body.monoids().at(r.slot);
  const std::size_t states = m.identity.size();
  if (auto n = r.extent.as_constant(); n && *n < 2 * parts) {
    throw UserError("a reduction of " + std::to_string(*n) + " elements is too short for " +
                    std::to_string(parts) + " parts");
  }
  // Each output iteration's row-major index over a new Body's loops (`same`: the original
  // loop's variable in it), and their count: where its states go.
  auto iteration_in = [&](const std::map<std::string, Expr>& same) {
    Expr index(0);
    for (const Loop& l : loops) index = index * l.extent + same.at(l.var);
    return index;
  };
  Expr iterations(1);
  for (const Loop& l : loops) iterations = iterations * l.extent;
  const Expr per_iteration(parts * static_cast<std::int64_t>(states));

  // The partial states: state component k of the fold over chunk c.
  BodyBuilder pb(body.inputs());
  std::map<std::string, Expr> same;
  for (const Loop& l : loops) same[l.var] = pb.output_loop(l.extent, l.parallel);
  const Expr c = pb.output_loop(Expr(parts));
  const Expr k = states > 1 ? pb.output_loop(Expr(static_cast<std::int64_t>(states))) : Expr(0);
  std::vector<ScalarId> components;
  for (std::size_t j = 0; j < states; ++j) {
    std::map<std::string, Expr> extents;
    BodyCopier copier(pb, body, same, same_slot, Expr(1), extents);
    copier.replace_reduce(reduce, [&](const std::string& var, const Expr& n) {
      const Expr chunk = ceil_div(n, Expr(parts));
      copier.bind(r.var, c * chunk + Expr::dim(var));
      const std::optional<std::int64_t> whole = n.as_constant();
      const Expr extent = whole && *whole % parts == 0 ? chunk : min(chunk, n - c * chunk);
      Monoid state = m;
      for (ScalarId& id : state.lift) id = copier.copy(id);
      for (ScalarId& id : state.combine) id = copier.copy(id);
      state.finalize = pb.param(j, r.dtype);
      if (!(copier.copy(m.finalize) == state.finalize)) {
        state.name = m.name + "_state" + std::to_string(j);
      }
      std::vector<ScalarId> elements;
      for (ScalarId a : r.args) elements.push_back(copier.copy(a));
      return pb.reduce(pb.add_monoid(std::move(state)), var, extent, std::move(elements), r.dtype);
    });
    components.push_back(copier.copy(reduce));
  }
  ScalarId value = components.back();
  for (std::size_t j = states - 1; j-- > 0;) {
    value = pb.select(pb.index(eq(k, Expr(static_cast<std::int64_t>(j))), r.dtype),
                      components[j], value);
  }
  pb.set_guard(body.guard());
  SplitReduce out{pb.finish(value, iterations * per_iteration,
                            (iteration_in(same) * parts + c) * static_cast<std::int64_t>(states) +
                                k),
                  Body{}};

  // The combine: the Body with the reduction folding the P states of its iteration.
  std::vector<DType> inputs = body.inputs();
  const std::size_t states_slot = inputs.size();
  inputs.push_back(r.dtype);
  BodyBuilder cb(inputs);
  same.clear();
  for (const Loop& l : loops) same[l.var] = cb.output_loop(l.extent, l.parallel);
  std::map<std::string, Expr> extents;
  BodyCopier copier(cb, body, same, same_slot, Expr(1), extents);
  copier.replace_reduce(reduce, [&](const std::string& var, const Expr&) {
    Monoid merged = m;
    merged.elements = states;
    merged.lift.clear();
    for (std::size_t j = 0; j < states; ++j) merged.lift.push_back(cb.param(j, r.dtype));
    for (ScalarId& id : merged.combine) id = copier.copy(id);
    merged.finalize = copier.copy(m.finalize);
    // A monoid whose element is its state (a sum, a max) merges states as it folds elements.
    std::vector<ScalarId> lift;
    for (ScalarId id : m.lift) lift.push_back(copier.copy(id));
    if (!(m.elements == states && lift == merged.lift)) merged.name = m.name + "_states";
    std::vector<ScalarId> elements;
    for (std::size_t j = 0; j < states; ++j) {
      elements.push_back(cb.load(states_slot, (iteration_in(same) * parts + Expr::dim(var)) *
                                                      static_cast<std::int64_t>(states) +
                                                  static_cast<std::int64_t>(j)));
    }
    return cb.reduce(cb.add_monoid(std::move(merged)), var, Expr(parts), std::move(elements),
                     r.dtype);
  });
  out.combine = copier.finish(std::nullopt);
  return out;
}

}  // namespace kiln::graph
