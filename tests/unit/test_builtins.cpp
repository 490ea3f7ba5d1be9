#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"

using namespace kiln::engine;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// An e-graph with the builtins, and calls that pick the overload by argument sorts.
struct Prims {
  EGraph egraph;
  Builtins b = add_builtins(egraph);

  const Primitive* resolve(const std::string& name, const std::vector<SortId>& sorts) const {
    for (const Primitive* p : egraph.primitives().overloads(name)) {
      const std::size_t n = p->inputs.size();
      if (p->variadic ? sorts.size() + 1 < n : sorts.size() != n) continue;
      bool ok = true;
      for (std::size_t i = 0; i < sorts.size() && ok; ++i) {
        SortId want = i < n ? p->inputs[i] : p->inputs.back();
        ok = want == kAnySort || want == sorts[i];
      }
      if (ok) return p;
    }
    return nullptr;
  }

  std::optional<Value> call(const std::string& name, const std::vector<SortId>& sorts,
                            const std::vector<Value>& args) const {
    const Primitive* p = resolve(name, sorts);
    REQUIRE(p != nullptr);
    Value out = 0xdeadbeef;
    if (!p->apply(args.data(), args.size(), out)) return std::nullopt;
    return out;
  }

  // i64 arguments.
  std::optional<std::int64_t> i(const std::string& name, std::vector<std::int64_t> xs) const {
    std::vector<Value> args;
    for (auto x : xs) args.push_back(I64Sort::make(x));
    auto r = call(name, std::vector<SortId>(xs.size(), b.i64), args);
    if (!r) return std::nullopt;
    return I64Sort::get(*r);
  }
  // i64 arguments, result of another sort (raw value).
  std::optional<Value> i_raw(const std::string& name, std::vector<std::int64_t> xs) const {
    std::vector<Value> args;
    for (auto x : xs) args.push_back(I64Sort::make(x));
    return call(name, std::vector<SortId>(xs.size(), b.i64), args);
  }
  // f64 arguments, raw result.
  std::optional<Value> f_raw(const std::string& name, std::vector<double> xs) const {
    std::vector<Value> args;
    for (auto x : xs) args.push_back(b.f64_sort->make(x));
    return call(name, std::vector<SortId>(xs.size(), b.f64), args);
  }
  // f64 arguments and result.
  std::optional<double> f(const std::string& name, std::vector<double> xs) const {
    auto r = f_raw(name, xs);
    if (!r) return std::nullopt;
    return F64Sort::get(*r);
  }
  // f64 arguments, result printed by its sort.
  std::string f_print(const std::string& name, std::vector<double> xs) const {
    auto r = f_raw(name, xs);
    REQUIRE(r.has_value());
    return b.f64_sort->print(*r);
  }
  bool f_holds(const std::string& name, std::vector<double> xs) const {
    return f_raw(name, xs).has_value();
  }
  // String arguments and result.
  std::optional<std::string> s(const std::string& name, std::vector<std::string> xs) const {
    std::vector<Value> args;
    for (auto& x : xs) args.push_back(b.string_sort->make(x));
    auto r = call(name, std::vector<SortId>(xs.size(), b.string), args);
    if (!r) return std::nullopt;
    return b.string_sort->get(*r);
  }
  std::optional<bool> bl(const std::string& name, std::vector<bool> xs) const {
    std::vector<Value> args;
    for (bool x : xs) args.push_back(BoolSort::make(x));
    auto r = call(name, std::vector<SortId>(xs.size(), b.boolean), args);
    if (!r) return std::nullopt;
    return BoolSort::get(*r);
  }
  std::string f64_text(double x) const { return b.f64_sort->print(b.f64_sort->make(x)); }
};

}  // namespace

