// Tiling an output loop (graph/body_tile): every loop of the conformance Bodies, tiled by
// several tiles, computes exactly what it computed, at dims where the loop's extent is 1, below
// the tile, a multiple of it and not; the ragged tail is guarded, proven in bounds and reads
// back from its text; what cannot be tiled is refused with the reason.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/body.hpp"
#include "graph/body_bounds.hpp"
#include "graph/body_parse.hpp"
#include "graph/body_tile.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/schedule_cases.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::BodyCase;
using kiln::testing::contains;
using kiln::testing::user_error_of;


TEST_CASE("tile: tiled loops compute the same values, ragged tails included", "[body][tile]") {
  std::size_t checked = 0, ragged = 0;
  for (std::int64_t rows : {1, 3, 16, 17}) {
    const std::vector<BodyCase> base = kiln::testing::conformance_cases(rows);
    for (const BodyCase& c : kiln::testing::tiled_cases(base, {2, 4, 16})) {
      INFO(c.label << " at seq " << rows << "\n" << to_text(c.body));
      const BodyCase* original = nullptr;
      for (const BodyCase& b : base) {
        if (c.label.rfind(b.label + " tile", 0) == 0) original = &b;
      }
      REQUIRE(original != nullptr);
      CHECK(kiln::testing::expected_output(c) == kiln::testing::expected_output(*original));
      if (kiln::testing::bounds_proof(*original).empty()) CHECK(kiln::testing::bounds_proof(c) == "");
      CHECK(parse_body(to_text(c.body)) == c.body);
      ragged += c.body.guard() == Expr(1) ? 0 : 1;
      ++checked;
    }
  }
  CHECK(checked > 200);
  CHECK(ragged > 50);
}

TEST_CASE("tile: the guard and the indices of a tiled loop", "[body][tile]") {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const Body body = b.finish(b.load(0, i), Expr::dim("n"), i);
  const Body tiled = tile_loop(body, 0, 8);
  REQUIRE(tiled.loops().size() == 2);
  CHECK(tiled.loops()[0].extent == ceil_div(Expr::dim("n"), Expr(8)));
  CHECK(tiled.loops()[1].extent == Expr(8));
  const Expr at = Expr::dim("o0") * 8 + Expr::dim("o1");
  CHECK(tiled.store_index() == at);
  CHECK(tiled.guard() == lt(at, Expr::dim("n")));
  CHECK(tiled.scalar(tiled.value()).valid == lt(at, Expr::dim("n")));
  // A constant extent the tile divides needs no guard.
  BodyBuilder c({DType::F32});
  const Expr j = c.output_loop(Expr(32));
  const Body exact = tile_loop(c.finish(c.load(0, j), Expr(32), j), 0, 8);
  CHECK(exact.guard() == Expr(1));
  CHECK(exact.scalar(exact.value()).valid == Expr(1));
  // Proven in bounds through its guard; the same nest without the guard is not.
  CHECK(prove_in_bounds(tiled, {Expr::dim("n")}) == "");
  std::string unguarded = to_text(tiled);
  const std::size_t guard_at = unguarded.find(" if ", unguarded.find("store ["));
  unguarded.replace(guard_at, unguarded.find(" of ", guard_at) - guard_at, "");
  const Body no_guard = parse_body(unguarded);
  CHECK(no_guard.guard() == Expr(1));
  CHECK(contains(prove_in_bounds(no_guard, {Expr::dim("n")}), "store at"));
  // The interpreter runs n = 1, below the tile, and the ragged tail.
  for (std::int64_t n : {1, 5, 8, 13}) {
    std::vector<double> in(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) in[static_cast<std::size_t>(k)] = 3.0 * k + 1;
    std::vector<double> out(static_cast<std::size_t>(n), -1.0);
    interpret_body(tiled, {&in}, {{"n", n}}, out);
    CHECK(out == in);
  }
}

TEST_CASE("tile: what cannot be tiled is refused with the reason", "[body][tile]") {
  BodyBuilder b({DType::F32});
  const Expr i = b.output_loop(Expr::dim("n"));
  const Body body = b.finish(b.load(0, i), Expr::dim("n"), i);
  CHECK(contains(user_error_of([&] { tile_loop(body, 1, 8); }), "no loop 1"));
  CHECK(contains(user_error_of([&] { tile_loop(body, 0, 1); }), "splits nothing"));
  BodyBuilder s({DType::F32});
  const Expr k = s.output_loop(Expr(4));
  CHECK(contains(user_error_of([&] { tile_loop(s.finish(s.load(0, k), Expr(4), k), 0, 8); }),
                 "fits in one tile"));
  // A causal reduction's extent names the loop: its tail would read past the rows.
  BodyBuilder r({DType::F32});
  const Expr row = r.output_loop(Expr::dim("n"));
  const std::string v = r.reduce_var();
  const ScalarId sum = r.reduce(r.sum_monoid(DType::F32), v, row + 1, {r.load(0, Expr::dim(v))},
                                DType::F32);
  const Body causal = r.finish(sum, Expr::dim("n"), row);
  CHECK(contains(user_error_of([&] { tile_loop(causal, 0, 4); }), "names loop o0"));
  for (const BodyCase& c : kiln::testing::conformance_cases()) {
    if (!c.body.store_row()) continue;
    CHECK(contains(user_error_of([&] { tile_loop(c.body, 0, 2); }), "Scatter"));
  }
}
