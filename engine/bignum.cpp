#include "engine/bignum.hpp"

#include <limits>
#include <memory>

namespace kiln::engine {

namespace {

using i64 = std::int64_t;

// Fails a primitive with a reason the rule author sees.
bool fail(const std::string& why) {
  primitive_failure_reason() = why;
  return false;
}

// An optional sign, then decimal digits only (Rust's BigInt::from_str).
bool parse_bigint(const std::string& text, BigInt& out) {
  std::size_t start = !text.empty() && (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (start == text.size()) return false;
  for (std::size_t i = start; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  // Leading zeros dropped: Boost reads a leading 0 as an octal prefix ("010" would be 8).
  std::size_t digits = text.find_first_not_of('0', start);
  out = digits == std::string::npos ? BigInt(0) : BigInt(text.substr(digits));
  if (text[0] == '-') out = -out;
  return true;
}

// Floor division by 2^n (an arithmetic right shift, also for negative numbers).
BigInt shift_right(const BigInt& x, unsigned n) {
  if (x >= 0) return x >> n;
  return -((-x - 1) >> n) - 1;
}

// Two's complement bitwise operations on negative numbers, as Rust's num-bigint does them.
template <class Op>
BigInt bitwise(const BigInt& a, const BigInt& b, Op op) {
  if (a >= 0 && b >= 0) return op(a, b);
  unsigned bits = static_cast<unsigned>(std::max(a == 0 ? 0 : msb(abs(a)), b == 0 ? 0 : msb(abs(b)))) + 2;
  BigInt modulus = BigInt(1) << bits;
  auto wrap = [&](const BigInt& x) { return x < 0 ? x + modulus : x; };
  BigInt r = op(wrap(a), wrap(b)) & (modulus - 1);
  return bit_test(r, bits - 1) ? r - modulus : r;
}

BigRat floor_of(const BigRat& r) {
  BigInt n = numerator(r), d = denominator(r);
  BigInt q = n / d;
  if (n % d != 0 && n < 0) q -= 1;
  return BigRat(q);
}

// The exact square root of a non-negative integer, if it has one.
bool exact_sqrt(const BigInt& x, BigInt& out) {
  if (x < 0) return false;
  out = sqrt(x);
  return out * out == x;
}

}  // namespace

std::string BigIntSort::print(Value v) const { return "(from-string \"" + get(v).str() + "\")"; }

std::string BigRatSort::print(Value v) const {
  const BigRat& r = get(v);
  return "(bigrat (from-string \"" + numerator(r).str() + "\") (from-string \"" +
         denominator(r).str() + "\"))";
}

int BigRatSort::compare(Value a, Value b) const {
  const BigRat& x = get(a);
  const BigRat& y = get(b);
  if (int c = numerator(x).str().compare(numerator(y).str()); c != 0) return c;
  return denominator(x).str().compare(denominator(y).str());
}

void add_bignum_sorts(EGraph& egraph, const Builtins& b) {
  auto ints = std::make_shared<BigIntSort>();
  auto rats = std::make_shared<BigRatSort>();
  SortId zi = egraph.add_sort(Sort{"BigInt", false, ints});
  SortId qi = egraph.add_sort(Sort{"BigRat", false, rats});
  PrimitiveTable& table = egraph.primitives();
  auto add = [&](const char* name, std::vector<SortId> inputs, SortId output, PrimitiveFn fn) {
    table.add(Primitive{name, std::move(inputs), output, false, std::move(fn)});
  };

  // ----- BigInt
  add("bigint", {b.i64}, zi, [ints](const Value* a, std::size_t, Value& r) {
    r = ints->make(BigInt(I64Sort::get(a[0])));
    return true;
  });
  auto strings = b.string_sort;
  add("from-string", {b.string}, zi, [ints, strings](const Value* a, std::size_t, Value& r) {
    BigInt x;
    if (!parse_bigint(strings->get(a[0]), x)) return fail("not a decimal integer");
    r = ints->make(x);
    return true;
  });
  add("to-string", {zi}, b.string, [ints, strings](const Value* a, std::size_t, Value& r) {
    r = strings->make(ints->get(a[0]).str());
    return true;
  });
  auto int_binary = [&](const char* name, auto op) {
    add(name, {zi, zi}, zi, [ints, op](const Value* a, std::size_t, Value& r) {
      BigInt out;
      if (!op(ints->get(a[0]), ints->get(a[1]), out)) return false;
      r = ints->make(out);
      return true;
    });
  };
  int_binary("+", [](const BigInt& x, const BigInt& y, BigInt& r) { return r = x + y, true; });
  int_binary("-", [](const BigInt& x, const BigInt& y, BigInt& r) { return r = x - y, true; });
  int_binary("*", [](const BigInt& x, const BigInt& y, BigInt& r) { return r = x * y, true; });
  // Truncating division and remainder (the remainder has the dividend's sign).
  int_binary("/", [](const BigInt& x, const BigInt& y, BigInt& r) {
    if (y == 0) return fail("division by zero");
    return r = x / y, true;
  });
  int_binary("%", [](const BigInt& x, const BigInt& y, BigInt& r) {
    if (y == 0) return fail("division by zero");
    return r = x % y, true;
  });
  int_binary("&", [](const BigInt& x, const BigInt& y, BigInt& r) {
    return r = bitwise(x, y, [](const BigInt& p, const BigInt& q) -> BigInt { return p & q; }), true;
  });
  int_binary("|", [](const BigInt& x, const BigInt& y, BigInt& r) {
    return r = bitwise(x, y, [](const BigInt& p, const BigInt& q) -> BigInt { return p | q; }), true;
  });
  int_binary("^", [](const BigInt& x, const BigInt& y, BigInt& r) {
    return r = bitwise(x, y, [](const BigInt& p, const BigInt& q) -> BigInt { return p ^ q; }), true;
  });
  int_binary("min", [](const BigInt& x, const BigInt& y, BigInt& r) { return r = x < y ? x : y, true; });
  int_binary("max", [](const BigInt& x, const BigInt& y, BigInt& r) { return r = x < y ? y : x, true; });
  // Shifts by 0 .. 2^20 bits (a larger shift is almost surely a mistake, and costly).
  auto shift = [&](const char* name, bool left) {
    add(name, {zi, b.i64}, zi, [ints, left](const Value* a, std::size_t, Value& r) {
      i64 n = I64Sort::get(a[1]);
      if (n < 0 || n > (1 << 20)) return fail("shift amount out of range");
      const BigInt& x = ints->get(a[0]);
      r = ints->make(left ? BigInt(x << static_cast<unsigned>(n)) : shift_right(x, static_cast<unsigned>(n)));
      return true;
    });
  };
  shift("<<", true);
  shift(">>", false);
  add("not-Z", {zi}, zi, [ints](const Value* a, std::size_t, Value& r) {
    r = ints->make(-ints->get(a[0]) - 1);
    return true;
  });
  // The number of bits of the magnitude (0 for 0).
  add("bits", {zi}, zi, [ints](const Value* a, std::size_t, Value& r) {
    const BigInt& x = ints->get(a[0]);
    r = ints->make(x == 0 ? BigInt(0) : BigInt(msb(abs(x)) + 1));
    return true;
  });
  auto int_compare = [&](const char* unit_name, const char* bool_name, auto pred) {
    add(unit_name, {zi, zi}, b.unit, [ints, pred](const Value* a, std::size_t, Value& r) {
      r = 0;
      return pred(ints->get(a[0]).compare(ints->get(a[1])));
    });
    add(bool_name, {zi, zi}, b.boolean, [ints, pred](const Value* a, std::size_t, Value& r) {
      r = BoolSort::make(pred(ints->get(a[0]).compare(ints->get(a[1]))));
      return true;
    });
  };
  int_compare("<", "bool-<", [](int c) { return c < 0; });
  int_compare(">", "bool->", [](int c) { return c > 0; });
  int_compare("<=", "bool-<=", [](int c) { return c <= 0; });
  int_compare(">=", "bool->=", [](int c) { return c >= 0; });
  add("bool-=", {zi, zi}, b.boolean, [](const Value* a, std::size_t, Value& r) {
    r = BoolSort::make(a[0] == a[1]);
    return true;
  });

  // ----- BigRat
  add("bigrat", {zi, zi}, qi, [ints, rats](const Value* a, std::size_t, Value& r) {
    const BigInt& d = ints->get(a[1]);
    if (d == 0) return fail("zero denominator");
    // cpp_rational wants a positive denominator.
    r = rats->make(d < 0 ? BigRat(-ints->get(a[0]), -d) : BigRat(ints->get(a[0]), d));
    return true;
  });
  add("numer", {qi}, zi, [ints, rats](const Value* a, std::size_t, Value& r) {
    r = ints->make(numerator(rats->get(a[0])));
    return true;
  });
  add("denom", {qi}, zi, [ints, rats](const Value* a, std::size_t, Value& r) {
    r = ints->make(denominator(rats->get(a[0])));
    return true;
  });
  auto f64s = b.f64_sort;
  add("to-f64", {qi}, b.f64, [rats, f64s](const Value* a, std::size_t, Value& r) {
    r = f64s->make(rats->get(a[0]).convert_to<double>());
    return true;
  });
  // Only an integer that fits an i64 converts.
  add("to-i64", {qi}, b.i64, [rats](const Value* a, std::size_t, Value& r) {
    const BigRat& q = rats->get(a[0]);
    if (denominator(q) != 1) return fail("not an integer");
    const BigInt& n = numerator(q);
    if (n > std::numeric_limits<i64>::max() || n < std::numeric_limits<i64>::min()) {
      return fail("out of the range of i64");
    }
    r = I64Sort::make(n.convert_to<i64>());
    return true;
  });
  auto rat_binary = [&](const char* name, auto op) {
    add(name, {qi, qi}, qi, [rats, op](const Value* a, std::size_t, Value& r) {
      BigRat out;
      if (!op(rats->get(a[0]), rats->get(a[1]), out)) return false;
      r = rats->make(out);
      return true;
    });
  };
  rat_binary("+", [](const BigRat& x, const BigRat& y, BigRat& r) { return r = x + y, true; });
  rat_binary("-", [](const BigRat& x, const BigRat& y, BigRat& r) { return r = x - y, true; });
  rat_binary("*", [](const BigRat& x, const BigRat& y, BigRat& r) { return r = x * y, true; });
  rat_binary("/", [](const BigRat& x, const BigRat& y, BigRat& r) {
    if (y == 0) return fail("division by zero");
    return r = x / y, true;
  });
  rat_binary("min", [](const BigRat& x, const BigRat& y, BigRat& r) { return r = x < y ? x : y, true; });
  rat_binary("max", [](const BigRat& x, const BigRat& y, BigRat& r) { return r = x < y ? y : x, true; });
  // An integer exponent only (|e| <= 2^16); a negative one inverts, so a zero base fails.
  rat_binary("pow", [](const BigRat& x, const BigRat& e, BigRat& r) {
    if (denominator(e) != 1) return fail("the exponent must be an integer");
    BigInt n = numerator(e);
    if (abs(n) > (1 << 16)) return fail("exponent out of range");
    if (n < 0 && x == 0) return fail("zero to a negative power");
    unsigned k = abs(n).convert_to<unsigned>();
    BigRat base = n < 0 ? BigRat(1) / x : x;
    r = BigRat(pow(numerator(base), k), pow(denominator(base), k));
    return true;
  });
  auto rat_unary = [&](const char* name, auto op) {
    add(name, {qi}, qi, [rats, op](const Value* a, std::size_t, Value& r) {
      BigRat out;
      if (!op(rats->get(a[0]), out)) return false;
      r = rats->make(out);
      return true;
    });
  };
  rat_unary("neg", [](const BigRat& x, BigRat& r) { return r = -x, true; });
  rat_unary("abs", [](const BigRat& x, BigRat& r) { return r = abs(x), true; });
  rat_unary("floor", [](const BigRat& x, BigRat& r) { return r = floor_of(x), true; });
  rat_unary("ceil", [](const BigRat& x, BigRat& r) { return r = -floor_of(-x), true; });
  // Halves round away from zero.
  rat_unary("round", [](const BigRat& x, BigRat& r) {
    BigRat half(1, 2);
    return r = x < 0 ? -floor_of(-x + half) : floor_of(x + half), true;
  });
  // Exact roots only: fails unless numerator and denominator are perfect squares.
  rat_unary("sqrt", [](const BigRat& x, BigRat& r) {
    BigInt n, d;
    if (!exact_sqrt(numerator(x), n) || !exact_sqrt(denominator(x), d)) return fail("no exact square root");
    return r = BigRat(n, d), true;
  });
  // egglog defines log only where the result is rational: log 1 = 0.
  rat_unary("log", [](const BigRat& x, BigRat& r) {
    if (x != 1) return fail("log of a BigRat is defined only at 1");
    return r = BigRat(0), true;
  });
  // Likewise cbrt: egglog computes it only at 1 (and panics elsewhere, also at 0).
  rat_unary("cbrt", [](const BigRat& x, BigRat& r) {
    if (x != 1) return fail("cbrt of a BigRat is defined only at 1");
    return r = BigRat(1), true;
  });
  auto rat_compare = [&](const char* name, auto pred) {
    add(name, {qi, qi}, b.unit, [rats, pred](const Value* a, std::size_t, Value& r) {
      r = 0;
      return pred(rats->get(a[0]).compare(rats->get(a[1])));
    });
  };
  rat_compare("<", [](int c) { return c < 0; });
  rat_compare(">", [](int c) { return c > 0; });
  rat_compare("<=", [](int c) { return c <= 0; });
  rat_compare(">=", [](int c) { return c >= 0; });
}

}  // namespace kiln::engine