TEST_CASE("builtins: adds the five primitive sorts by name [engine]") {
  Prims p;
  CHECK(p.egraph.find_sort("Unit") == p.b.unit);
  CHECK(p.egraph.find_sort("bool") == p.b.boolean);
  CHECK(p.egraph.find_sort("i64") == p.b.i64);
  CHECK(p.egraph.find_sort("f64") == p.b.f64);
  CHECK(p.egraph.find_sort("String") == p.b.string);
  for (SortId s : {p.b.unit, p.b.boolean, p.b.i64, p.b.f64, p.b.string}) {
    CHECK_FALSE(p.egraph.is_eq(s));
    CHECK(p.egraph.sort(s).primitive != nullptr);
  }
  CHECK(p.egraph.sort(p.b.unit).primitive->print(0) == "()");
  CHECK(p.egraph.sort(p.b.boolean).primitive->print(1) == "true");
  CHECK(p.egraph.sort(p.b.boolean).primitive->print(0) == "false");
  CHECK(p.egraph.sort(p.b.i64).primitive->print(I64Sort::make(-5)) == "-5");
  CHECK(p.egraph.sort(p.b.i64).primitive->print(I64Sort::make(kMin)) == "-9223372036854775808");
}

TEST_CASE("builtins: names egglog lacks are not registered [engine]") {
  Prims p;
  for (const char* name :
       {"=", "neg-i64", "str-concat", "bool-=="})
    CHECK_FALSE(p.egraph.primitives().contains(name));
  // pow, floor, ceil and round exist for BigRat only, as in egglog.
  for (const char* name : {"floor", "ceil", "round"}) CHECK(p.resolve(name, {p.b.f64}) == nullptr);
  CHECK(p.resolve("pow", {p.b.f64, p.b.f64}) == nullptr);
  // No unary minus or neg on i64, no bool-< on f64, no to-string on strings.
  CHECK(p.resolve("-", {p.b.i64}) == nullptr);
  CHECK(p.resolve("neg", {p.b.i64}) == nullptr);
  CHECK(p.resolve("bool-<", {p.b.f64, p.b.f64}) == nullptr);
  CHECK(p.resolve("bool-=", {p.b.f64, p.b.f64}) == nullptr);
  CHECK(p.resolve("to-string", {p.b.string}) == nullptr);
  CHECK(p.resolve("to-f64", {p.b.f64}) == nullptr);
  CHECK(p.resolve("min", {p.b.i64, p.b.i64, p.b.i64}) == nullptr);
  CHECK(p.resolve("and", {p.b.boolean, p.b.boolean, p.b.boolean}) == nullptr);
  CHECK(p.resolve("+", {p.b.i64, p.b.i64, p.b.i64}) == nullptr);
}

TEST_CASE("builtins: i64 arithmetic is checked and fails on overflow [engine]") {
  Prims p;
  CHECK(p.i("+", {2, 3}) == 5);
  CHECK(p.i("-", {2, 3}) == -1);
  CHECK(p.i("*", {-4, 3}) == -12);
  CHECK_FALSE(p.i("+", {kMax, 1}));
  CHECK_FALSE(p.i("+", {kMin, -1}));
  CHECK_FALSE(p.i("-", {kMin, 1}));
  CHECK_FALSE(p.i("-", {-kMax, 2}));
  CHECK_FALSE(p.i("-", {0, kMin}));
  CHECK_FALSE(p.i("*", {kMax, 2}));
  CHECK_FALSE(p.i("*", {kMin, -1}));
  CHECK(p.i("*", {-kMax, -1}) == kMax);
  CHECK(p.i("+", {kMax, 0}) == kMax);
}

TEST_CASE("builtins: i64 division truncates and fails on zero [engine]") {
  Prims p;
  CHECK(p.i("/", {-7, 2}) == -3);
  CHECK(p.i("/", {7, -2}) == -3);
  CHECK(p.i("/", {kMin, 1}) == kMin);
  CHECK_FALSE(p.i("/", {1, 0}));
  CHECK_FALSE(p.i("/", {0, 0}));
  CHECK_FALSE(p.i("/", {kMin, -1}));
  CHECK(p.i("%", {-7, 2}) == -1);
  CHECK(p.i("%", {7, -2}) == 1);
  CHECK(p.i("%", {kMax, -1}) == 0);
  CHECK_FALSE(p.i("%", {5, 0}));
  CHECK_FALSE(p.i("%", {kMin, -1}));
}

