// Expr, the symbolic integers of graph/: canonical simplification, printing and parsing,
// evaluation, substitution, bounds, errors, and a property test against unsimplified trees.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "support/diagnostic.hpp"

using kiln::graph::DimRanges;
using kiln::graph::DimValues;
using kiln::graph::Expr;
using kiln::graph::ExprOp;
using kiln::graph::Interval;
using kiln::support::UserError;
namespace graph = kiln::graph;

namespace {

const Expr x = Expr::dim("x");
const Expr y = Expr::dim("y");
const Expr z = Expr::dim("z");
const Expr seq = Expr::dim("seq");
const Expr batch = Expr::dim("batch");

Expr parse(const std::string& text) { return graph::parse_expr(text); }

std::string show(const Expr& e) { return graph::to_string(e); }

// The message of the UserError that `f` throws ("" if none).
template <class F>
std::string user_error(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// A structural copy built with Expr::node, so nothing in it is marked canonical.
Expr unsimplified_copy(const Expr& e) {
  if (e.op() == ExprOp::Const || e.op() == ExprOp::Dim) return e;
  std::vector<Expr> args;
  for (const Expr& arg : e.args()) args.push_back(unsimplified_copy(arg));
  return Expr::node(e.op(), args);
}

}  // namespace

TEST_CASE("expr: the identities of the issue hold structurally", "[graph]") {
  CHECK(floor_div(x * 4, 4) == x);
  CHECK((x + 1) * 2 - 2 == 2 * x);
  CHECK(floor_div(x * 8 + 3, 8) == x);
  CHECK(mod(x * 8 + 3, 8) == 3);
  CHECK(min(x, x + 1) == x);
  CHECK(max(x, x + 1) == x + 1);
  CHECK(x - x == 0);
  CHECK((x + y) * (x - y) == x * x - y * y);
  CHECK(show((x + 1) * 2 - 2) == "2*x");
}

TEST_CASE("expr: constants fold with floor semantics", "[graph]") {
  CHECK(floor_div(7, Expr(2)) == 3);
  CHECK(floor_div(-7, Expr(2)) == -4);
  CHECK(floor_div(7, Expr(-2)) == -4);
  CHECK(floor_div(-7, Expr(-2)) == 3);
  CHECK(ceil_div(7, Expr(2)) == 4);
  CHECK(ceil_div(-7, Expr(2)) == -3);
  CHECK(mod(-7, Expr(2)) == 1);
  CHECK(mod(7, Expr(-2)) == -1);
  CHECK(mod(-7, Expr(-2)) == -1);
  CHECK(min(3, Expr(-2)) == -2);
  CHECK(max(3, Expr(-2)) == 3);
  CHECK(lt(2, Expr(3)) == 1);
  CHECK(le(3, Expr(3)) == 1);
  CHECK(eq(3, Expr(4)) == 0);
  CHECK(Expr(6) * 7 - 2 == 40);
  CHECK(Expr(5).as_constant() == 5);
  CHECK_FALSE(x.as_constant());
}

TEST_CASE("expr: division by a constant zero is a user error", "[graph]") {
  CHECK_THAT(user_error([] { floor_div(x, 0); }), Catch::Contains("division by zero in `x/0`"));
  CHECK_THAT(user_error([] { mod(x + 1, x - x); }), Catch::Contains("division by zero"));
  CHECK_THAT(user_error([] { ceil_div(3, Expr(0)); }), Catch::Contains("division by zero"));
  // A symbolic divisor that is zero is found when evaluating.
  Expr e = floor_div(x, y);
  CHECK(graph::evaluate(e, {{"x", 6}, {"y", 3}}) == 2);
  CHECK_THAT(user_error([&] { graph::evaluate(e, {{"x", 6}, {"y", 0}}); }),
             Catch::Contains("division by zero evaluating `x/y`"));
}

TEST_CASE("expr: division and modulus by constants use bounds and common factors", "[graph]") {
  CHECK(floor_div(x + 9, 8) == floor_div(x + 1, 8) + 1);
  CHECK(floor_div(4 * x + 2, 8) == floor_div(x, 2));
  CHECK(mod(4 * x + 2, 8) == 4 * mod(x, 2) + 2);
  CHECK(floor_div(floor_div(x, 4), 8) == floor_div(x, 32));
  CHECK(floor_div(floor_div(x, 4) + 1, 8) == floor_div(x + 4, 32));
  CHECK(mod(mod(x, 16), 8) == mod(x, 8));
  CHECK(mod(mod(x, 8), 16) == mod(x, 8));
  CHECK(floor_div(mod(x, 8), 8) == 0);
  CHECK(floor_div(mod(x, 8) + 8 * y, 8) == y);
  CHECK(floor_div(-x, -1) == x);
  CHECK(floor_div(x, -2) == floor_div(-x, 2));
  CHECK(mod(x, -3) == -mod(-x, 3));
  CHECK(ceil_div(seq, 64) == floor_div(seq + 63, 64));
  CHECK(floor_div(x, 1) == x);
  // Multiples of the divisor come out toward zero; numerators of negative terms flip.
  CHECK(floor_div(12 * x + y, 8) == x + floor_div(4 * x + y, 8));
  CHECK(show(floor_div(x - y - 1, 4)) == "(x - y + 3)/4 - 1");
  CHECK(floor_div(-x, 8) == -ceil_div(x, 8));
  CHECK(show(floor_div(-x, 8)) == "-((x + 7)/8)");
  CHECK(8 * floor_div(-x, 8) + mod(-x, 8) == -x);
  CHECK(floor_div(x - 1, 8) == floor_div(x + 7, 8) - 1);
  CHECK(mod(x, 1) == 0);
  // Exact division by a symbolic monomial, and by a multiple.
  CHECK(floor_div(x * y + z, y) == x + floor_div(z, y));
  CHECK(floor_div(4 * x * y, 2 * y) == 2 * x);
  CHECK(mod(x * y, y) == 0);
  CHECK(floor_div(2 * y + 2, y + 1) == 2);
  CHECK(ceil_div(x * y + z, y) == x + ceil_div(z, y));
}

TEST_CASE("expr: div and mod recombine into the dividend", "[graph]") {
  // The index of a reshape split and merged back: i/32, (i/4)%8 and i%4 give i.
  Expr i = Expr::dim("i");
  CHECK(floor_div(i, 8) * 8 + mod(i, 8) == i);
  CHECK(32 * floor_div(i, 32) + 4 * mod(floor_div(i, 4), 8) + mod(i, 4) == i);
  CHECK(y * mod(x, 8) + 8 * y * floor_div(x, 8) == x * y);
  CHECK(i - 8 * floor_div(i, 8) == mod(i, 8));
  CHECK(3 * i - 24 * floor_div(i, 8) == 3 * mod(i, 8));
  CHECK(i - 8 * floor_div(i + 3, 8) == mod(i + 3, 8) - 3);
}

TEST_CASE("expr: coefficients that overflow are user errors, comparisons fall back", "[graph]") {
  CHECK_THAT(user_error([] { Expr(INT64_MAX) * x * 2; }), Catch::Contains("integer overflow"));
  CHECK_THAT(user_error([] { parse("9223372036854775807*x + 9223372036854775807*x"); }),
             Catch::Contains("<expr>:1:23: error: integer overflow"));
  // The difference of the two sides does not fit, so the comparison stays as written.
  Expr e = lt(x, Expr(INT64_MIN));
  CHECK(graph::evaluate(e, {{"x", 0}}) == 0);
  CHECK(graph::evaluate(min(x, Expr(INT64_MIN)), {{"x", 3}}) == INT64_MIN);
}

TEST_CASE("expr: min and max are flattened, sorted and pruned by bounds", "[graph]") {
  CHECK(max(x, 0) == x);
  CHECK(min(x, 0) == 0);
  CHECK(min(y, x) == min(x, y));
  CHECK(min(min(x, y), z) == min(x, min(z, y)));
  CHECK(min(min(x, 3), 5) == min(x, 3));
  CHECK(max(x + 2, max(x, y)) == max(x + 2, y));
  CHECK(min(x, x) == x);
  CHECK(show(min(seq, 4096)) == "min(seq, 4096)");
}

TEST_CASE("expr: comparisons are normalized and decided by bounds", "[graph]") {
  CHECK(lt(x, y) == le(x + 1, y));
  CHECK(lt(y, x) == lt(y - x, 0));
  CHECK(le(2 * x, 2 * y + 1) == le(x, y));
  CHECK(eq(2 * x, 2 * y) == eq(x, y));
  CHECK(eq(x, y) == eq(y, x));
  CHECK(eq(2 * x, 2 * y + 1) == 0);
  CHECK(le(0, x) == 1);
  CHECK(lt(x, 0) == 0);
  CHECK(lt(x, x + 1) == 1);
  CHECK(eq(x + 1, 0) == 0);
  CHECK(le(mod(x, 8), 7) == 1);
  CHECK(show(lt(x, y)) == "x + 1 <= y");
  CHECK(show(lt(x, 8)) == "x <= 7");
  CHECK(show(eq(3, x)) == "x == 3");
  CHECK(show(eq(x, 2 * y)) == "x == 2*y");
}

TEST_CASE("expr: equal expressions built in different orders are equal and hash equal", "[graph]") {
  Expr a = 2 * seq * batch + 3 * seq + 1;
  Expr b = 1 + seq * 3 + batch * (seq * 2);
  Expr c = (seq + 1) * (2 * batch + 3) - 2 * batch + (-2);
  CHECK(a == b);
  CHECK(a == c);
  CHECK(a.hash() == b.hash());
  CHECK(a.hash() == c.hash());
  CHECK(a != a + 1);
  CHECK(a.hash() != (a + 1).hash());
  // Hashes are fixed by the structure, not by where the nodes live.
  CHECK(parse(show(a)).hash() == a.hash());
  CHECK(Expr::dim("seq").hash() == seq.hash());
}

TEST_CASE("expr: printing gives readable infix and S-expressions", "[graph]") {
  CHECK(show(2 * seq + 1) == "2*seq + 1");
  CHECK(show(seq - batch) == "-batch + seq");
  CHECK(show(batch * seq * 4 - 3) == "4*batch*seq - 3");
  CHECK(show(seq * seq + 2 * seq + 1) == "seq*seq + 2*seq + 1");
  CHECK(show(ceil_div(seq, 64)) == "(seq + 63)/64");
  CHECK(show(2 * floor_div(seq, 8)) == "2*(seq/8)");
  CHECK(show(-floor_div(seq, 8)) == "-(seq/8)");
  CHECK(show(seq - floor_div(seq, 8)) == "seq - seq/8");
  CHECK(show(mod(seq, 8) + 1) == "seq%8 + 1");
  CHECK(show(floor_div(x, y + 1)) == "x/(y + 1)");
  CHECK(show(ceil_div(x, y)) == "ceil_div(x, y)");
  CHECK(show(Expr(-5)) == "-5");
  CHECK(graph::to_sexp(2 * seq + 1) == "(+ (* 2 seq) 1)");
  CHECK(graph::to_sexp(min(floor_div(x, 4), y)) == "(min y (div x 4))");
  CHECK(graph::to_sexp(lt(x, y)) == "(<= (+ x 1) y)");
  // Unsimplified trees print as written.
  Expr raw = Expr::node(ExprOp::Add, {Expr::node(ExprOp::Mul, {x, 4}), Expr(-3), Expr::node(ExprOp::Mul, {-2, y})});
  CHECK(show(raw) == "x*4 - 3 - 2*y");
  CHECK(show(Expr::node(ExprOp::FloorDiv, {Expr::node(ExprOp::Mul, {-1, x}), 8})) == "(-x)/8");
  CHECK(show(mod(floor_div(x, 4), 8)) == "(x/4)%8");
  CHECK(show(floor_div(6 * x, 8)) == "(3*x)/4");
  CHECK(show(Expr::node(ExprOp::Mul, {-1, Expr::node(ExprOp::FloorDiv, {x, 8})})) == "-(x/8)");
}

TEST_CASE("expr: parsing reads the printed forms back", "[graph]") {
  CHECK(parse("2*seq + 1") == 2 * seq + 1);
  CHECK(parse("(x*8 + 3)/8") == x);
  CHECK(parse("(x*8+3) % 8") == 3);
  CHECK(parse("min(x, x + 1)") == x);
  CHECK(parse("max(x, y, 3)") == max(max(x, y), 3));
  CHECK(parse("ceil_div(seq, 64)") == ceil_div(seq, 64));
  CHECK(parse("floor_div(x, 4) + mod(x, 4)") == floor_div(x, 4) + mod(x, 4));
  CHECK(parse("-x/8") == floor_div(-x, 8));
  CHECK(parse("-(x/8)") == -floor_div(x, 8));
  CHECK(parse("x - -3") == x + 3);
  CHECK(parse("x > y") == lt(y, x));
  CHECK(parse("x >= y") == le(y, x));
  CHECK(parse("(x < y) + (x == 2)") == lt(x, y) + eq(x, 2));
  CHECK(parse("-9223372036854775808") == Expr(INT64_MIN));
  CHECK(parse("9223372036854775807") == Expr(INT64_MAX));
  CHECK(parse(" \tx\n") == x);
  for (const Expr& e : {2 * seq + 1, floor_div(4 * x + 2, 8), mod(4 * x + 2, 8), ceil_div(x, y + 2),
                        -floor_div(x, 8) + y * mod(x, 3), lt(x, y) * 2 + eq(x, 2 * y),
                        min(min(x, y), z) - max(3, y), Expr(INT64_MIN) + x, le(max(x, 4), y)}) {
    INFO(show(e));
    CHECK(parse(show(e)) == e);
  }
}

TEST_CASE("expr: parse errors say what and where", "[graph]") {
  auto error = [](const std::string& text) { return user_error([&] { graph::parse_expr(text, "shape"); }); };
  CHECK_THAT(error("x +"), Catch::Contains("shape:1:4: error: expected an expression, found the end of the input"));
  CHECK_THAT(error("(x + 1"), Catch::Contains("shape:1:7: error: expected ')'"));
  CHECK_THAT(error("x $ y"), Catch::Contains("shape:1:3: error: unexpected '$' after the expression"));
  CHECK_THAT(error("foo(x)"), Catch::Contains("shape:1:1: error: unknown function 'foo'"));
  CHECK_THAT(error("min(x)"), Catch::Contains("min takes two or more arguments"));
  CHECK_THAT(error("mod(x, 2, 3)"), Catch::Contains("mod takes two arguments"));
  CHECK_THAT(error("x < y < z"), Catch::Contains("shape:1:7: error: comparisons do not chain"));
  CHECK_THAT(error("x = y"), Catch::Contains("expected '==' to compare"));
  CHECK_THAT(error("99999999999999999999"), Catch::Contains("integer literal out of the 64-bit range"));
  CHECK_THAT(error("9223372036854775808"), Catch::Contains("out of the 64-bit range"));
  CHECK_THAT(error("3x"), Catch::Contains("unexpected 'x' in a number"));
  CHECK_THAT(error(""), Catch::Contains("expected an expression"));
  // Errors from an operator point at the operator, with the source line and a caret.
  std::string zero = error("seq + x/(y - y)");
  CHECK_THAT(zero, Catch::Contains("shape:1:8: error: division by zero"));
  CHECK_THAT(zero, Catch::Contains("  seq + x/(y - y)\n         ^"));
}

TEST_CASE("expr: nesting deeper than 200 levels is a located error, even 100k deep", "[graph]") {
  auto nested = [](std::size_t depth, const std::string& open, const std::string& close) {
    std::string text;
    for (std::size_t i = 0; i < depth; ++i) text += open;
    text += "1";
    for (std::size_t i = 0; i < depth; ++i) text += close;
    return text;
  };
  auto error = [](const std::string& text) {
    return user_error([&] { graph::parse_expr(text, "shape"); });
  };
  // 200 levels read (and print back); the 201st opening is the error, with its column.
  CHECK(graph::evaluate(graph::parse_expr(nested(200, "(", ")")), {}) == 1);
  CHECK(graph::evaluate(graph::parse_expr(nested(199, "min(1, ", ")")), {}) == 1);
  CHECK_THAT(error(nested(201, "(", ")")),
             Catch::Contains("shape:1:201: error: expression nested more than 200 levels deep"));
  // Each kind of level counts: parentheses, calls and unary minus, 100k deep.
  for (const auto& [open, close] : std::vector<std::pair<std::string, std::string>>{
           {"(", ")"}, {"max(x, ", ")"}, {"-", ""}, {"floor_div(", ", 2)"}}) {
    CHECK_THAT(error(nested(100000, open, close)),
               Catch::Contains("error: expression nested more than 200 levels deep"));
  }
}

TEST_CASE("expr: more than 1000 operators is a located error (simplifying them is quadratic)",
          "[graph]") {
  auto sum_of_dims = [](int terms) {
    std::string text = "d0";
    for (int i = 1; i < terms; ++i) text += " + d" + std::to_string(i);
    return text;
  };
  CHECK(graph::free_dims(graph::parse_expr(sum_of_dims(1001))).size() == 1001);
  const std::string error = user_error([&] { graph::parse_expr(sum_of_dims(1002), "shape"); });
  CHECK_THAT(error, Catch::Contains("error: expression has more than 1000 operators"));
  std::string arguments = "max(x";
  for (int i = 0; i < 1001; ++i) arguments += ", y";
  CHECK_THAT(user_error([&] { graph::parse_expr(arguments + ")"); }),
             Catch::Contains("expression has more than 1000 operators"));
}

TEST_CASE("expr: evaluation binds every dim", "[graph]") {
  Expr e = parse("2*seq + floor_div(batch, 3) - min(seq, 4) + (seq < batch)");
  CHECK(graph::evaluate(e, {{"seq", 5}, {"batch", 7}}) == 10 + 2 - 4 + 1);
  CHECK(graph::evaluate(e, {{"seq", 0}, {"batch", 0}}) == 0);
  CHECK(graph::evaluate(Expr(42), {}) == 42);
  CHECK_THAT(user_error([&] { graph::evaluate(e, {{"seq", 5}}); }), Catch::Contains("no value for dim 'batch'"));
  CHECK_THAT(user_error([&] { graph::evaluate(e, {{"seq", -1}, {"batch", 1}}); }),
             Catch::Contains("dim 'seq' is -1, but dims are non-negative"));
  CHECK_THAT(user_error([&] { graph::evaluate(x * x, {{"x", std::int64_t{1} << 40}}); }),
             Catch::Contains("integer overflow evaluating `x*x`"));
  // Unsimplified trees evaluate as written.
  Expr raw = Expr::node(ExprOp::Mod, {Expr::node(ExprOp::Add, {x, -9}), 4});
  CHECK(graph::evaluate(raw, {{"x", 2}}) == 1);
  CHECK(graph::evaluate(Expr::node(ExprOp::CeilDiv, {x, -4}), {{"x", 7}}) == -1);
}

TEST_CASE("expr: substitution replaces dims and simplifies", "[graph]") {
  Expr e = floor_div(x, 8) * 8 + mod(x, 8) + y;
  CHECK(graph::substitute(e, {{"y", 2 * z}}) == x + 2 * z);
  CHECK(graph::substitute(e, {{"x", 8 * z + 3}}) == 8 * z + 3 + y);
  CHECK(graph::substitute(floor_div(x, 4), {{"x", 20}}) == 5);
  CHECK(graph::substitute(x * y, {{"x", y}, {"y", x}}) == x * y);  // simultaneous
  CHECK(graph::substitute(x + 1, {}) == x + 1);
  CHECK_THAT(user_error([] { graph::substitute(min(x, 0), {{"x", y - 5}}); }),
             Catch::Contains("cannot substitute `y - 5` for dim 'x': it may be negative"));
  CHECK_THAT(user_error([] { graph::substitute(x, {{"x", floor_div(y, 1) - z}}); }), Catch::Contains("may be negative"));
}

TEST_CASE("expr: bounds follow the dims' ranges", "[graph]") {
  CHECK(graph::bounds(x) == Interval{0, Interval::kPosInf});
  CHECK(graph::bounds(-x) == Interval{Interval::kNegInf, 0});
  CHECK(graph::bounds(x + 3) == Interval{3, Interval::kPosInf});
  CHECK(graph::bounds(mod(x, 8)) == Interval{0, 7});
  CHECK(graph::bounds(mod(x, -8)) == Interval{-7, 0});
  DimRanges ranges{{"seq", {1, 4096}}, {"batch", {1, 8}}};
  CHECK(graph::bounds(seq * batch, ranges) == Interval{1, 32768});
  CHECK(graph::bounds(seq - batch, ranges) == Interval{-7, 4095});
  CHECK(graph::bounds(ceil_div(seq, 64), ranges) == Interval{1, 64});
  CHECK(graph::bounds(floor_div(seq, batch), ranges) == Interval{0, 4096});
  CHECK(graph::bounds(mod(seq, batch), ranges) == Interval{0, 7});
  CHECK(graph::bounds(min(seq, 100) - 3, ranges) == Interval{-2, 97});
  CHECK(graph::bounds(lt(batch, seq + 10), ranges) == Interval{1, 1});
  CHECK(graph::bounds(eq(seq, batch), ranges) == Interval{0, 1});
  CHECK(graph::bounds(x * x * x * x * x * 1000000000) == Interval{0, Interval::kPosInf});
  CHECK(graph::bounds(Expr(INT64_MAX) + x) == Interval{INT64_MAX, Interval::kPosInf});
  CHECK_THAT(user_error([] { graph::bounds(x, {{"x", {-1, 3}}}); }), Catch::Contains("reaches below 0"));
  CHECK_THAT(user_error([] { graph::bounds(x, {{"x", {4, 3}}}); }), Catch::Contains("is empty"));
}

TEST_CASE("expr: simplify with ranges uses them", "[graph]") {
  DimRanges ranges{{"seq", {1, 4096}}, {"head", {64, 64}}};
  Expr head = Expr::dim("head");
  CHECK(graph::simplify(min(seq, 4096), ranges) == seq);
  CHECK(graph::simplify(min(seq, 4096)) == min(seq, 4096));
  CHECK(graph::simplify(floor_div(seq, 8192), ranges) == 0);
  CHECK(graph::simplify(seq * head, ranges) == 64 * seq);
  CHECK(graph::simplify(le(1, seq), ranges) == 1);
  CHECK_THAT(user_error([&] { graph::simplify(seq, {{"seq", {-4, 4}}}); }), Catch::Contains("reaches below 0"));
}

TEST_CASE("expr: free dims, accessors and dim names", "[graph]") {
  CHECK(graph::free_dims(parse("seq*batch + min(x, seq) + 1")) == std::vector<std::string>{"batch", "seq", "x"});
  CHECK(graph::free_dims(Expr(3)).empty());
  Expr e = 2 * seq + 1;
  CHECK(e.op() == ExprOp::Add);
  REQUIRE(e.args().size() == 2);
  CHECK(e.args()[1].value() == 1);
  CHECK(e.args()[0].args()[1].name() == "seq");
  CHECK(e.is_canonical());
  CHECK_FALSE(Expr::node(ExprOp::Add, {x, 1}).is_canonical());
  CHECK(graph::simplify(Expr::node(ExprOp::Add, {x, 1})) == e.args()[1] + x);
  CHECK_THAT(user_error([] { Expr::dim("2x"); }), Catch::Contains("invalid dim name '2x'"));
  CHECK_THAT(user_error([] { Expr::dim(""); }), Catch::Contains("invalid dim name"));
  CHECK_NOTHROW(Expr::dim("_kv_len2"));
  // A wrong argument count is the caller's bug, not the user's.
  CHECK_THROWS_AS(Expr::node(ExprOp::Mod, {x}), kiln::support::InternalError);
  CHECK_THROWS_AS(Expr::node(ExprOp::Min, {x}), kiln::support::InternalError);
  CHECK_THROWS_AS(x.name() == "x" ? Expr(1).name() : "", kiln::support::InternalError);
}

namespace {

// A random unsimplified tree over x, y, z with every operator; divisors are often constants.
Expr random_tree(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto small = [&] { return static_cast<std::int64_t>(pick(13)) - 6; };
  if (depth == 0 || pick(5) == 0) {
    if (pick(2) == 0) return small();
    return std::vector<Expr>{x, y, z}[static_cast<std::size_t>(pick(3))];
  }
  auto sub = [&] { return random_tree(rng, depth - 1); };
  auto divisor = [&]() -> Expr {
    if (pick(3) == 0) return sub();
    std::int64_t c = 0;
    while (c == 0) c = static_cast<std::int64_t>(pick(17)) - 8;
    return c;
  };
  switch (pick(12)) {
    case 0: return Expr::node(ExprOp::Add, {sub(), sub()});
    case 1: return Expr::node(ExprOp::Add, {sub(), Expr::node(ExprOp::Mul, {-1, sub()})});
    case 2: return Expr::node(ExprOp::Mul, {sub(), sub()});
    case 3: return Expr::node(ExprOp::Mul, {small(), sub()});
    case 4: return Expr::node(ExprOp::FloorDiv, {sub(), divisor()});
    case 5: return Expr::node(ExprOp::CeilDiv, {sub(), divisor()});
    case 6: return Expr::node(ExprOp::Mod, {sub(), divisor()});
    case 7: return Expr::node(ExprOp::Min, {sub(), sub()});
    case 8: return Expr::node(ExprOp::Max, {sub(), sub()});
    case 9: return Expr::node(ExprOp::Lt, {sub(), sub()});
    case 10: return Expr::node(ExprOp::Le, {sub(), sub()});
    default: {
      // Sums of multiples: the shapes the div/mod rules work on.
      Expr a = sub();
      return Expr::node(ExprOp::Add, {Expr::node(ExprOp::Mul, {a, divisor()}), sub(), small()});
    }
  }
}

std::optional<std::int64_t> try_evaluate(const Expr& e, const DimValues& values) {
  try {
    return graph::evaluate(e, values);
  } catch (const UserError&) {
    return std::nullopt;  // division by zero or overflow in this assignment
  }
}

}  // namespace

TEST_CASE("expr: simplification preserves the value of random trees", "[graph]") {
  std::mt19937 rng(20261201);
  const DimRanges ranges{{"x", {2, 5}}, {"y", {0, 3}}};
  std::size_t compared = 0;
  std::size_t simplified_smaller = 0;
  std::size_t always_failing = 0;
  for (int round = 0; round < 1500; ++round) {
    Expr raw = random_tree(rng, 1 + round % 4);
    INFO("tree: " << show(raw));
    std::optional<Expr> simplified;
    try {
      simplified = graph::simplify(raw);
    } catch (const UserError&) {
      // A divisor that is 0 for every assignment (`x/(z <= -3)`): the tree never evaluates.
      ++always_failing;
      for (std::int64_t v = 0; v < 6; ++v) {
        CHECK_FALSE(try_evaluate(raw, {{"x", v}, {"y", (v * 7) % 5}, {"z", (v * 3) % 4}}));
      }
      continue;
    }
    Expr s = *simplified;
    INFO("simplified: " << show(s));
    // Within the ranges a divisor may be 0 throughout (x/8 for x in [2, 5]); then r stays empty.
    std::optional<Expr> r;
    try {
      r = graph::simplify(raw, ranges);
    } catch (const UserError&) {
    }
    INFO("with ranges: " << (r ? show(*r) : "(division by zero)"));
    if (show(s).size() < show(raw).size()) ++simplified_smaller;

    // Canonical: idempotent, and the printed form reads back to the same tree and hash.
    CHECK(graph::simplify(unsimplified_copy(s)) == s);
    CHECK(graph::simplify(s) == s);
    Expr reparsed = parse(show(s));
    CHECK(reparsed == s);
    CHECK(reparsed.hash() == s.hash());
    CHECK(parse(show(raw)) == s);

    Interval raw_bounds = graph::bounds(raw);
    Interval s_bounds = graph::bounds(s);
    Interval r_bounds = r ? graph::bounds(*r, ranges) : Interval{};
    for (int trial = 0; trial < 25; ++trial) {
      auto draw = [&](int lo, int hi) { return static_cast<std::int64_t>(lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1))); };
      DimValues values{{"x", draw(0, 12)}, {"y", draw(0, 12)}, {"z", draw(0, 12)}};
      INFO("x=" << values["x"] << " y=" << values["y"] << " z=" << values["z"]);
      if (std::optional<std::int64_t> expected = try_evaluate(raw, values)) {
        ++compared;
        CHECK(try_evaluate(s, values) == expected);
        CHECK(raw_bounds.contains(*expected));
        CHECK(s_bounds.contains(*expected));
      }
      DimValues in_range{{"x", draw(2, 5)}, {"y", draw(0, 3)}, {"z", draw(0, 12)}};
      INFO("in range: x=" << in_range["x"] << " y=" << in_range["y"] << " z=" << in_range["z"]);
      std::optional<std::int64_t> expected = try_evaluate(raw, in_range);
      if (!r) {
        CHECK_FALSE(expected);
      } else if (expected) {
        CHECK(try_evaluate(*r, in_range) == expected);
        CHECK(r_bounds.contains(*expected));
      }
    }
  }
  // The generator must produce trees that evaluate, and the simplifier must do something.
  CHECK(compared > 1500 * 25 / 2);
  CHECK(simplified_smaller > 1500 / 3);
  CHECK(always_failing < 1500 / 20);
}

