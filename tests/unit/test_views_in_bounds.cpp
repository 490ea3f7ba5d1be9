// Views inside their buffers at given dims (graph/views_in_bounds): a view over the first
// pos + seq rows of an 8-row cache reads inside it up to pos + seq = 8 and past it beyond, by
// exactly the positions it reads; masked (padded) coordinates, broadcasts and reversed strides
// are bounded by what they really read.
#include <catch2/catch.hpp>

#include <string>

#include "graph/hlir.hpp"
#include "graph/view.hpp"
#include "graph/views_in_bounds.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/graph_fixtures.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::make;

namespace {

// cache [8, 4] -> Sin over `view` of shape `shape`.
Graph reading(const View& view) {
  Graph g;
  const NodeId cache = g.add_node(make(Op::Input, DType::F32, {Expr(8), Expr(4)}, "cache"));
  const NodeId sin = g.add_node(make(Op::Sin, DType::F32, view.shape()));
  g.add_edge(cache, sin, 0, view);
  return g;
}

}  // namespace

TEST_CASE("views in bounds: a cache's first pos + seq rows fit up to its 8 rows", "[graph]") {
  const Expr rows = Expr::dim("pos") + Expr::dim("seq");
  const Graph g = reading(View::from_parts({rows, Expr(4)}, {Expr(4), Expr(1)}, Expr(0)));
  CHECK(view_outside_buffer(g, {{"pos", 7}, {"seq", 1}}) == "");
  CHECK(view_outside_buffer(g, {{"pos", 0}, {"seq", 8}}) == "");
  const std::string past = view_outside_buffer(g, {{"pos", 8}, {"seq", 1}});
  INFO(past);
  CHECK(contains(past, "%1 (Sin) reads positions 0 to 35 of %0 (Input 'cache'), which holds 32"));
  const std::string error =
      kiln::testing::user_error_of([&] { check_views_in_bounds(g, {{"pos", 8}, {"seq", 1}}); });
  CHECK(contains(error, "cannot run at pos=8, seq=1"));
}

TEST_CASE("views in bounds: masks, broadcasts and reversed strides count what they read",
          "[graph]") {
  // Rows 0..9 of which only 0..7 are valid (padding reads nothing).
  std::vector<ValidRange> mask = {{Expr(0), Expr(8)}, {Expr(0), Expr(4)}};
  CHECK(view_outside_buffer(reading(View::from_parts({Expr(10), Expr(4)}, {Expr(4), Expr(1)},
                                                     Expr(0), mask)),
                            {}) == "");
  // A broadcast row read 100 times: positions 28..31.
  CHECK(view_outside_buffer(reading(View::from_parts({Expr(100), Expr(4)}, {Expr(0), Expr(1)},
                                                     Expr(28))),
                            {}) == "");
  // Rows in reverse from the last: positions 31 down to 0.
  CHECK(view_outside_buffer(reading(View::from_parts({Expr(8), Expr(4)}, {Expr(-4), Expr(1)},
                                                     Expr(28))),
                            {}) == "");
  // One row too many in reverse reaches position -4.
  const std::string before = view_outside_buffer(
      reading(View::from_parts({Expr(9), Expr(4)}, {Expr(-4), Expr(1)}, Expr(28))), {});
  INFO(before);
  CHECK(contains(before, "reads positions -4 to 31"));
}