TEST_CASE("builtins: i64 bit operations and shifts [engine]") {
  Prims p;
  CHECK(p.i("&", {12, 10}) == 8);
  CHECK(p.i("|", {12, 10}) == 14);
  CHECK(p.i("^", {5, 3}) == 6);  // xor, not pow
  CHECK(p.i("not-i64", {0}) == -1);
  CHECK(p.i("not-i64", {kMax}) == kMin);
  CHECK(p.i("<<", {1, 63}) == kMin);
  CHECK(p.i("<<", {-1, 63}) == kMin);
  CHECK(p.i("<<", {3, 0}) == 3);
  CHECK(p.i("<<", {kMax, 1}) == -2);  // bits shifted out are lost, no overflow check
  CHECK_FALSE(p.i("<<", {1, 64}));
  CHECK_FALSE(p.i("<<", {1, -1}));
  CHECK(p.i(">>", {-16, 2}) == -4);  // arithmetic
  CHECK(p.i(">>", {-1, 63}) == -1);
  CHECK(p.i(">>", {kMin, 63}) == -1);
  CHECK_FALSE(p.i(">>", {1, 64}));
  CHECK_FALSE(p.i(">>", {1, -1}));
}

TEST_CASE("builtins: i64 log2, abs, min, max [engine]") {
  Prims p;
  CHECK(p.i("log2", {1}) == 0);
  CHECK(p.i("log2", {8}) == 3);
  CHECK(p.i("log2", {9}) == 3);
  CHECK(p.i("log2", {kMax}) == 62);
  CHECK_FALSE(p.i("log2", {0}));
  CHECK_FALSE(p.i("log2", {-4}));
  CHECK(p.i("abs", {-5}) == 5);
  CHECK(p.i("abs", {-kMax}) == kMax);
  CHECK(p.i("abs", {0}) == 0);
  CHECK_FALSE(p.i("abs", {kMin}));
  CHECK(p.i("min", {1, 2}) == 1);
  CHECK(p.i("min", {-1, 2}) == -1);
  CHECK(p.i("max", {-1, -2}) == -1);
}

TEST_CASE("builtins: i64 comparisons return Unit or fail, bool- forms return bool [engine]") {
  Prims p;
  CHECK(p.i_raw("<", {1, 2}) == Value{0});
  CHECK_FALSE(p.i_raw("<", {2, 2}));
  CHECK_FALSE(p.i_raw(">", {2, 2}));
  CHECK(p.i_raw(">", {3, 2}) == Value{0});
  CHECK(p.i_raw("<=", {2, 2}) == Value{0});
  CHECK_FALSE(p.i_raw("<=", {3, 2}));
  CHECK(p.i_raw(">=", {2, 2}) == Value{0});
  CHECK_FALSE(p.i_raw(">=", {-3, 2}));
  CHECK(p.resolve("<", {p.b.i64, p.b.i64})->output == p.b.unit);

  CHECK(p.i_raw("bool-=", {1, 1}) == BoolSort::make(true));
  CHECK(p.i_raw("bool-=", {1, 2}) == BoolSort::make(false));
  CHECK(p.i_raw("bool-<", {1, 2}) == BoolSort::make(true));
  CHECK(p.i_raw("bool-<", {2, 2}) == BoolSort::make(false));
  CHECK(p.i_raw("bool->", {kMin, kMax}) == BoolSort::make(false));
  CHECK(p.i_raw("bool-<=", {2, 2}) == BoolSort::make(true));
  CHECK(p.i_raw("bool->=", {1, 2}) == BoolSort::make(false));
  CHECK(p.resolve("bool-=", {p.b.i64, p.b.i64})->output == p.b.boolean);
}

