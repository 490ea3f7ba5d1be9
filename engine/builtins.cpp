#include "engine/builtins.hpp"

#include "engine/bignum.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>
#include <utility>

namespace kiln::engine {

namespace {

using i64 = std::int64_t;

constexpr std::uint64_t kCanonicalNanBits = 0x7ff8000000000000ull;

double to_double(Value v) {
  return std::bit_cast<double>(v);
}
Value bits_of(double x) {
  return std::bit_cast<Value>(x);
}

// ---------------------------------------------------------------------------------------------
// f64 text. Both of Rust's formats start from the shortest digit string that reads back as the
// same double, and differ only in where they put the decimal point. std::to_chars finds the same
// shortest digits as Rust except on an exact tie between two candidates (the double's exact
// decimal expansion is the shorter candidate followed by 5000...): to_chars rounds half to even,
// Rust rounds half up (1608882928643910.25 prints as ...910.3), so ties are rounded up here.

struct ShortestDigits {
  std::string digits;  // no leading zeros (except the single digit of zero)
  int exponent = 0;    // value = d.ddd × 10^exponent
};

// If `s` is the lower of two equally close shortest candidates, moves it to the upper one.
void round_tie_up(double magnitude, ShortestDigits& s) {
  if (magnitude == 0.0) return;
  // 767 significant digits after the first are enough for the exact expansion of any double.
  static constexpr int kExactDigits = 767;
  std::string exact(kExactDigits + 16, '\0');
  auto [end, ec] = std::to_chars(exact.data(), exact.data() + exact.size(), magnitude,
                                 std::chars_format::scientific, kExactDigits);
  (void)ec;
  const char* e = std::find(exact.data(), end, 'e');
  int exponent = 0;
  std::from_chars(e + 1 + (e[1] == '+'), end, exponent);
  if (exponent != s.exponent) return;
  exact.resize(static_cast<std::size_t>(e - exact.data()));
  exact.erase(1, 1);  // the decimal point
  const std::size_t n = s.digits.size();
  if (exact.compare(0, n, s.digits) != 0 || exact[n] != '5' || s.digits.back() == '9') return;
  if (exact.find_first_not_of('0', n + 1) != std::string::npos) return;
  // The tie's lower candidate ends in an even digit (round half to even), so no carry.
  ++s.digits.back();
}

ShortestDigits shortest_digits(double magnitude) {
  char buffer[64];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, magnitude, std::chars_format::scientific);
  (void)ec;  // 64 bytes always suffice for a double
  ShortestDigits out;
  const char* p = buffer;
  for (; p != end && *p != 'e'; ++p)
    if (*p != '.') out.digits.push_back(*p);
  if (p != end) {
    ++p;  // 'e'
    if (*p == '+') ++p;
    std::from_chars(p, end, out.exponent);
  }
  round_tie_up(magnitude, out);
  return out;
}

// Plain decimal notation; `min_fraction_digits` is 0 for Rust's Display and 1 for its Debug.
std::string plain_decimal(const ShortestDigits& s, bool negative, int min_fraction_digits) {
  std::string out = negative ? "-" : "";
  const int n = static_cast<int>(s.digits.size());
  const int point = s.exponent + 1;  // digits before the decimal point
  if (point <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-point), '0');
    out += s.digits;
  } else if (point >= n) {
    out += s.digits;
    out.append(static_cast<std::size_t>(point - n), '0');
    if (min_fraction_digits > 0) out += ".0";
  } else {
    out.append(s.digits, 0, static_cast<std::size_t>(point));
    out += '.';
    out.append(s.digits, static_cast<std::size_t>(point), std::string::npos);
  }
  return out;
}

std::string non_finite_text(double x) {
  if (std::isnan(x)) return "NaN";
  return x > 0 ? "inf" : "-inf";
}

// Rust `format!("{}", x)` for f64.
std::string rust_display(double x) {
  if (!std::isfinite(x)) return non_finite_text(x);
  return plain_decimal(shortest_digits(std::fabs(x)), std::signbit(x), 0);
}

// Rust `i64::from_str` on text produced by rust_display (which never has a '+').
bool parses_as_i64(const std::string& text) {
  i64 parsed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  return ec == std::errc() && end == text.data() + text.size();
}

// ---------------------------------------------------------------------------------------------
// Orders.

