// Reordering output loops (graph/body_reorder): every conformance Body with each loop moved to
// each other place computes exactly what it computed (tiled ones too), at several dims; a
// serial loop, or an order that is not a permutation, is refused with the reason.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_reorder.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/schedule_cases.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::BodyCase;
using kiln::testing::contains;
using kiln::testing::user_error_of;

TEST_CASE("reorder: moved loops compute the same values", "[body][reorder]") {
  std::size_t checked = 0;
  for (std::int64_t rows : {1, 4, 9}) {
    const std::vector<BodyCase> base = kiln::testing::conformance_cases(rows);
    std::vector<BodyCase> scheduled = base;
    for (BodyCase& t : kiln::testing::tiled_cases(base, {4})) scheduled.push_back(std::move(t));
    for (const BodyCase& c : kiln::testing::reordered_cases(scheduled)) {
      INFO(c.label << " at seq " << rows << "\n" << to_text(c.body));
      const BodyCase* original = nullptr;
      for (const BodyCase& b : scheduled) {
        if (c.label.rfind(b.label + " move", 0) == 0) original = &b;
      }
      REQUIRE(original != nullptr);
      CHECK(kiln::testing::expected_output(c) == kiln::testing::expected_output(*original));
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("reorder: the loops and indices of a moved loop", "[body][reorder]") {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr(3));
  const Expr j = b.output_loop(Expr::dim("n"));
  const Body body = b.finish(b.load(0, i * Expr::dim("n") + j), Expr::dim("n") * 3,
                             i * Expr::dim("n") + j);
  const Body moved = reorder_loops(body, {1, 0});
  CHECK(moved.loops()[0].extent == Expr::dim("n"));
  CHECK(moved.loops()[1].extent == Expr(3));
  CHECK(moved.store_index() == Expr::dim("o1") * Expr::dim("n") + Expr::dim("o0"));
  CHECK(move_loop_order(3, 2, 0) == std::vector<std::size_t>{2, 0, 1});
  CHECK(move_loop_order(3, 0, 2) == std::vector<std::size_t>{1, 2, 0});
}

TEST_CASE("reorder: a serial loop or a wrong order is refused with the reason", "[body][reorder]") {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr(3));
  const Expr j = b.output_loop(Expr(4), false);
  const Expr k = b.output_loop(Expr(5));
  const Expr at = (i * 4 + j) * 5 + k;
  const Body body = b.finish(b.load(0, at), Expr(60), at);
  CHECK(contains(user_error_of([&] { reorder_loops(body, {2, 1, 0}); }), "o1 is serial"));
  CHECK(contains(user_error_of([&] { reorder_loops(body, {1, 0, 2}); }), "o1 is serial"));
  CHECK(user_error_of([&] { reorder_loops(body, {0, 1, 2}); }).empty());
  CHECK(contains(user_error_of([&] { reorder_loops(body, {0, 0, 2}); }), "not a permutation"));
  CHECK(contains(user_error_of([&] { reorder_loops(body, {0, 1}); }), "an order of 2 loops"));
  CHECK(contains(user_error_of([&] { move_loop_order(3, 3, 0); }), "no loop 3"));
}