TEST_CASE("builtins: i64 conversions to f64 and String [engine]") {
  Prims p;
  auto f = p.i_raw("to-f64", {-9223372036854775807 - 1});
  REQUIRE(f);
  CHECK(p.b.f64_sort->print(*f) == "-9223372036854776000");
  auto g = p.i_raw("to-f64", {9007199254740993});
  REQUIRE(g);
  CHECK(F64Sort::get(*g) == 9007199254740992.0);
  auto s = p.i_raw("to-string", {-42});
  REQUIRE(s);
  CHECK(p.b.string_sort->get(*s) == "-42");
  CHECK(p.b.string_sort->print(*s) == "\"-42\"");
  CHECK(p.resolve("to-string", {p.b.i64})->output == p.b.string);
}

TEST_CASE("builtins: f64 arithmetic is IEEE and never fails [engine]") {
  Prims p;
  CHECK(p.f("+", {1.5, 2.25}) == 3.75);
  CHECK(p.f("-", {1.0, 3.0}) == -2.0);
  CHECK(p.f("*", {1e200, 1e200}) == kInf);
  CHECK(std::isnan(*p.f("-", {kInf, kInf})));
  CHECK(p.f("^", {2.0, 10.0}) == 1024.0);
  CHECK(std::isnan(*p.f("^", {-8.0, 0.5})));
  CHECK(p.f("^", {0.0, -1.0}) == kInf);
  CHECK(p.f("^", {kNaN, 0.0}) == 1.0);
  CHECK(p.f("^", {1.0, kNaN}) == 1.0);
  CHECK(p.f("neg", {2.5}) == -2.5);
  CHECK(p.f("abs", {-2.5}) == 2.5);
  CHECK(std::isnan(*p.f("abs", {kNaN})));
}

TEST_CASE("builtins: f64 division and remainder fail on a zero divisor [engine]") {
  Prims p;
  CHECK(p.f("/", {1.0, 4.0}) == 0.25);
  CHECK(p.f("/", {1.0, kInf}) == 0.0);
  CHECK_FALSE(p.f("/", {1.0, 0.0}));
  CHECK_FALSE(p.f("/", {1.0, -0.0}));
  CHECK_FALSE(p.f("/", {0.0, 0.0}));
  CHECK(p.f("%", {-5.5, 2.0}) == -1.5);
  CHECK(p.f("%", {5.5, -2.0}) == 1.5);
  CHECK(p.f("%", {2.0, kInf}) == 2.0);
  CHECK(std::isnan(*p.f("%", {kInf, 2.0})));
  CHECK_FALSE(p.f("%", {5.0, 0.0}));
  CHECK_FALSE(p.f("%", {5.0, -0.0}));
}

TEST_CASE("builtins: f64 exp, log, sqrt and their failures [engine]") {
  Prims p;
  CHECK(p.f_print("exp", {1.0}) == "2.718281828459045");
  CHECK(p.f("exp", {1000.0}) == kInf);
  CHECK(p.f("exp", {-0.0}) == 1.0);
  CHECK(std::isnan(*p.f("exp", {kNaN})));
  CHECK(p.f("log", {1.0}) == 0.0);
  CHECK(p.f("log", {kInf}) == kInf);
  CHECK(std::isnan(*p.f("log", {kNaN})));
  CHECK_FALSE(p.f("log", {0.0}));
  CHECK_FALSE(p.f("log", {-0.0}));
  CHECK_FALSE(p.f("log", {-1.0}));
  CHECK_FALSE(p.f("log", {-kInf}));
  CHECK(p.f_print("sqrt", {2.0}) == "1.4142135623730951");
  CHECK(p.f("sqrt", {0.0}) == 0.0);
  CHECK(std::isnan(*p.f("sqrt", {kNaN})));
  CHECK_FALSE(p.f("sqrt", {-1.0}));
  CHECK_FALSE(p.f("sqrt", {-kInf}));
  // sqrt(-0.0) is accepted; -0.0 was interned first, so it prints as -0.0.
  CHECK(p.f_print("sqrt", {-0.0}) == "-0.0");
}

