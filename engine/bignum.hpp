// egglog's arbitrary-precision sorts: BigInt (integers) and BigRat (normalized fractions), on
// Boost.Multiprecision's cpp_int and cpp_rational: header-only and already installed with the
// Boost that kiln uses for graphs, so no new library to link or ship (GMP would be faster on
// huge numbers, which rule programs do not reach).
#pragma once

#include <boost/multiprecision/cpp_int.hpp>
#include <string>

#include "engine/builtins.hpp"
#include "engine/intern.hpp"

namespace kiln::engine {

using BigInt = boost::multiprecision::cpp_int;
using BigRat = boost::multiprecision::cpp_rational;

// Hashes through the decimal text: equal numbers, equal hashes.
template <class T>
struct DecimalHash {
  std::size_t operator()(const T& x) const { return std::hash<std::string>()(x.str()); }
};

// Prints as egglog does: (from-string "123").
class BigIntSort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override;
  // egglog orders the printed terms: by decimal text, so "10" before "3".
  int compare(Value a, Value b) const override { return get(a).str().compare(get(b).str()); }
  Value make(const BigInt& x) const { return values_.intern(x); }
  const BigInt& get(Value v) const { return values_.get(v); }

 private:
  mutable Interner<BigInt, DecimalHash<BigInt>> values_;
};

// Prints as egglog does: (bigrat (from-string "1") (from-string "3")).
class BigRatSort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override;
  // By the printed terms: numerator text, then denominator text.
  int compare(Value a, Value b) const override;
  Value make(const BigRat& x) const { return values_.intern(x); }
  const BigRat& get(Value v) const { return values_.get(v); }

 private:
  mutable Interner<BigRat, DecimalHash<BigRat>> values_;
};

// Adds the sorts BigInt and BigRat with egglog's primitives on them.
void add_bignum_sorts(EGraph& egraph, const Builtins& builtins);

}  // namespace kiln::engine
