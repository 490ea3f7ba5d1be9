// The primitive sorts every program has — Unit, bool, i64, f64, String — and egglog's primitive
// operations on them (docs/egglog-semantics.md §3 lists them with their failure cases).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "engine/egraph.hpp"
#include "engine/intern.hpp"

namespace kiln::engine {

class UnitSort final : public PrimitiveSort {
 public:
  std::string print(Value) const override { return "()"; }
};

class BoolSort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override { return v ? "true" : "false"; }
  static Value make(bool b) { return b ? 1 : 0; }
  static bool get(Value v) { return v != 0; }
};

class I64Sort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override { return std::to_string(get(v)); }
  int compare(Value a, Value b) const override { return get(a) < get(b) ? -1 : (get(a) > get(b) ? 1 : 0); }
  static Value make(std::int64_t x) { return static_cast<Value>(x); }
  static std::int64_t get(Value v) { return static_cast<std::int64_t>(v); }
};

// f64 values compare like egglog's ordered floats: 0.0 equals -0.0 and NaN equals NaN. A value
// is the bit pattern of the first spelling seen of its equivalence class.
class F64Sort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override;
  int compare(Value a, Value b) const override;
  Value make(double x) const;
  static double get(Value v);
  // Rust's Debug formatting (used by to-string): exponent form for very large or small values.
  static std::string debug_string(double x);

 private:
  mutable std::map<std::uint64_t, Value> first_spelling_;
};

class StringSort final : public PrimitiveSort {
 public:
  std::string print(Value v) const override;
  int compare(Value a, Value b) const override { return get(a).compare(get(b)); }
  Value make(const std::string& s) const { return strings_.intern(s); }
  const std::string& get(Value v) const { return strings_.get(v); }

 private:
  mutable Interner<std::string> strings_;
};

struct Builtins {
  SortId unit = 0, boolean = 0, i64 = 0, f64 = 0, string = 0;
  std::shared_ptr<const F64Sort> f64_sort;
  std::shared_ptr<const StringSort> string_sort;
};

// Adds the five sorts (named Unit, bool, i64, f64, String) and all their primitives.
Builtins add_builtins(EGraph& egraph);

}  // namespace kiln::engine