TEST_CASE("builtins: f64 min, max and comparisons use OrderedFloat order [engine]") {
  Prims p;
  CHECK(p.f("min", {1.0, 2.0}) == 1.0);
  CHECK(p.f("max", {1.0, 2.0}) == 2.0);
  CHECK(p.f("min", {1.0, kNaN}) == 1.0);
  CHECK(p.f("min", {kNaN, 1.0}) == 1.0);
  CHECK(std::isnan(*p.f("max", {kNaN, 1.0})));
  CHECK(std::isnan(*p.f("max", {1.0, kNaN})));
  CHECK(std::isnan(*p.f("min", {kNaN, kNaN})));
  CHECK(p.f_holds("<", {1.0, kNaN}));
  CHECK_FALSE(p.f_holds("<", {kNaN, 1.0}));
  CHECK(p.f_holds(">=", {kNaN, kInf}));
  CHECK_FALSE(p.f_holds(">", {kNaN, kNaN}));
  CHECK(p.f_holds("<=", {kNaN, kNaN}));
  CHECK_FALSE(p.f_holds("<", {-0.0, 0.0}));
  CHECK(p.f_holds("<=", {0.0, -0.0}));
  CHECK(p.f_holds("<", {-kInf, -1.0}));
  CHECK(p.f_holds(">", {2.0, 1.0}));
  CHECK_FALSE(p.f_holds(">", {1.0, 2.0}));
  CHECK(p.f_holds(">=", {2.0, 2.0}));
  CHECK(p.f_raw("<", {1.0, 2.0}) == Value{0});
}

TEST_CASE("builtins: f64-is-finite and to-i64 saturates [engine]") {
  Prims p;
  CHECK(p.f_raw("f64-is-finite", {1.0}) == Value{0});
  CHECK_FALSE(p.f_holds("f64-is-finite", {kNaN}));
  CHECK_FALSE(p.f_holds("f64-is-finite", {kInf}));
  CHECK_FALSE(p.f_holds("f64-is-finite", {-kInf}));
  auto to_i64 = [&](double x) { return I64Sort::get(*p.f_raw("to-i64", {x})); };
  CHECK(to_i64(2.7) == 2);
  CHECK(to_i64(-2.7) == -2);
  CHECK(to_i64(-0.5) == 0);
  CHECK(to_i64(kNaN) == 0);
  CHECK(to_i64(1e30) == kMax);
  CHECK(to_i64(9.3e18) == kMax);
  CHECK(to_i64(kInf) == kMax);
  CHECK(to_i64(-1e30) == kMin);
  CHECK(to_i64(-kInf) == kMin);
  CHECK(to_i64(-9223372036854775808.0) == kMin);
}

TEST_CASE("builtins: f64 prints like Rust Display, plus .0 when it reads as an i64 [engine]") {
  Prims p;
  CHECK(p.f64_text(1.0) == "1.0");
  CHECK(p.f64_text(100000.0) == "100000.0");
  CHECK(p.f64_text(0.1) == "0.1");
  CHECK(p.f64_text(-0.0) == "-0.0");
  CHECK(p.f64_text(2.5e-3) == "0.0025");
  CHECK(p.f64_text(1e-7) == "0.0000001");
  CHECK(p.f64_text(123.456) == "123.456");
  CHECK(p.f64_text(-2.5) == "-2.5");
  CHECK(p.f64_text(1e16) == "10000000000000000.0");
  CHECK(p.f64_text(1e20) == "100000000000000000000");
  CHECK(p.f64_text(-1e20) == "-100000000000000000000");
  CHECK(p.f64_text(9223372036854775808.0) == "9223372036854776000");
  CHECK(p.f64_text(1.2345678901234568e17) == "123456789012345680.0");
  CHECK(p.f64_text(1e308) == "1" + std::string(308, '0'));
  CHECK(p.f64_text(1.7976931348623157e308) == "17976931348623157" + std::string(292, '0'));
  CHECK(p.f64_text(5e-324) == "0." + std::string(323, '0') + "5");
  CHECK(p.f64_text(2.2250738585072014e-308) == "0." + std::string(307, '0') + "22250738585072014");
  // An exact tie between two shortest candidates rounds up, as Rust does.
  CHECK(p.f64_text(1608882928643910.25) == "1608882928643910.3");
  CHECK(p.f64_text(-1128210629364242.25) == "-1128210629364242.3");
  CHECK(p.f64_text(kNaN) == "NaN");
  CHECK(p.f64_text(kInf) == "inf");
  CHECK(p.f64_text(-kInf) == "-inf");
}