TEST_CASE("expr: sums and products in any order compare and hash equal", "[graph]") {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<Expr> terms;
    std::size_t n = 2 + rng() % 4;
    while (terms.size() < n) {
      try {
        terms.push_back(graph::simplify(random_tree(rng, 2)));
      } catch (const UserError&) {
        // a constant zero divisor; draw again
      }
    }
    Expr sum_forward = 0;
    Expr product_forward = 1;
    for (const Expr& t : terms) {
      sum_forward = sum_forward + t;
      product_forward = product_forward * t;
    }
    std::shuffle(terms.begin(), terms.end(), rng);
    Expr sum_shuffled = terms[0];
    Expr product_shuffled = terms[0];
    for (std::size_t i = 1; i < terms.size(); ++i) {
      sum_shuffled = terms[i] + sum_shuffled;
      product_shuffled = terms[i] * product_shuffled;
    }
    INFO(show(sum_forward) << " vs " << show(sum_shuffled));
    CHECK(sum_forward == sum_shuffled);
    CHECK(sum_forward.hash() == sum_shuffled.hash());
    CHECK(product_forward == product_shuffled);
    CHECK(product_forward.hash() == product_shuffled.hash());
    // min and max are commutative and associative too.
    CHECK(min(min(terms[0], terms[1]), terms.back()) == min(terms.back(), min(terms[1], terms[0])));
    CHECK(max(terms[0], terms[1]).hash() == max(terms[1], terms[0]).hash());
  }
}
