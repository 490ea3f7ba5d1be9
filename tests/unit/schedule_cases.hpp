// Scheduled Bodies of the conformance set (body_cases.hpp) as BodyCases: tiled, reordered and
// split (the split's two kernels each a case, the combine reading the partial's interpreted
// output), for the property tests of the transformations and the code generators' tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/body_bounds.hpp"
#include "graph/body_reorder.hpp"
#include "graph/body_split_reduce.hpp"
#include "graph/body_tile.hpp"
#include "tests/unit/body_cases.hpp"
#include "tests/unit/test_util.hpp"

namespace kiln::testing {

// "" when every load and store of `c` is proven in bounds at its own dims, else why not.
inline std::string bounds_proof(const BodyCase& c) {
  std::vector<graph::Expr> sizes;
  for (const auto& in : c.inputs) {
    sizes.push_back(graph::Expr(static_cast<std::int64_t>(in.size())));
  }
  graph::DimRanges ranges;
  for (const auto& [name, value] : c.dims) ranges[name] = graph::Interval::exactly(value);
  return graph::prove_in_bounds(c.body, sizes, ranges);
}

// `c` with its Body replaced (same inputs and dims); `label` says how.
inline BodyCase with_body(const BodyCase& c, graph::Body body, const std::string& label) {
  return BodyCase{c.label + " " + label, std::move(body), c.inputs, c.dims};
}

// Every loop of every case tiled by each of `tiles` (where tile_loop accepts).
inline std::vector<BodyCase> tiled_cases(const std::vector<BodyCase>& base,
                                         const std::vector<std::int64_t>& tiles) {
  std::vector<BodyCase> out;
  for (const BodyCase& c : base) {
    for (std::size_t loop = 0; loop < c.body.loops().size(); ++loop) {
      for (std::int64_t t : tiles) {
        try {
          out.push_back(with_body(c, graph::tile_loop(c.body, loop, t),
                                  "tile o" + std::to_string(loop) + " by " + std::to_string(t)));
        } catch (const support::UserError&) {
        }
      }
    }
  }
  return out;
}

// Every case with each loop moved to each other place (where reorder_loops accepts).
inline std::vector<BodyCase> reordered_cases(const std::vector<BodyCase>& base) {
  std::vector<BodyCase> out;
  for (const BodyCase& c : base) {
    const std::size_t n = c.body.loops().size();
    for (std::size_t from = 0; from < n; ++from) {
      for (std::size_t to = 0; to < n; ++to) {
        if (from == to) continue;
        try {
          out.push_back(with_body(
              c, graph::reorder_loops(c.body, graph::move_loop_order(n, from, to)),
              "move o" + std::to_string(from) + " to " + std::to_string(to)));
        } catch (const support::UserError&) {
        }
      }
    }
  }
  return out;
}

// A split reduction as two cases: the partial kernel, and the combine reading its output.
struct SplitCase {
  BodyCase partial;
  BodyCase combine;
};

inline std::vector<SplitCase> split_cases(const std::vector<BodyCase>& base,
                                          const std::vector<std::int64_t>& parts) {
  std::vector<SplitCase> out;
  for (const BodyCase& c : base) {
    for (std::int64_t p : parts) {
      graph::SplitReduce split;
      try {
        split = graph::split_reduce(c.body, p);
      } catch (const support::UserError&) {
        continue;
      }
      const std::string how = "split in " + std::to_string(p);
      BodyCase partial = with_body(c, split.partial, how + " (partial)");
      BodyCase combine = with_body(c, split.combine, how + " (combine)");
      combine.inputs.push_back(expected_output(partial));
      out.push_back(SplitCase{std::move(partial), std::move(combine)});
    }
  }
  return out;
}

}  // namespace kiln::testing