TEST_CASE("builtins: f64 to-string uses Rust Debug formatting [engine]") {
  CHECK(F64Sort::debug_string(1e20) == "1e20");
  CHECK(F64Sort::debug_string(-1e20) == "-1e20");
  CHECK(F64Sort::debug_string(1.0) == "1.0");
  CHECK(F64Sort::debug_string(0.1) == "0.1");
  CHECK(F64Sort::debug_string(0.0) == "0.0");
  CHECK(F64Sort::debug_string(-0.0) == "-0.0");
  CHECK(F64Sort::debug_string(kNaN) == "NaN");
  CHECK(F64Sort::debug_string(kInf) == "inf");
  CHECK(F64Sort::debug_string(-kInf) == "-inf");
  CHECK(F64Sort::debug_string(1e16) == "1e16");
  CHECK(F64Sort::debug_string(1e15) == "1000000000000000.0");
  CHECK(F64Sort::debug_string(9999999999999998.0) == "9999999999999998.0");
  CHECK(F64Sort::debug_string(1e-4) == "0.0001");
  CHECK(F64Sort::debug_string(0.00012345) == "0.00012345");
  CHECK(F64Sort::debug_string(1e-5) == "1e-5");
  CHECK(F64Sort::debug_string(-1e-5) == "-1e-5");
  CHECK(F64Sort::debug_string(1.5e-7) == "1.5e-7");
  CHECK(F64Sort::debug_string(1.2345678901234568e17) == "1.2345678901234568e17");
  CHECK(F64Sort::debug_string(1e308) == "1e308");
  CHECK(F64Sort::debug_string(1.7976931348623157e308) == "1.7976931348623157e308");
  CHECK(F64Sort::debug_string(5e-324) == "5e-324");
  CHECK(F64Sort::debug_string(1e-320) == "1e-320");
  CHECK(F64Sort::debug_string(0.1 + 0.2) == "0.30000000000000004");
  CHECK(F64Sort::debug_string(1608882928643910.25) == "1608882928643910.3");

  Prims p;
  auto s = p.f_raw("to-string", {1e20});
  REQUIRE(s);
  CHECK(p.b.string_sort->get(*s) == "1e20");
  CHECK(p.resolve("to-string", {p.b.f64})->output == p.b.string);
}

