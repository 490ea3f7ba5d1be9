// Tests for graph/view: ShapeTracker operations against a reference that materializes every
// transformation on a small buffer of element ids, plus symbolic cases and user errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/expr.hpp"
#include "graph/view.hpp"
#include "support/diagnostic.hpp"

using kiln::graph::DimValues;
using kiln::graph::Expr;
using kiln::graph::View;
using kiln::support::UserError;
namespace graph = kiln::graph;

namespace {

// A materialized tensor: row-major data holding, per element, the id (buffer position) of the
// element it reads, or -1 for padding.
struct Ref {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> data;
};

std::int64_t product(const std::vector<std::int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

// Row-major coordinates of flat position `flat` in `shape`.
std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> coords(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    coords[d] = flat % shape[d];
    flat /= shape[d];
  }
  return coords;
}

std::int64_t flatten(const std::vector<std::int64_t>& coords,
                     const std::vector<std::int64_t>& shape) {
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + coords[d];
  return flat;
}

// Builds a tensor of shape `shape` whose element at c is `at(c)`.
template <typename F>
Ref build(const std::vector<std::int64_t>& shape, F at) {
  Ref out{shape, {}};
  for (std::int64_t i = 0; i < product(shape); ++i) out.data.push_back(at(unflatten(i, shape)));
  return out;
}

Ref ref_permute(const Ref& in, const std::vector<std::size_t>& order) {
  std::vector<std::int64_t> shape;
  for (std::size_t d : order) shape.push_back(in.shape[d]);
  return build(shape, [&](const std::vector<std::int64_t>& c) {
    std::vector<std::int64_t> src(c.size());
    for (std::size_t d = 0; d < order.size(); ++d) src[order[d]] = c[d];
    return in.data[flatten(src, in.shape)];
  });
}

Ref ref_expand(const Ref& in, std::size_t dim, std::int64_t size) {
  std::vector<std::int64_t> shape = in.shape;
  shape[dim] = size;
  return build(shape, [&](std::vector<std::int64_t> c) {
    c[dim] = 0;
    return in.data[flatten(c, in.shape)];
  });
}

Ref ref_slice(const Ref& in, std::size_t dim, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> shape = in.shape;
  shape[dim] = end - begin;
  return build(shape, [&](std::vector<std::int64_t> c) {
    c[dim] += begin;
    return in.data[flatten(c, in.shape)];
  });
}

Ref ref_pad(const Ref& in, std::size_t dim, std::int64_t before, std::int64_t after) {
  std::vector<std::int64_t> shape = in.shape;
  shape[dim] += before + after;
  return build(shape, [&](std::vector<std::int64_t> c) -> std::int64_t {
    c[dim] -= before;
    if (c[dim] < 0 || c[dim] >= in.shape[dim]) return -1;
    return in.data[flatten(c, in.shape)];
  });
}

std::vector<Expr> exprs(const std::vector<std::int64_t>& values) {
  return {values.begin(), values.end()};
}

std::vector<Expr> coord_dims(std::size_t rank) {
  std::vector<Expr> coords;
  for (std::size_t d = 0; d < rank; ++d) coords.push_back(Expr::dim("i" + std::to_string(d)));
  return coords;
}

// Checks index() and valid() of `view` against `ref` at every coordinate.
void check_against(const View& view, const Ref& ref) {
  REQUIRE(view.rank() == ref.shape.size());
  for (std::size_t d = 0; d < view.rank(); ++d) {
    REQUIRE(view.shape()[d].as_constant() == std::optional<std::int64_t>(ref.shape[d]));
  }
  REQUIRE(graph::evaluate(view.numel(), {}) == product(ref.shape));
  std::vector<Expr> coords = coord_dims(view.rank());
  Expr index = view.index(coords);
  Expr valid = view.valid(coords);
  for (std::int64_t flat = 0; flat < product(ref.shape); ++flat) {
    std::vector<std::int64_t> c = unflatten(flat, ref.shape);
    DimValues values;
    for (std::size_t d = 0; d < c.size(); ++d) values["i" + std::to_string(d)] = c[d];
    INFO(graph::to_string(view) << " at flat " << flat);
    std::int64_t expected = ref.data[static_cast<std::size_t>(flat)];
    if (expected < 0) {
      CHECK(graph::evaluate(valid, values) == 0);
    } else {
      CHECK(graph::evaluate(valid, values) == 1);
      CHECK(graph::evaluate(index, values) == expected);
    }
  }
}

// A random shape with the same number of elements as `shape`: merge two neighbours, split one
// dim, add or remove a dim of size 1, or flatten.
std::vector<std::int64_t> random_reshape(const std::vector<std::int64_t>& shape,
                                         std::mt19937& rng) {
  std::vector<std::int64_t> out = shape;
  int kind = std::uniform_int_distribution<int>(0, 4)(rng);
  if (kind == 0 && shape.size() >= 2) {
    std::size_t d = std::uniform_int_distribution<std::size_t>(0, shape.size() - 2)(rng);
    out[d] *= out[d + 1];
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(d) + 1);
  } else if (kind == 1 && !shape.empty()) {
    std::size_t d = std::uniform_int_distribution<std::size_t>(0, shape.size() - 1)(rng);
    for (std::int64_t f = 2; f < out[d]; ++f) {
      if (out[d] % f == 0) {
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(d) + 1, out[d] / f);
        out[d] = f;
        break;
      }
    }
  } else if (kind == 2) {
    std::size_t d = std::uniform_int_distribution<std::size_t>(0, shape.size())(rng);
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(d), 1);
  } else if (kind == 3) {
    for (std::size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 1) {
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(d));
        break;
      }
    }
  } else {
    out = {product(shape)};
  }
  return out;
}

}  // namespace

