// A user-registered primitive sort: `Frac`, exact fractions interned in the sort, with
// primitives added through EGraph::add_sort and primitives().add, then used from programs.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "engine/intern.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_program.hpp"

using namespace kiln;
using engine::Value;
using support::UserError;

namespace {

struct Frac {
  std::int64_t num = 0;
  std::int64_t den = 1;  // > 0, and gcd(num, den) == 1
  bool operator==(const Frac&) const = default;
};

struct FracHash {
  std::size_t operator()(const Frac& f) const {
    return std::hash<std::int64_t>()(f.num) * 31 + std::hash<std::int64_t>()(f.den);
  }
};

// Values are indices into the sort's intern table, so equal fractions are equal Values.
class FracSort final : public engine::PrimitiveSort {
 public:
  std::string print(Value v) const override {
    const Frac& f = fracs_.get(v);
    return "(frac " + std::to_string(f.num) + " " + std::to_string(f.den) + ")";
  }
  std::uint64_t literal_cost() const override { return 3; }

  // Normalizes; fails (nullopt) on a zero denominator.
  std::optional<Value> make(std::int64_t num, std::int64_t den) const {
    if (den == 0) return std::nullopt;
    if (den < 0) {
      num = -num;
      den = -den;
    }
    std::int64_t g = std::gcd(num, den);
    if (g == 0) g = 1;
    return fracs_.intern(Frac{num / g, den / g});
  }
  const Frac& get(Value v) const { return fracs_.get(v); }
  std::size_t interned() const { return fracs_.size(); }

 private:
  mutable engine::Interner<Frac, FracHash> fracs_;
};

// Adds the sort and its primitives: (frac n d), (frac-add a b), (frac-num a), (frac-< a b).
std::shared_ptr<FracSort> register_frac(engine::EGraph& g, engine::SortId i64, engine::SortId unit) {
  auto sort = std::make_shared<FracSort>();
  engine::SortId frac = g.add_sort(engine::Sort{"Frac", false, sort});
  const FracSort* s = sort.get();
  g.primitives().add(engine::Primitive{
      "frac", {i64, i64}, frac, false, [s](const Value* a, std::size_t, Value& r) {
        auto v = s->make(engine::I64Sort::get(a[0]), engine::I64Sort::get(a[1]));
        if (!v) return false;
        r = *v;
        return true;
      }});
  g.primitives().add(engine::Primitive{
      "frac-add", {frac, frac}, frac, false, [s](const Value* a, std::size_t, Value& r) {
        Frac x = s->get(a[0]), y = s->get(a[1]);
        r = *s->make(x.num * y.den + y.num * x.den, x.den * y.den);
        return true;
      }});
  g.primitives().add(engine::Primitive{
      "frac-num", {frac}, i64, false, [s](const Value* a, std::size_t, Value& r) {
        r = engine::I64Sort::make(s->get(a[0]).num);
        return true;
      }});
  g.primitives().add(engine::Primitive{
      "frac-<", {frac, frac}, unit, false, [s](const Value* a, std::size_t, Value& r) {
        Frac x = s->get(a[0]), y = s->get(a[1]);
        r = 0;
        return x.num * y.den < y.num * x.den;
      }});
  return sort;
}

// A program whose e-graph has the Frac sort.
class FracProgram : public kiln::testing::TestProgram {
 public:
  const FracSort& frac() const { return *frac_; }

 private:
  std::shared_ptr<FracSort> frac_ =
      register_frac(egraph(), session().builtins().i64, session().builtins().unit);
};

}  // namespace

TEST_CASE("primitive sort: a registered sort is found by name and its values are interned", "[engine]") {
  FracProgram p;
  auto id = p.egraph().find_sort("Frac");
  REQUIRE(id.has_value());
  CHECK_FALSE(p.egraph().is_eq(*id));
  CHECK(p.egraph().primitives().contains("frac-add"));
  Value half = *p.frac().make(1, 2);
  CHECK(*p.frac().make(2, 4) == half);
  CHECK(*p.frac().make(-3, -6) == half);
  CHECK(*p.frac().make(1, 3) != half);
  CHECK(p.frac().print(*p.frac().make(6, -4)) == "(frac -3 2)");
  CHECK_FALSE(p.frac().make(1, 0).has_value());
}

