// View: a ShapeTracker (DESIGN §3): how a tensor's coordinates map onto a flat buffer, as
// symbolic dims, strides, an offset and a validity mask for padding.
//
// Model. A view of rank n has a shape (its dims) and, per dim, a stride; the element at
// coordinates c lives at buffer position `offset + sum(c[d] * stride[d])`. Padding is recorded
// as a mask: per dim a half-open range [lo, hi) of coordinates that read real data; outside it
// the element is the pad value and its index() must not be used. A view without padding has no
// mask (mask() is nullopt), so equal views compare equal whatever path built them.
//
// Canonical form. A dim of size (the constant) 1 always has stride 0, and a mask whose every
// range is [0, size) is dropped. Views are immutable; every operation returns a new one.
//
// Errors. A bad argument (a dim out of range, a bad permutation, expanding a dim that is not 1,
// a slice or pad that is provably out of bounds, a reshape that changes the element count) is
// a support::UserError. Checks on symbolic sizes are made where they can be decided from the
// canonical form; what cannot be decided is trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/expr.hpp"

namespace kiln::graph {

// The valid range [lo, hi) of one dim's coordinates.
struct ValidRange {
  Expr lo;
  Expr hi;
  friend bool operator==(const ValidRange&, const ValidRange&) = default;
};

class View {
 public:
  // A row-major view of a fresh buffer: strides are suffix products, offset 0, no mask.
  static View contiguous(std::vector<Expr> shape);
  // A view from its parts, as printed (parse_view reads them back). Put in canonical form;
  // ranks that disagree are a UserError.
  static View from_parts(std::vector<Expr> shape, std::vector<Expr> strides, Expr offset,
                         std::optional<std::vector<ValidRange>> mask = std::nullopt);

  std::size_t rank() const { return shape_.size(); }
  const std::vector<Expr>& shape() const { return shape_; }
  const std::vector<Expr>& strides() const { return strides_; }
  const Expr& offset() const { return offset_; }
  // Per dim the valid range; nullopt when every coordinate is valid (no padding).
  const std::optional<std::vector<ValidRange>>& mask() const { return mask_; }

  // The number of elements: the product of the shape.
  Expr numel() const;
  // True if this view reads its buffer row-major from position 0 with no padding, i.e. it
  // equals View::contiguous(shape()).
  bool is_contiguous() const;

  // Output dim d is input dim order[d]. `order` must be a permutation of 0..rank-1.
  View permute(const std::vector<std::size_t>& order) const;
  // Broadcasts dim `dim` (which must have size 1) to `size`, with stride 0.
  View expand(std::size_t dim, const Expr& size) const;
  // The same elements in row-major order under `new_shape`, without a copy, when the strides
  // allow it (contiguous views; merging or splitting dims whose strides are compatible;
  // adding or removing dims of size 1; with padding, only adding or removing dims of size 1).
  // nullopt when a copy is needed (the API inserts one).
  std::optional<View> reshape(const std::vector<Expr>& new_shape) const;
  // Keeps coordinates [begin, end) of dim `dim`; the dim's size becomes end - begin.
  View slice(std::size_t dim, const Expr& begin, const Expr& end) const;
  // Adds `before` pad elements in front of dim `dim` and `after` behind it.
  View pad(std::size_t dim, const Expr& before, const Expr& after) const;

  // The buffer position of the element at `coords` (one Expr per dim, usually dim variables).
  // Meaningful only where valid(coords) is 1.
  Expr index(const std::vector<Expr>& coords) const;
  // 1 where `coords` reads real data, 0 where it reads padding (for in-range coords). Only
  // padded dims appear in it.
  Expr valid(const std::vector<Expr>& coords) const;

  // A deterministic 64-bit structural hash (xxHash via support/hash.hpp).
  std::uint64_t hash() const;
  friend bool operator==(const View&, const View&) = default;

 private:
  View(std::vector<Expr> shape, std::vector<Expr> strides, Expr offset,
       std::optional<std::vector<ValidRange>> mask);
  void check_dim(std::size_t dim, const char* op) const;

  std::vector<Expr> shape_;
  std::vector<Expr> strides_;
  Expr offset_;
  std::optional<std::vector<ValidRange>> mask_;
};

// For hashed containers keyed by View.
struct ViewHash {
  std::size_t operator()(const View& v) const { return static_cast<std::size_t>(v.hash()); }
};

// Composition: one view for reading through two. A tensor T of shape inner.shape() is stored
// in a buffer as `inner` (T[t] lives at inner.index(t)); `outer` reads T as if T were
// contiguous (reading coordinates c gives T's row-major element number outer.index(c)). The
// result R reads the buffer directly:
//   R.shape() == outer.shape(),
//   R.valid(c) == outer.valid(c) * inner.valid(t) and, where valid, R.index(c) == inner.index(t),
//   with t = the coordinates of element number outer.index(c) in row-major order of inner.shape().
// It exists only when that map is a single View: always when `inner` is contiguous (R is
// outer); otherwise when the unravelled index simplifies to an affine function of c (checked
// symbolically with each coordinate in [0, size) when the size is constant) and every padded
// dim of `inner` is read as `c[d] + b`. nullopt otherwise (the caller keeps two views or copies).
std::optional<View> compose(const View& outer, const View& inner);

// Deterministic text: `View(shape=[seq, 64], strides=[64, 1], offset=0)`, with
// `, mask=[[0, seq), [1, 65)]` appended when the view has padding.
std::string to_string(const View& v);

// Reads what to_string(View) prints (spaces between tokens are free). Errors are UserErrors
// located in the text (`source_name:1:col` with a caret).
View parse_view(std::string_view text, std::string_view source_name = "<view>");
// Reads a shape as printed in views and HLIR text: `[seq, 64]`, `[]`.
std::vector<Expr> parse_shape(std::string_view text, std::string_view source_name = "<shape>");

}  // namespace kiln::graph