TEST_CASE("view: random op chains match a materialized reference [graph]", "[graph]") {
  std::mt19937 rng(20261129);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  int reshapes_done = 0, reshapes_refused = 0, masked = 0, masked_reshapes = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<std::int64_t> shape;
    std::size_t rank = static_cast<std::size_t>(pick(1, 3));
    for (std::size_t d = 0; d < rank; ++d) shape.push_back(pick(1, 4));
    View view = View::contiguous(exprs(shape));
    Ref ref = build(shape, [&](const std::vector<std::int64_t>& c) { return flatten(c, shape); });
    check_against(view, ref);
    int steps = static_cast<int>(pick(1, 6));
    for (int step = 0; step < steps && product(ref.shape) <= 400; ++step) {
      std::size_t r = ref.shape.size();
      int op = static_cast<int>(pick(0, 4));
      if (r == 0) op = 4;
      std::size_t dim =
          r == 0 ? 0 : static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(r) - 1));
      if (op == 0) {
        std::vector<std::size_t> order(r);
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::shuffle(order.begin(), order.end(), rng);
        view = view.permute(order);
        ref = ref_permute(ref, order);
      } else if (op == 1) {
        std::size_t ones = r;
        for (std::size_t d = 0; d < r; ++d) {
          if (ref.shape[d] == 1) ones = d;
        }
        if (ones == r) continue;
        std::int64_t size = pick(1, 3);
        view = view.expand(ones, size);
        ref = ref_expand(ref, ones, size);
      } else if (op == 2) {
        std::int64_t begin = pick(0, ref.shape[dim]);
        std::int64_t end = pick(begin, ref.shape[dim]);
        view = view.slice(dim, begin, end);
        ref = ref_slice(ref, dim, begin, end);
      } else if (op == 3) {
        std::int64_t before = pick(0, 2), after = pick(0, 2);
        view = view.pad(dim, before, after);
        ref = ref_pad(ref, dim, before, after);
      } else {
        std::vector<std::int64_t> new_shape = random_reshape(ref.shape, rng);
        bool was_contiguous = view.is_contiguous();
        std::optional<View> reshaped = view.reshape(exprs(new_shape));
        if (was_contiguous) REQUIRE(reshaped);
        if (!reshaped) {
          ++reshapes_refused;
          continue;
        }
        ++reshapes_done;
        if (view.mask()) ++masked_reshapes;
        view = *reshaped;
        ref.shape = new_shape;
      }
      if (view.mask()) ++masked;
      check_against(view, ref);
    }
  }
  // The chains exercise both outcomes of reshape, and padding.
  CHECK(reshapes_done > 50);
  CHECK(reshapes_refused > 10);
  CHECK(masked > 50);
  CHECK(masked_reshapes > 5);
}