// OrderedFloat's total order: -0.0 == 0.0, NaN == NaN, NaN above everything else.
int compare_f64(double a, double b) {
  const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
  if (a_nan || b_nan) return a_nan == b_nan ? 0 : (a_nan ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------
// Strings. Rust treats the empty pattern as matching at every char boundary.

bool is_char_boundary(const std::string& s, std::size_t i) {
  return i == s.size() || (static_cast<unsigned char>(s[i]) & 0xc0) != 0x80;
}

std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
  std::string out;
  if (from.empty()) {
    for (std::size_t i = 0; i <= text.size(); ++i) {
      if (is_char_boundary(text, i)) out += to;
      if (i < text.size()) out += text[i];
    }
    return out;
  }
  std::size_t start = 0;
  for (std::size_t hit; (hit = text.find(from, start)) != std::string::npos;
       start = hit + from.size()) {
    out.append(text, start, hit - start);
    out += to;
  }
  out.append(text, start, std::string::npos);
  return out;
}

i64 count_matches(const std::string& text, const std::string& pattern) {
  i64 count = 0;
  if (pattern.empty()) {
    for (std::size_t i = 0; i <= text.size(); ++i) count += is_char_boundary(text, i) ? 1 : 0;
    return count;
  }
  for (std::size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + pattern.size()))
    ++count;
  return count;
}

// ---------------------------------------------------------------------------------------------
// Registration helpers.

class Registrar {
 public:
  Registrar(PrimitiveTable& table, const Builtins& b) : table_(table), b_(b) {}

  void add(std::string name, std::vector<SortId> inputs, SortId output, PrimitiveFn fn,
           bool variadic = false) {
    table_.add(Primitive{std::move(name), std::move(inputs), output, variadic, std::move(fn)});
  }

  // Unit-valued check: holds (Value 0) or fails.
  template <class Pred>
  static PrimitiveFn unit_check(Pred pred) {
    return [pred](const Value* a, std::size_t, Value& r) {
      r = 0;
      return static_cast<bool>(pred(a));
    };
  }

  // i64 × i64 -> i64; `op` returns false on failure.
  template <class Op>
  void i64_binary(const char* name, Op op) {
    add(name, {b_.i64, b_.i64}, b_.i64, [op](const Value* a, std::size_t, Value& r) {
      i64 out = 0;
      if (!op(I64Sort::get(a[0]), I64Sort::get(a[1]), out)) return false;
      r = I64Sort::make(out);
      return true;
    });
  }

  // f64 × f64 -> f64; `op` returns false on failure.
  template <class Op>
  void f64_binary(const char* name, Op op) {
    auto sort = b_.f64_sort;
    add(name, {b_.f64, b_.f64}, b_.f64, [op, sort](const Value* a, std::size_t, Value& r) {
      double out = 0;
      if (!op(F64Sort::get(a[0]), F64Sort::get(a[1]), out)) return false;
      r = sort->make(out);
      return true;
    });
  }

  // f64 -> f64; `op` returns false on failure.
  template <class Op>
  void f64_unary(const char* name, Op op) {
    auto sort = b_.f64_sort;
    add(name, {b_.f64}, b_.f64, [op, sort](const Value* a, std::size_t, Value& r) {
      double out = 0;
      if (!op(F64Sort::get(a[0]), out)) return false;
      r = sort->make(out);
      return true;
    });
  }

  template <class Pred>
  void i64_compare(const char* unit_name, const char* bool_name, Pred pred) {
    add(unit_name, {b_.i64, b_.i64}, b_.unit, unit_check([pred](const Value* a) {
          return pred(I64Sort::get(a[0]), I64Sort::get(a[1]));
        }));
    if (bool_name != nullptr)
      add(bool_name, {b_.i64, b_.i64}, b_.boolean, [pred](const Value* a, std::size_t, Value& r) {
        r = BoolSort::make(pred(I64Sort::get(a[0]), I64Sort::get(a[1])));
        return true;
      });
  }

  template <class Pred>
  void f64_compare(const char* name, Pred pred) {
    add(name, {b_.f64, b_.f64}, b_.unit, unit_check([pred](const Value* a) {
          return pred(compare_f64(F64Sort::get(a[0]), F64Sort::get(a[1])));
        }));
  }

