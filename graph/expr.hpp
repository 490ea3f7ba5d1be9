// Expr: symbolic integer expressions over named dims (`seq`, `batch`, ...), kept in a canonical
// simplified form so that equal shape arithmetic usually compares equal.
//
// Domain. A dim is a size or an index: every dim ranges over [0, +inf). The canonical form
// relies on it (e.g. `(x*8 + 3)/8` is `x`, and `min(x, 0)` is `0`), so evaluate() rejects
// negative dim values and substitute() rejects replacements that may be negative. Narrower
// ranges (`seq` in [1, 4096]) can be passed to simplify() and bounds().
//
// Semantics. `/` is floor division and `%` the matching modulus (the result has the divisor's
// sign), as in Python; ceil_div rounds up. Comparisons produce 1 (true) or 0 (false). Dividing
// by zero is a user error (support::UserError), at construction when the divisor is the
// constant 0 and at evaluation otherwise; so is 64-bit overflow.
//
// Canonical form. Every Expr built with the operators below (and every parsed Expr) is
// canonical: a sum of monomials with integer coefficients, terms in a deterministic order, whose
// atoms are dims and canonical div/mod/min/max/comparison nodes. Expr::node builds a tree as
// written, and simplify() canonicalizes it. See expr_simplify.cpp for the rules.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::graph {

// The kind of an Expr node. Add, Mul, Min and Max take two or more arguments; FloorDiv,
// CeilDiv, Mod, Lt, Le and Eq exactly two (Lt and Le: first < / <= second).
enum class ExprOp : std::uint8_t {
  Const, Dim, Add, Mul, FloorDiv, CeilDiv, Mod, Min, Max, Lt, Le, Eq,
};

// A closed interval of integers. lo == kNegInf and hi == kPosInf mean unbounded on that side,
// so [kNegInf, kPosInf] is "anything".
struct Interval {
  static constexpr std::int64_t kNegInf = std::numeric_limits<std::int64_t>::min();
  static constexpr std::int64_t kPosInf = std::numeric_limits<std::int64_t>::max();

  std::int64_t lo = kNegInf;
  std::int64_t hi = kPosInf;

  static Interval exactly(std::int64_t v) { return {v, v}; }
  static Interval at_least(std::int64_t v) { return {v, kPosInf}; }
  bool contains(std::int64_t v) const {
    return (lo == kNegInf || lo <= v) && (hi == kPosInf || v <= hi);
  }
  friend bool operator==(const Interval&, const Interval&) = default;
};

// Per-dim ranges for simplify() and bounds(); a dim not listed ranges over [0, +inf). A range
// reaching below 0, or empty, is a UserError.
using DimRanges = std::map<std::string, Interval>;
// Values of dims for evaluate().
using DimValues = std::map<std::string, std::int64_t>;

// An immutable symbolic integer. Cheap to copy (shared, never mutated); compares structurally.
class Expr {
 public:
  // The constant 0.
  Expr();
  // A constant. Implicit, so that constants mix with Exprs: `2*seq + 1`.
  Expr(std::int64_t value);  // NOLINT(google-explicit-constructor)
  // A named dim. Names are identifiers ([A-Za-z_][A-Za-z0-9_]*); anything else is a UserError.
  static Expr dim(std::string_view name);
  // A node exactly as written, not simplified: for keeping a user's form, and for testing the
  // simplifier against the tree it started from. Const and Dim nodes come from the
  // constructors above; a wrong argument count is an internal error.
  static Expr node(ExprOp op, std::vector<Expr> args);

  ExprOp op() const;
  // The value of a Const node (internal error otherwise).
  std::int64_t value() const;
  // The name of a Dim node (internal error otherwise).
  const std::string& name() const;
  // The arguments, in order (empty for Const and Dim).
  const std::vector<Expr>& args() const;
  // The value if this is a Const node.
  std::optional<std::int64_t> as_constant() const;
  // A 64-bit structural hash (xxHash): equal Exprs hash equal, on every run and machine.
  std::uint64_t hash() const;
  // True if built in canonical form by the operators (simplify() returns it unchanged).
  bool is_canonical() const;

  // Structural equality: same tree. (eq() below is the symbolic comparison.)
  friend bool operator==(const Expr& a, const Expr& b);
  // A deterministic total order on trees (dims by name, constants by value, then shape); the
  // order of terms in canonical sums and of min/max arguments.
  friend std::strong_ordering compare(const Expr& a, const Expr& b);

  // Arithmetic, returning canonical Exprs (non-canonical arguments are simplified first).
  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  friend Expr operator*(const Expr& a, const Expr& b);
  // Floor division, ceiling division and floor modulus; a constant zero divisor is a UserError.
  friend Expr floor_div(const Expr& a, const Expr& b);
  friend Expr ceil_div(const Expr& a, const Expr& b);
  friend Expr mod(const Expr& a, const Expr& b);
  friend Expr min(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);
  // Comparisons: 1 if a < b (a <= b, a == b), else 0.
  friend Expr lt(const Expr& a, const Expr& b);
  friend Expr le(const Expr& a, const Expr& b);
  friend Expr eq(const Expr& a, const Expr& b);

 private:
  struct Node;
  friend class ExprBuilder;
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

// For ordered containers keyed by Expr.
struct ExprLess {
  bool operator()(const Expr& a, const Expr& b) const { return compare(a, b) < 0; }
};

// For hashed containers keyed by Expr.
struct ExprHash {
  std::size_t operator()(const Expr& e) const { return static_cast<std::size_t>(e.hash()); }
};

// The canonical form of `e` (for dims in [0, +inf)). Idempotent; O(1) on canonical input.
Expr simplify(const Expr& e);
// The canonical form of `e`, simplified further using the given dim ranges; the result equals
// `e` for every assignment within them.
Expr simplify(const Expr& e, const DimRanges& ranges);

// Replaces dims by Exprs (dims not in the map stay) and simplifies. A replacement that may be
// negative is a UserError: the canonical form assumed the dim it replaces is >= 0.
Expr substitute(const Expr& e, const std::map<std::string, Expr>& replacements);

// The value of `e` with every dim bound. A missing or negative dim, a division by zero and
// 64-bit overflow are UserErrors naming what went wrong.
std::int64_t evaluate(const Expr& e, const DimValues& values);

// Bounds on the value of `e` when each dim lies in its range (interval arithmetic: sound, not
// always tight).
Interval bounds(const Expr& e, const DimRanges& ranges = {});

// The dims `e` mentions, sorted by name, each once.
std::vector<std::string> free_dims(const Expr& e);

// Infix text that parse_expr() reads back: `2*seq + 1`, `(seq + 63)/64`, `min(seq, 4096)`,
// `x + 1 <= y`. `/` and `%` are floor division and modulus.
std::string to_string(const Expr& e);
// An S-expression: `(+ (* 2 seq) 1)`, with operators + * div ceil-div mod min max < <= ==.
std::string to_sexp(const Expr& e);

// Parses the infix form (also `a > b`, `a >= b`, `floor_div(a, b)`, `mod(a, b)`,
// `ceil_div(a, b)`, `min(a, b, ...)`, `max(...)`) into a canonical Expr. Errors are UserErrors
// located in the text (`source_name:line:col`, with a caret).
Expr parse_expr(std::string_view text, std::string_view source_name = "<expr>");

}  // namespace kiln::graph
