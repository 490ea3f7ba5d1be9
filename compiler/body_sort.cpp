// The primitives of the Body sort: what rules may ask of a kernel, and the transformations
// rules may apply to one (graph/ does the how; rule files decide when).
#include <cstdint>
#include <cstdio>
#include <string>

#include "compiler/sorts.hpp"
#include "graph/body_folds_products.hpp"
#include "graph/body_inline.hpp"
#include "graph/body_merge_inputs.hpp"
#include "graph/body_online_softmax.hpp"
#include "graph/body_reorder.hpp"
#include "graph/body_split_reduce.hpp"
#include "graph/body_tile.hpp"

namespace kiln::compiler {

void add_body_primitives(engine::EGraph& egraph, const GraphSorts& s) {
  engine::PrimitiveTable& table = egraph.primitives();
  const BodySort* bs = s.body_sort.get();
  const engine::StringSort* str = s.string_sort.get();
  auto count = [&](const char* name, auto measure) {
    table.add(engine::Primitive{name, {s.body}, s.i64, false,
                                [bs, measure](const engine::Value* a, std::size_t,
                                              engine::Value& r) {
                                  r = engine::I64Sort::make(
                                      static_cast<std::int64_t>(measure(bs->get(a[0]))));
                                  return true;
                                }});
  };
  count("body-inputs", [](const graph::Body& b) { return b.inputs().size(); });
  count("body-loops", [](const graph::Body& b) { return b.loops().size(); });
  count("body-reduces", [](const graph::Body& b) {
    std::size_t n = 0;
    for (const graph::Scalar& x : b.scalars()) n += x.op == graph::ScalarOp::Reduce ? 1 : 0;
    return n;
  });
  count("body-compute-nodes", [](const graph::Body& b) { return graph::body_compute_nodes(b); });
  // Sines and exp2s: polynomials of a dozen operations or more per element on a CPU (not a
  // node like the others when a rule weighs recomputing a producer). Log2 is left out: where a
  // log2 is recomputed it is an additive mask's log2 of 0 or 1, which targets render as a select.
  count("body-polynomials", [](const graph::Body& b) {
    std::size_t n = 0;
    for (const graph::Scalar& x : b.scalars()) {
      n += x.op == graph::ScalarOp::Sin || x.op == graph::ScalarOp::Exp2 ? 1 : 0;
    }
    return n;
  });

  // (body-inline consumer slot producer): the consumer computing input `slot` itself from the
  // producer's inputs, spliced in at `slot` (graph/body_inline.hpp); fails, with the reason,
  // where inlining cannot be done.
  auto slot_of = [](engine::Value v) -> std::size_t {
    const std::int64_t k = engine::I64Sort::get(v);
    if (k < 0) throw support::UserError("negative input slot " + std::to_string(k));
    return static_cast<std::size_t>(k);
  };
  table.add(engine::Primitive{"body-inline", {s.body, s.i64, s.body}, s.body, false,
                              guarded([bs, slot_of](const engine::Value* a, std::size_t,
                                                    engine::Value& r) {
                                r = bs->make(graph::inline_input(bs->get(a[0]), slot_of(a[1]),
                                                                 bs->get(a[2])));
                                return true;
                              })});
  // (body-merge-inputs b keep drop): b reading input `drop` from `keep`, `drop` removed.
  table.add(engine::Primitive{"body-merge-inputs", {s.body, s.i64, s.i64}, s.body, false,
                              guarded([bs, slot_of](const engine::Value* a, std::size_t,
                                                    engine::Value& r) {
                                r = bs->make(graph::merge_inputs(bs->get(a[0]), slot_of(a[1]),
                                                                 slot_of(a[2])));
                                return true;
                              })});
  // (body-online-softmax b): b with its softmax-weighted sums folded in one pass by the
  // online-softmax monoid (graph/body_online_softmax.hpp); fails, with the reason, where b
  // holds none.
  table.add(engine::Primitive{"body-online-softmax", {s.body}, s.body, false,
                              [bs](const engine::Value* a, std::size_t, engine::Value& r) {
                                std::string why;
                                std::optional<graph::Body> online =
                                    graph::online_softmax(bs->get(a[0]), why);
                                if (!online) {
                                  engine::primitive_failure_reason() = why;
                                  return false;
                                }
                                r = bs->make(*online);
                                return true;
                              }});
  // (body-read-factor consumer slot producer): how many times inlining computes each producer
  // element (graph::inline_read_factor); fails when that grows with a dim.
  // (body-row-read-factor consumer slot producer): the same where the reduction in the
  // innermost output loop is folded for all of that loop's values at once.
  for (const bool fold_rows : {false, true}) {
    table.add(engine::Primitive{fold_rows ? "body-row-read-factor" : "body-read-factor",
                                {s.body, s.i64, s.body}, s.i64, false,
                                guarded([bs, slot_of, fold_rows](const engine::Value* a,
                                                                 std::size_t, engine::Value& r) {
                                  std::optional<std::int64_t> f = graph::inline_read_factor(
                                      bs->get(a[0]), slot_of(a[1]), bs->get(a[2]), fold_rows);
                                  if (!f) return fail_because("the read factor grows with a dim");
                                  r = engine::I64Sort::make(*f);
                                  return true;
                                })});
  }
  // --- Schedules (rules/schedule/) ---
  // (body-tile b loop tile): output loop `loop` in tiles of `tile` (graph/body_tile.hpp).
  table.add(engine::Primitive{"body-tile", {s.body, s.i64, s.i64}, s.body, false,
                              guarded([bs, slot_of](const engine::Value* a, std::size_t,
                                                    engine::Value& r) {
                                r = bs->make(graph::tile_loop(bs->get(a[0]), slot_of(a[1]),
                                                              engine::I64Sort::get(a[2])));
                                return true;
                              })});
  // (body-reorder b from to): output loop `from` moved to place `to`, the others keeping their
  // order (graph/body_reorder.hpp).
  table.add(engine::Primitive{"body-reorder", {s.body, s.i64, s.i64}, s.body, false,
                              guarded([bs, slot_of](const engine::Value* a, std::size_t,
                                                    engine::Value& r) {
                                const graph::Body& b = bs->get(a[0]);
                                r = bs->make(graph::reorder_loops(
                                    b, graph::move_loop_order(b.loops().size(), slot_of(a[1]),
                                                              slot_of(a[2]))));
                                return true;
                              })});
  // (body-split-partial b parts) and (body-split-combine b parts): the two kernels of b's
  // reduction split into `parts` chunks (graph/body_split_reduce.hpp); the combine reads b's
  // inputs, then the partial states.
  for (const bool partial : {true, false}) {
    table.add(engine::Primitive{
        partial ? "body-split-partial" : "body-split-combine", {s.body, s.i64}, s.body, false,
        guarded([bs, partial](const engine::Value* a, std::size_t, engine::Value& r) {
          graph::SplitReduce split = graph::split_reduce(bs->get(a[0]), engine::I64Sort::get(a[1]));
          r = bs->make(partial ? split.partial : split.combine);
          return true;
        })});
  }
  // (body-folds-products b): whether b folds products of two inputs (graph::folds_products: a
  // matrix product in its loops, whose blocks tiling reuses).
  const std::optional<engine::SortId> boolean = egraph.find_sort("bool");
  KILN_ASSERT(boolean.has_value(), "add_body_primitives: the builtin sorts are not registered");
  table.add(engine::Primitive{
      "body-folds-products", {s.body}, *boolean, false,
      [bs](const engine::Value* a, std::size_t, engine::Value& r) {
        r = engine::BoolSort::make(graph::folds_products(bs->get(a[0])));
        return true;
      }});
  // (body-iterations b): the output loops' trip count; fails when it names a dim.
  table.add(engine::Primitive{
      "body-iterations", {s.body}, s.i64, false,
      [bs](const engine::Value* a, std::size_t, engine::Value& r) {
        graph::Expr n(1);
        for (const graph::Loop& l : bs->get(a[0]).loops()) n = n * l.extent;
        const std::optional<std::int64_t> k = n.as_constant();
        if (!k) return fail_because("the loops' trip count names a dim");
        r = engine::I64Sort::make(*k);
        return true;
      }});
  // (body-reduce-extent b): the extent of the reduction body-split-* split (b's one outermost
  // reduction); fails when it names a dim or there is no such reduction.
  // (body-reduce-symbolic b): whether that extent names a dim (a KV cache's length).
  auto split_extent = [bs](engine::Value body) -> std::optional<graph::Expr> {
    const graph::Body& b = bs->get(body);
    const std::optional<graph::ScalarId> r = graph::outermost_reduce(b);
    if (!r) return std::nullopt;
    return b.scalar(*r).extent;
  };
  table.add(engine::Primitive{
      "body-reduce-extent", {s.body}, s.i64, false,
      [split_extent](const engine::Value* a, std::size_t, engine::Value& r) {
        const std::optional<graph::Expr> e = split_extent(a[0]);
        if (!e) return fail_because("the Body has no single outermost reduction");
        const std::optional<std::int64_t> k = e->as_constant();
        if (!k) return fail_because("the reduction's extent names a dim");
        r = engine::I64Sort::make(*k);
        return true;
      }});
  table.add(engine::Primitive{
      "body-reduce-symbolic", {s.body}, *boolean, false,
      [split_extent](const engine::Value* a, std::size_t, engine::Value& r) {
        const std::optional<graph::Expr> e = split_extent(a[0]);
        if (!e) return fail_because("the Body has no single outermost reduction");
        r = engine::BoolSort::make(!e->as_constant().has_value());
        return true;
      }});
  table.add(engine::Primitive{"body-key", {s.body}, s.string, false,
                              [bs, str](const engine::Value* a, std::size_t, engine::Value& r) {
                                const support::Hash128 key = bs->get(a[0]).key();
                                char hex[40];
                                std::snprintf(hex, sizeof hex, "kiln_%016llx%016llx",
                                              static_cast<unsigned long long>(key.high),
                                              static_cast<unsigned long long>(key.low));
                                r = str->make(hex);
                                return true;
                              }});
  table.add(engine::Primitive{"body-text", {s.body}, s.string, false,
                              [bs, str](const engine::Value* a, std::size_t, engine::Value& r) {
                                r = str->make(graph::to_text(bs->get(a[0])));
                                return true;
                              }});
}

}  // namespace kiln::compiler