TEST_CASE("view: a contiguous [seq, 64] view indexes row-major [graph]", "[graph]") {
  Expr seq = Expr::dim("seq"), i = Expr::dim("i"), j = Expr::dim("j");
  View v = View::contiguous({seq, 64});
  CHECK(v.is_contiguous());
  CHECK(v.index({i, j}) == 64 * i + j);
  CHECK(graph::to_string(v.index({i, j})) == "64*i + j");
  CHECK(v.valid({i, j}) == Expr(1));
  CHECK(v.numel() == 64 * seq);
  CHECK(v.strides() == std::vector<Expr>{64, 1});
  CHECK(graph::to_string(v) == "View(shape=[seq, 64], strides=[64, 1], offset=0)");
}

TEST_CASE("view: reshape of a contiguous symbolic view succeeds [graph]", "[graph]") {
  Expr seq = Expr::dim("seq"), batch = Expr::dim("batch");
  View v = View::contiguous({batch, seq, 64});
  std::optional<View> flat = v.reshape({batch * seq, 64});
  REQUIRE(flat);
  CHECK(*flat == View::contiguous({batch * seq, 64}));
  std::optional<View> split = v.reshape({batch, seq, 8, 8});
  REQUIRE(split);
  CHECK(split->is_contiguous());
  CHECK(split->strides() == std::vector<Expr>{64 * seq, 64, 8, 1});
}

TEST_CASE("view: reshape after a permute that breaks contiguity needs a copy [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  View t = View::contiguous({seq, 64}).permute({1, 0});
  CHECK_FALSE(t.is_contiguous());
  CHECK_FALSE(t.reshape({64 * seq}));
  // Splitting a permuted dim keeps its stride, so that needs no copy.
  std::optional<View> split = t.reshape({8, 8, seq});
  REQUIRE(split);
  CHECK(split->strides() == std::vector<Expr>{8, 1, 64});
  // Merging dims that stay adjacent in memory needs no copy either.
  View u = View::contiguous({2, 3, 4}).permute({2, 0, 1});
  std::optional<View> merged = u.reshape({4, 6});
  REQUIRE(merged);
  CHECK(merged->strides() == std::vector<Expr>{1, 4});
}

TEST_CASE("view: pad records validity and slice offsets the index [graph]", "[graph]") {
  Expr seq = Expr::dim("seq"), i = Expr::dim("i"), j = Expr::dim("j");
  View v = View::contiguous({seq, 64}).pad(1, 2, 3);
  CHECK(v.shape()[1] == Expr(69));
  CHECK(v.index({i, j}) == 64 * i + j - 2);
  CHECK(graph::evaluate(v.valid({i, j}), {{"i", 0}, {"j", 1}}) == 0);
  CHECK(graph::evaluate(v.valid({i, j}), {{"i", 0}, {"j", 2}}) == 1);
  CHECK(graph::evaluate(v.valid({i, j}), {{"i", 0}, {"j", 66}}) == 0);
  CHECK_FALSE(v.is_contiguous());
  CHECK(graph::to_string(v) ==
        "View(shape=[seq, 69], strides=[64, 1], offset=-2, mask=[[0, seq), [2, 66)])");
  // Slicing the padding back off drops the mask.
  View back = v.slice(1, 2, 66);
  CHECK(back == View::contiguous({seq, 64}));
  CHECK(back.is_contiguous());
  // A padded view can gain or lose dims of size 1, but not merge padded dims.
  std::optional<View> unsqueezed = v.reshape({seq, 1, 69});
  REQUIRE(unsqueezed);
  CHECK(unsqueezed->index({i, Expr::dim("k"), j}) == 64 * i + j - 2);
  CHECK(unsqueezed->reshape({seq, 69}) == v);
  CHECK_FALSE(v.reshape({seq * 69}));
  View s = View::contiguous({seq, 64}).slice(0, 1, seq);
  CHECK(s.index({i, j}) == 64 * i + j + 64);
  CHECK(s.shape()[0] == seq - 1);
}