TEST_CASE("builtins: f64 values use ordered-float equality, first spelling wins [engine]") {
  SECTION("0.0 first") {
    F64Sort f;
    Value zero = f.make(0.0);
    CHECK(f.make(-0.0) == zero);
    CHECK(f.print(f.make(-0.0)) == "0.0");
  }
  SECTION("-0.0 first") {
    F64Sort f;
    Value neg_zero = f.make(-0.0);
    CHECK(f.make(0.0) == neg_zero);
    CHECK(f.print(f.make(0.0)) == "-0.0");
  }
  SECTION("all NaNs are one value") {
    F64Sort f;
    Value nan = f.make(kNaN);
    CHECK(f.make(-kNaN) == nan);
    CHECK(f.make(std::bit_cast<double>(std::uint64_t{0x7ff0000000000001})) == nan);
    CHECK(std::isnan(F64Sort::get(nan)));
    CHECK(f.print(nan) == "NaN");
  }
  SECTION("distinct numbers stay distinct") {
    F64Sort f;
    CHECK(f.make(1.0) != f.make(2.0));
    CHECK(f.make(1.0) == f.make(1.0));
    CHECK(F64Sort::get(f.make(1.5)) == 1.5);
  }
  SECTION("through primitives") {
    Prims p;
    CHECK(p.f_print("neg", {0.0}) == "0.0");
    Prims q;
    CHECK(q.f_print("neg", {-0.0}) == "-0.0");
    Prims r;
    CHECK(r.f_print("abs", {-0.0}) == "-0.0");
  }
}

TEST_CASE("builtins: String prints with only quote and backslash escaped [engine]") {
  StringSort s;
  CHECK(s.print(s.make("")) == "\"\"");
  CHECK(s.print(s.make("abc")) == "\"abc\"");
  CHECK(s.print(s.make("x\"y")) == "\"x\\\"y\"");
  CHECK(s.print(s.make("a\\b")) == "\"a\\\\b\"");
  CHECK(s.print(s.make("l1\nl2\tt")) == "\"l1\nl2\tt\"");
  CHECK(s.print(s.make("h\xc3\xa9")) == "\"h\xc3\xa9\"");
  CHECK(s.make("abc") == s.make("abc"));
  CHECK(s.make("abc") != s.make("abd"));
}

TEST_CASE("builtins: String + is variadic from zero arguments [engine]") {
  Prims p;
  const Primitive* plus = p.resolve("+", {});
  REQUIRE(plus != nullptr);
  CHECK(plus->variadic);
  CHECK(plus->inputs == std::vector<SortId>{p.b.string});
  CHECK(p.s("+", {}) == "");
  CHECK(p.s("+", {"a"}) == "a");
  CHECK(p.s("+", {"a", "b"}) == "ab");
  CHECK(p.s("+", {"a", "b", "c", "d"}) == "abcd");
  CHECK(p.s("+", {"a\"b", "\\"}) == "a\"b\\");
}

TEST_CASE("builtins: String replace and count-matches [engine]") {
  Prims p;
  CHECK(p.s("replace", {"aXbXc", "X", "--"}) == "a--b--c");
  CHECK(p.s("replace", {"aaa", "aa", "b"}) == "ba");
  CHECK(p.s("replace", {"abc", "z", "y"}) == "abc");
  CHECK(p.s("replace", {"aaa", "", "b"}) == "bababab");
  CHECK(p.s("replace", {"", "", "x"}) == "x");
  CHECK(p.s("replace", {"h\xc3\xa9llo", "", "-"}) == "-h-\xc3\xa9-l-l-o-");

  auto count = [&](std::string text, std::string pattern) {
    auto r = p.call("count-matches", {p.b.string, p.b.string},
                    {p.b.string_sort->make(text), p.b.string_sort->make(pattern)});
    REQUIRE(r);
    return I64Sort::get(*r);
  };
  CHECK(count("aaaa", "aa") == 2);
  CHECK(count("aaa", "aa") == 1);
  CHECK(count("abc", "z") == 0);
  CHECK(count("abc", "") == 4);
  CHECK(count("", "") == 1);
  CHECK(count("h\xc3\xa9llo", "") == 6);  // chars + 1, not bytes + 1
  CHECK(p.resolve("count-matches", {p.b.string, p.b.string})->output == p.b.i64);
}