  template <class Op>
  void bool_binary(const char* name, Op op) {
    add(name, {b_.boolean, b_.boolean}, b_.boolean, [op](const Value* a, std::size_t, Value& r) {
      r = BoolSort::make(op(BoolSort::get(a[0]), BoolSort::get(a[1])));
      return true;
    });
  }

 private:
  PrimitiveTable& table_;
  const Builtins& b_;
};

void add_i64_primitives(Registrar& reg, const Builtins& b) {
  constexpr i64 kMin = std::numeric_limits<i64>::min();
  reg.i64_binary("+", [](i64 x, i64 y, i64& r) { return !__builtin_add_overflow(x, y, &r); });
  reg.i64_binary("-", [](i64 x, i64 y, i64& r) { return !__builtin_sub_overflow(x, y, &r); });
  reg.i64_binary("*", [](i64 x, i64 y, i64& r) { return !__builtin_mul_overflow(x, y, &r); });
  reg.i64_binary("/", [](i64 x, i64 y, i64& r) {
    if (y == 0 || (x == kMin && y == -1)) return false;
    r = x / y;
    return true;
  });
  reg.i64_binary("%", [](i64 x, i64 y, i64& r) {
    if (y == 0 || (x == kMin && y == -1)) return false;
    r = x % y;
    return true;
  });
  reg.i64_binary("&", [](i64 x, i64 y, i64& r) { return r = x & y, true; });
  reg.i64_binary("|", [](i64 x, i64 y, i64& r) { return r = x | y, true; });
  reg.i64_binary("^", [](i64 x, i64 y, i64& r) { return r = x ^ y, true; });
  // Shifts: the amount must be 0..63; bits shifted out of `<<` are simply lost.
  reg.i64_binary("<<", [](i64 x, i64 y, i64& r) {
    if (y < 0 || y > 63) return false;
    r = static_cast<i64>(static_cast<std::uint64_t>(x) << y);
    return true;
  });
  reg.i64_binary(">>", [](i64 x, i64 y, i64& r) {
    if (y < 0 || y > 63) return false;
    r = x >> y;  // arithmetic
    return true;
  });
  reg.i64_binary("min", [](i64 x, i64 y, i64& r) { return r = std::min(x, y), true; });
  reg.i64_binary("max", [](i64 x, i64 y, i64& r) { return r = std::max(x, y), true; });

  reg.add("not-i64", {b.i64}, b.i64, [](const Value* a, std::size_t, Value& r) {
    r = I64Sort::make(~I64Sort::get(a[0]));
    return true;
  });
  reg.add("log2", {b.i64}, b.i64, [](const Value* a, std::size_t, Value& r) {
    const i64 x = I64Sort::get(a[0]);
    if (x <= 0) return false;
    r = I64Sort::make(63 - std::countl_zero(static_cast<std::uint64_t>(x)));
    return true;
  });
  reg.add("abs", {b.i64}, b.i64, [](const Value* a, std::size_t, Value& r) {
    const i64 x = I64Sort::get(a[0]);
    if (x == kMin) return false;
    r = I64Sort::make(x < 0 ? -x : x);
    return true;
  });

  reg.i64_compare("<", "bool-<", [](i64 x, i64 y) { return x < y; });
  reg.i64_compare(">", "bool->", [](i64 x, i64 y) { return x > y; });
  reg.i64_compare("<=", "bool-<=", [](i64 x, i64 y) { return x <= y; });
  reg.i64_compare(">=", "bool->=", [](i64 x, i64 y) { return x >= y; });
  reg.add("bool-=", {b.i64, b.i64}, b.boolean, [](const Value* a, std::size_t, Value& r) {
    r = BoolSort::make(a[0] == a[1]);
    return true;
  });

  auto f64_sort = b.f64_sort;
  reg.add("to-f64", {b.i64}, b.f64, [f64_sort](const Value* a, std::size_t, Value& r) {
    r = f64_sort->make(static_cast<double>(I64Sort::get(a[0])));
    return true;
  });
  auto string_sort = b.string_sort;
  reg.add("to-string", {b.i64}, b.string, [string_sort](const Value* a, std::size_t, Value& r) {
    r = string_sort->make(std::to_string(I64Sort::get(a[0])));
    return true;
  });
}