TEST_CASE("view: equality and hash are structural and deterministic [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  View a = View::contiguous({seq, 1}).expand(1, 4);
  View b = View::contiguous({seq, 1}).expand(1, 4);
  CHECK(a == b);
  CHECK(a.hash() == b.hash());
  CHECK(a.strides() == std::vector<Expr>{1, 0});
  View c = a.permute({1, 0});
  CHECK_FALSE(a == c);
  CHECK(a.hash() != c.hash());
  CHECK(c.permute({1, 0}) == a);
  std::unordered_set<View, graph::ViewHash> set{a, b, c};
  CHECK(set.size() == 2);
}

TEST_CASE("view: bad arguments are user errors [graph]", "[graph]") {
  View v = View::contiguous({2, 3, 1});
  CHECK_THROWS_AS(v.permute({0, 1}), UserError);
  CHECK_THROWS_AS(v.permute({0, 1, 1}), UserError);
  CHECK_THROWS_AS(v.permute({0, 1, 3}), UserError);
  CHECK_THROWS_AS(v.expand(0, 4), UserError);
  CHECK_THROWS_AS(v.expand(3, 4), UserError);
  CHECK_THROWS_AS(v.slice(1, 2, 4), UserError);
  CHECK_THROWS_AS(v.slice(1, 2, 1), UserError);
  CHECK_THROWS_AS(v.slice(5, 0, 1), UserError);
  CHECK_THROWS_AS(v.pad(0, -1, 0), UserError);
  CHECK_THROWS_AS(v.pad(3, 1, 1), UserError);
  CHECK_THROWS_AS(v.reshape({7}), UserError);
  CHECK_THROWS_AS(v.index({Expr(0)}), UserError);
  CHECK_THROWS_AS(v.valid({Expr(0)}), UserError);
  CHECK_THROWS_AS(View::contiguous({Expr(-1)}), UserError);
  CHECK_THROWS_WITH(v.expand(0, 4), Catch::Contains("not 1"));
}

namespace {

// Applies `steps` random view operations to `view` and its materialized reference `ref`.
void random_ops(View& view, Ref& ref, int steps, std::mt19937& rng) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int step = 0; step < steps && product(ref.shape) <= 200; ++step) {
    std::size_t r = ref.shape.size();
    if (r == 0) return;
    int op = static_cast<int>(pick(0, 4));
    std::size_t dim = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(r) - 1));
    if (op == 0) {
      std::vector<std::size_t> order(r);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::shuffle(order.begin(), order.end(), rng);
      view = view.permute(order);
      ref = ref_permute(ref, order);
    } else if (op == 1 && ref.shape[dim] == 1) {
      std::int64_t size = pick(1, 3);
      view = view.expand(dim, size);
      ref = ref_expand(ref, dim, size);
    } else if (op == 2) {
      std::int64_t begin = pick(0, ref.shape[dim]);
      std::int64_t end = pick(begin, ref.shape[dim]);
      view = view.slice(dim, begin, end);
      ref = ref_slice(ref, dim, begin, end);
    } else if (op == 3) {
      std::int64_t before = pick(0, 1), after = pick(0, 1);
      view = view.pad(dim, before, after);
      ref = ref_pad(ref, dim, before, after);
    } else if (op == 4) {
      std::vector<std::int64_t> new_shape = random_reshape(ref.shape, rng);
      if (std::optional<View> reshaped = view.reshape(exprs(new_shape))) {
        view = *reshaped;
        ref.shape = new_shape;
      }
    }
  }
}

}  // namespace