TEST_CASE("builtins: bool operations and guard [engine]") {
  Prims p;
  CHECK(p.bl("not", {true}) == false);
  CHECK(p.bl("not", {false}) == true);
  CHECK(p.bl("and", {true, true}) == true);
  CHECK(p.bl("and", {true, false}) == false);
  CHECK(p.bl("or", {false, false}) == false);
  CHECK(p.bl("or", {false, true}) == true);
  CHECK(p.bl("xor", {true, true}) == false);
  CHECK(p.bl("xor", {true, false}) == true);
  CHECK(p.bl("=>", {false, false}) == true);
  CHECK(p.bl("=>", {false, true}) == true);
  CHECK(p.bl("=>", {true, false}) == false);
  CHECK(p.bl("=>", {true, true}) == true);
  auto guard = [&](bool x) { return p.call("guard", {p.b.boolean}, {BoolSort::make(x)}); };
  CHECK(guard(true) == Value{0});
  CHECK_FALSE(guard(false));
  CHECK(p.resolve("guard", {p.b.boolean})->output == p.b.unit);
}

TEST_CASE("builtins: generic != value-eq bool-!= over any sort [engine]") {
  Prims p;
  const auto& b = p.b;
  auto call2 = [&](const char* name, SortId s, Value x, Value y) {
    return p.call(name, {s, s}, {x, y});
  };
  CHECK(call2("!=", b.i64, 1, 2) == Value{0});
  CHECK_FALSE(call2("!=", b.i64, 1, 1));
  CHECK_FALSE(call2("!=", b.unit, 0, 0));
  CHECK(call2("!=", b.boolean, 1, 0) == Value{0});
  CHECK(call2("!=", b.string, b.string_sort->make("a"), b.string_sort->make("b")) == Value{0});
  CHECK_FALSE(call2("!=", b.f64, b.f64_sort->make(0.0), b.f64_sort->make(-0.0)));
  CHECK_FALSE(call2("!=", b.f64, b.f64_sort->make(1.0), b.f64_sort->make(1.0)));
  CHECK(call2("value-eq", b.i64, 1, 1) == Value{0});
  CHECK_FALSE(call2("value-eq", b.i64, 1, 2));
  CHECK(call2("value-eq", b.f64, b.f64_sort->make(0.0), b.f64_sort->make(-0.0)) == Value{0});
  CHECK(call2("bool-!=", b.i64, 1, 2) == BoolSort::make(true));
  CHECK(call2("bool-!=", b.i64, 1, 1) == BoolSort::make(false));
  for (const char* name : {"!=", "value-eq", "bool-!="}) {
    const Primitive* prim = p.resolve(name, {b.i64, b.i64});
    REQUIRE(prim != nullptr);
    CHECK(prim->inputs == std::vector<SortId>{kAnySort, kAnySort});
  }
  CHECK(p.resolve("!=", {b.i64, b.i64})->output == b.unit);
  CHECK(p.resolve("bool-!=", {b.i64, b.i64})->output == b.boolean);
}

TEST_CASE("builtins: ordering-min and ordering-max use the raw value order [engine]") {
  Prims p;
  const auto& b = p.b;
  // Raw (unsigned) order, as in egglog: -1 is above 1.
  CHECK(p.call("ordering-min", {b.i64, b.i64}, {I64Sort::make(-1), I64Sort::make(1)}) ==
        I64Sort::make(1));
  CHECK(p.call("ordering-max", {b.i64, b.i64}, {I64Sort::make(-5), I64Sort::make(3)}) ==
        I64Sort::make(-5));
  CHECK(p.call("ordering-min", {b.boolean, b.boolean}, {1, 0}) == Value{0});
  // Strings by interning order.
  Value bstr = b.string_sort->make("b"), astr = b.string_sort->make("a");
  CHECK(p.call("ordering-min", {b.string, b.string}, {bstr, astr}) == bstr);
  CHECK(p.call("ordering-max", {b.string, b.string}, {bstr, astr}) == astr);
  const Primitive* min = p.resolve("ordering-min", {b.i64, b.i64});
  REQUIRE(min != nullptr);
  CHECK(min->output == kAnySort);
  CHECK(min->inputs == std::vector<SortId>{kAnySort, kAnySort});
}