TEST_CASE("primitive sort: programs declare functions over it, compute with it in rules and print it", "[dsl]") {
  FracProgram p;
  p.run(
      "(function w (String) Frac :no-merge)\n"
      "(set (w \"a\") (frac 1 2))\n"
      "(set (w \"b\") (frac 1 3))\n"
      "(rule ((= x (w \"a\")) (= y (w \"b\"))) ((set (w \"c\") (frac-add x y))))\n"
      "(run 1)\n");
  CHECK(p.holds("(= (w \"c\") (frac 5 6))"));
  CHECK(p.holds("(= (w \"c\") (frac 10 12))"));  // the same interned value
  CHECK(p.holds("(= (frac-num (w \"c\")) 5)"));
  CHECK_FALSE(p.holds("(= (w \"c\") (frac 1 2))"));
  CHECK(p.print("(print-function w)") ==
        "(\n   (w \"a\") -> (frac 1 2)\n   (w \"b\") -> (frac 1 3)\n   (w \"c\") -> (frac 5 6)\n)\n");
}

TEST_CASE("primitive sort: its primitives filter matches and merge rows", "[dsl]") {
  FracProgram p;
  p.run(
      "(function best (String) Frac :merge (frac-add old new))\n"
      "(relation small (String))\n"
      "(set (best \"x\") (frac 1 4))\n"
      "(set (best \"x\") (frac 1 4))\n"
      "(set (best \"y\") (frac 3 2))\n"
      "(rule ((= f (best k)) (frac-< f (frac 1 1))) ((small k)))\n"
      "(run 2)\n");
  CHECK(p.holds("(= (best \"x\") (frac 1 2))"));
  CHECK(p.holds("(small \"x\")"));
  CHECK_FALSE(p.holds("(small \"y\")"));
}

TEST_CASE("primitive sort: a failing primitive in an action is a user error, in a query it filters", "[dsl]") {
  FracProgram p;
  p.run("(function w (i64) Frac :no-merge)\n(relation ok (i64))\n(relation den (i64))\n"
        "(den 0) (den 2)\n"
        "(rule ((den d) (= f (frac 1 d))) ((ok d)))\n"
        "(run 1)\n");
  CHECK(p.holds("(ok 2)"));
  CHECK_FALSE(p.holds("(ok 0)"));
  CHECK_THROWS_AS(p.run("(set (w 1) (frac 1 0))"), UserError);
  CHECK_THROWS_AS(p.run("(set (w 1) (frac-add 1 2))"), UserError);  // no such overload
}

TEST_CASE("primitive sort: extraction prints its literals and uses their literal cost", "[dsl]") {
  FracProgram p;
  p.run("(datatype Q (Lit Frac) (Neg Q))\n(let e (Neg (Lit (frac 2 4))))\n");
  CHECK(p.print("(extract e)") == "(Neg (Lit (frac 1 2)))\n");
  CHECK(p.tree_cost("e") == 1u + 1u + 3u);
}

TEST_CASE("primitive sort: survives push and pop", "[dsl]") {
  FracProgram p;
  p.run("(function w (i64) Frac :no-merge)\n(set (w 1) (frac 1 2))\n(push)\n(set (w 2) (frac 1 3))\n");
  CHECK(p.holds("(= (w 2) (frac 1 3))"));
  p.run("(pop)");
  CHECK_FALSE(p.holds("(= (w 2) (frac 1 3))"));
  CHECK(p.holds("(= (w 1) (frac 1 2))"));
  CHECK_NOTHROW(p.run("(set (w 3) (frac-add (w 1) (frac 1 2)))\n(check (= (w 3) (frac 1 1)))"));
}