TEST_CASE("view: compose agrees with reading through both views [graph]", "[graph]") {
  std::mt19937 rng(20261130);
  int composed = 0, composed_strided = 0, composed_masked = 0, refused = 0;
  for (int trial = 0; trial < 600; ++trial) {
    std::vector<std::int64_t> shape;
    std::size_t rank = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    for (std::size_t d = 0; d < rank; ++d) {
      shape.push_back(std::uniform_int_distribution<std::int64_t>(1, 4)(rng));
    }
    // inner: how tensor T (its shape is inner's) lies in the buffer.
    View inner = View::contiguous(exprs(shape));
    Ref inner_ref = build(shape, [&](const auto& c) { return flatten(c, shape); });
    random_ops(inner, inner_ref, std::uniform_int_distribution<int>(0, 3)(rng), rng);
    // outer: how a consumer reads T (values are T's row-major element numbers).
    std::vector<std::int64_t> t_shape = inner_ref.shape;
    View outer = View::contiguous(exprs(t_shape));
    Ref outer_ref = build(t_shape, [&](const auto& c) { return flatten(c, t_shape); });
    random_ops(outer, outer_ref, std::uniform_int_distribution<int>(1, 3)(rng), rng);

    std::optional<View> both = graph::compose(outer, inner);
    if (!both) {
      ++refused;
      continue;
    }
    ++composed;
    if (!inner.is_contiguous()) ++composed_strided;
    if (inner.mask()) ++composed_masked;
    Ref expected = outer_ref;
    for (std::int64_t& p : expected.data) {
      if (p >= 0) p = inner_ref.data[static_cast<std::size_t>(p)];
    }
    INFO("outer " << graph::to_string(outer) << " inner " << graph::to_string(inner));
    check_against(*both, expected);
  }
  CHECK(composed_strided > 100);
  CHECK(composed_masked > 10);
  CHECK(refused > 10);  // e.g. a flatten of a transposed tensor is no single view
}

TEST_CASE("view: compose of a contiguous inner view is the outer view [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  View outer = View::contiguous({seq, 64}).permute({1, 0}).slice(1, 1, seq);
  CHECK(graph::compose(outer, View::contiguous({seq, 64})) == outer);
  // A transposed buffer read back through its transpose is contiguous.
  View transposed = View::contiguous({32, 64}).permute({1, 0});
  CHECK(graph::compose(View::contiguous({64, 32}).permute({1, 0}), transposed) ==
        View::contiguous({32, 64}));
  // Flattening a transposed tensor is not one view.
  CHECK_FALSE(graph::compose(View::contiguous({2048}), transposed).has_value());
}

TEST_CASE("view: parse_view reads what to_string prints, and locates errors [graph]", "[graph]") {
  Expr seq = Expr::dim("seq");
  std::vector<View> views = {
      View::contiguous({}),
      View::contiguous({seq, 64}),
      View::contiguous({seq, 64}).permute({1, 0}).slice(0, 2, 10),
      View::contiguous({seq, 4}).pad(1, 1, 2).pad(0, Expr::dim("p"), 0),
      View::contiguous({1, 64}).expand(0, min(seq, Expr(4096))),
  };
  for (const View& v : views) {
    INFO(graph::to_string(v));
    CHECK(graph::parse_view(graph::to_string(v)) == v);
  }
  CHECK(graph::parse_view(" View( shape=[seq,64],strides=[64, 1], offset=0 ) ") ==
        View::contiguous({seq, 64}));
  CHECK(graph::parse_shape("[seq, 2*32]") == std::vector<Expr>{seq, 64});
  auto error_of = [](const std::string& text) {
    try {
      graph::parse_view(text, "v");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error_of("View(shape=[seq, 64], strides=[64, 1 +], offset=0)")
            .find("v:1:39: error: expected an expression") != std::string::npos);
  CHECK(error_of("View(shape=[seq, 64], strides=[64], offset=0)")
            .find("v:1:31: error: expected 2 strides") != std::string::npos);
  CHECK(error_of("View(shape=[4], strides=[1], offset=0) x")
            .find("v:1:40: error: unexpected 'x'") != std::string::npos);
  CHECK(error_of("View(shape=[4] strides=[1], offset=0)").find("v:1:16: error: expected ','") !=
        std::string::npos);
  // 100k nested parentheses inside a dim or a shape: a located error, not a stack overflow.
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  CHECK(error_of("View(shape=[" + deep + "], strides=[1], offset=0)")
            .find("v:1:213: error: expression nested more than 200 levels deep") !=
        std::string::npos);
  try {
    graph::parse_shape("[4, " + deep + "]", "s");
    FAIL("a 100k-deep shape was read");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find("s:1:205: error: expression nested more than 200") !=
          std::string::npos);
  }
}
