// Copying a Body's nodes into a BodyBuilder with its variables substituted and its inputs
// renumbered: the one mechanism of the Body transformations (inlining, merging inputs, the
// online softmax).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/body.hpp"

namespace kiln::graph {

// Copies the nodes of `src` into `b` with its variables substituted (reduction variables get
// fresh names from the builder as their Reduce is reached, so the result's names follow the
// result's shape), its input slots moved by `slot_of`, `extra_valid` and-ed into every load's
// validity, and the loads of one slot replaced by `inline_load` (given the load's substituted
// position and validity). Nodes are created in a post-order walk from the roots copied, so
// equal results of different transformation orders build equal Bodies. `extents` receives
// each fresh reduction variable with its extent.
class BodyCopier {
 public:
  using InlineLoad = std::function<ScalarId(const Expr& position, const Expr& valid)>;

  BodyCopier(BodyBuilder& b, const Body& src, std::map<std::string, Expr> subst,
             std::function<std::size_t(std::size_t)> slot_of, Expr extra_valid,
             std::map<std::string, Expr>& extents);

  // Loads of `slot` become `load(position, valid)` instead of loads.
  void inline_slot(std::size_t slot, InlineLoad load);

  // `guard` and-ed into the validity of every copied load whose position or validity names one
  // of its variables (a tiled loop's ragged tail reads nothing); loads free of them can still be
  // hoisted out of those loops.
  void guard_loads(const Expr& guard);

  // The source's Reduce node `reduce` becomes `make(var, extent)`: another reduction over the
  // same (fresh, already substituted) variable, whose elements `make` copies with copy().
  using ReplaceReduce = std::function<ScalarId(const std::string& var, const Expr& extent)>;
  void replace_reduce(ScalarId reduce, ReplaceReduce make);

  // From now on the source's variable `var` is copied as `value` (a replaced Reduce's make
  // rebinding its variable: a split reduction's r = c*C + r').
  void bind(const std::string& var, const Expr& value) { subst_[var] = value; }

  // The copy of node `id` of the source (memoized).
  ScalarId copy(ScalarId id);

  // The copy of the source's store (its index and guard substituted), value and rows
  // included, as a finished Body over the builder's loops (the caller recreated them).
  Body finish(std::optional<std::size_t> output_aliases);

 private:
  Expr sub(const Expr& e) const;
  ScalarId load(const Scalar& s);
  ScalarId reduce(ScalarId source, const Scalar& s);

  BodyBuilder& b_;
  const Body& src_;
  std::map<std::string, Expr> subst_;
  std::function<std::size_t(std::size_t)> slot_of_;
  Expr extra_valid_;
  Expr load_guard_ = Expr(1);
  std::map<std::string, Expr>& extents_;
  std::vector<std::optional<ScalarId>> memo_;
  std::optional<std::size_t> inline_slot_;
  InlineLoad inline_load_;
  std::map<ScalarId, ReplaceReduce> replaced_;
};

}  // namespace kiln::graph