void add_f64_primitives(Registrar& reg, const Builtins& b) {
  reg.f64_binary("+", [](double x, double y, double& r) { return r = x + y, true; });
  reg.f64_binary("-", [](double x, double y, double& r) { return r = x - y, true; });
  reg.f64_binary("*", [](double x, double y, double& r) { return r = x * y, true; });
  // Division and remainder fail on a zero divisor (either sign), even for 0/0.
  reg.f64_binary("/", [](double x, double y, double& r) {
    if (y == 0.0) return false;
    r = x / y;
    return true;
  });
  reg.f64_binary("%", [](double x, double y, double& r) {
    if (y == 0.0) return false;
    r = std::fmod(x, y);
    return true;
  });
  reg.f64_binary("^", [](double x, double y, double& r) { return r = std::pow(x, y), true; });
  // Rust's Ord::min/max: on a tie min keeps the first argument and max the second.
  reg.f64_binary("min", [](double x, double y, double& r) {
    r = compare_f64(x, y) <= 0 ? x : y;
    return true;
  });
  reg.f64_binary("max", [](double x, double y, double& r) {
    r = compare_f64(x, y) <= 0 ? y : x;
    return true;
  });

  reg.f64_unary("neg", [](double x, double& r) { return r = -x, true; });
  reg.f64_unary("abs", [](double x, double& r) { return r = std::fabs(x), true; });
  reg.f64_unary("exp", [](double x, double& r) { return r = std::exp(x), true; });
  // log fails for x <= 0 (including -0.0); NaN passes through.
  reg.f64_unary("log", [](double x, double& r) {
    if (x <= 0.0) return false;
    r = std::log(x);
    return true;
  });
  // sqrt fails for x < 0 (so -0.0 is accepted); NaN passes through.
  reg.f64_unary("sqrt", [](double x, double& r) {
    if (x < 0.0) return false;
    r = std::sqrt(x);
    return true;
  });

  reg.f64_compare("<", [](int c) { return c < 0; });
  reg.f64_compare(">", [](int c) { return c > 0; });
  reg.f64_compare("<=", [](int c) { return c <= 0; });
  reg.f64_compare(">=", [](int c) { return c >= 0; });
  reg.add("f64-is-finite", {b.f64}, b.unit,
          Registrar::unit_check([](const Value* a) { return std::isfinite(F64Sort::get(a[0])); }));

  // Rust `as i64`: truncation toward zero, saturating at the ends, NaN -> 0.
  reg.add("to-i64", {b.f64}, b.i64, [](const Value* a, std::size_t, Value& r) {
    const double x = F64Sort::get(a[0]);
    i64 out = 0;
    if (std::isnan(x))
      out = 0;
    else if (x >= 9223372036854775808.0)
      out = std::numeric_limits<i64>::max();
    else if (x <= -9223372036854775808.0)
      out = std::numeric_limits<i64>::min();
    else
      out = static_cast<i64>(x);
    r = I64Sort::make(out);
    return true;
  });
  auto string_sort = b.string_sort;
  reg.add("to-string", {b.f64}, b.string, [string_sort](const Value* a, std::size_t, Value& r) {
    r = string_sort->make(F64Sort::debug_string(F64Sort::get(a[0])));
    return true;
  });
}

void add_string_primitives(Registrar& reg, const Builtins& b) {
  auto strings = b.string_sort;
  // Variadic with zero or more arguments: `(+)` is "".
  reg.add(
      "+", {b.string}, b.string,
      [strings](const Value* a, std::size_t count, Value& r) {
        std::string out;
        for (std::size_t i = 0; i < count; ++i) out += strings->get(a[i]);
        r = strings->make(out);
        return true;
      },
      /*variadic=*/true);
  reg.add(
      "replace", {b.string, b.string, b.string}, b.string,
      [strings](const Value* a, std::size_t, Value& r) {
        r = strings->make(replace_all(strings->get(a[0]), strings->get(a[1]), strings->get(a[2])));
        return true;
      });
  reg.add("count-matches", {b.string, b.string}, b.i64,
          [strings](const Value* a, std::size_t, Value& r) {
            r = I64Sort::make(count_matches(strings->get(a[0]), strings->get(a[1])));
            return true;
          });
}

void add_bool_primitives(Registrar& reg, const Builtins& b) {
  reg.add("not", {b.boolean}, b.boolean, [](const Value* a, std::size_t, Value& r) {
    r = BoolSort::make(!BoolSort::get(a[0]));
    return true;
  });
  reg.bool_binary("and", [](bool x, bool y) { return x && y; });
  // `or` takes any number of arguments (`(or)` is false); `and` and `xor` exactly two.
  reg.add(
      "or", {b.boolean}, b.boolean,
      [](const Value* a, std::size_t count, Value& r) {
        r = BoolSort::make(std::any_of(a, a + count, [](Value v) { return BoolSort::get(v); }));
        return true;
      },
      /*variadic=*/true);
  reg.bool_binary("xor", [](bool x, bool y) { return x != y; });
  reg.bool_binary("=>", [](bool x, bool y) { return !x || y; });
  reg.add("guard", {b.boolean}, b.unit,
          Registrar::unit_check([](const Value* a) { return BoolSort::get(a[0]); }));
}

// Sort-generic primitives. Callers pass canonical values (e-class roots for eq-sorts); f64 and
// String values are interned, so Value equality is the sort's equality. ordering-min/max use
// the raw Value order (unsigned), which egglog documents as unspecified.
void add_generic_primitives(Registrar& reg, const Builtins& b) {
  reg.add("!=", {kAnySort, kAnySort}, b.unit,
          Registrar::unit_check([](const Value* a) { return a[0] != a[1]; }));
  reg.add("value-eq", {kAnySort, kAnySort}, b.unit,
          Registrar::unit_check([](const Value* a) { return a[0] == a[1]; }));
  reg.add("bool-!=", {kAnySort, kAnySort}, b.boolean, [](const Value* a, std::size_t, Value& r) {
    r = BoolSort::make(a[0] != a[1]);
    return true;
  });
  reg.add("ordering-min", {kAnySort, kAnySort}, kAnySort,
          [](const Value* a, std::size_t, Value& r) {
            r = a[0] <= a[1] ? a[0] : a[1];
            return true;
          });
  reg.add("ordering-max", {kAnySort, kAnySort}, kAnySort,
          [](const Value* a, std::size_t, Value& r) {
            r = a[0] <= a[1] ? a[1] : a[0];
            return true;
          });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// F64Sort

std::string F64Sort::print(Value v) const {
  std::string text = rust_display(get(v));
  if (parses_as_i64(text)) text += ".0";
  return text;
}

Value F64Sort::make(double x) const {
  std::uint64_t key = std::isnan(x) ? kCanonicalNanBits : (x == 0.0 ? 0 : bits_of(x));
  return first_spelling_.emplace(key, bits_of(x)).first->second;
}

int F64Sort::compare(Value a, Value b) const {
  return compare_f64(get(a), get(b));
}

double F64Sort::get(Value v) {
  return to_double(v);
}

std::string F64Sort::debug_string(double x) {
  if (!std::isfinite(x)) return non_finite_text(x);
  const double magnitude = std::fabs(x);
  const ShortestDigits s = shortest_digits(magnitude);
  if (magnitude == 0.0 || (magnitude >= 1e-4 && magnitude < 1e16))
    return plain_decimal(s, std::signbit(x), 1);
  std::string out = std::signbit(x) ? "-" : "";
  out += s.digits[0];
  if (s.digits.size() > 1) {
    out += '.';
    out.append(s.digits, 1, std::string::npos);
  }
  out += 'e';
  out += std::to_string(s.exponent);
  return out;
}

// ---------------------------------------------------------------------------------------------
// StringSort

std::string StringSort::print(Value v) const {
  const std::string& text = get(v);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

// ---------------------------------------------------------------------------------------------

Builtins add_builtins(EGraph& egraph) {
  Builtins b;
  b.f64_sort = std::make_shared<F64Sort>();
  b.string_sort = std::make_shared<StringSort>();
  b.unit = egraph.add_sort(Sort{"Unit", false, std::make_shared<UnitSort>()});
  b.boolean = egraph.add_sort(Sort{"bool", false, std::make_shared<BoolSort>()});
  b.i64 = egraph.add_sort(Sort{"i64", false, std::make_shared<I64Sort>()});
  b.f64 = egraph.add_sort(Sort{"f64", false, b.f64_sort});
  b.string = egraph.add_sort(Sort{"String", false, b.string_sort});

  Registrar reg(egraph.primitives(), b);
  add_i64_primitives(reg, b);
  add_f64_primitives(reg, b);
  add_string_primitives(reg, b);
  add_bool_primitives(reg, b);
  add_generic_primitives(reg, b);
  add_bignum_sorts(egraph, b);
  return b;
}

}  // namespace kiln::engine
