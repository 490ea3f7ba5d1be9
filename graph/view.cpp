// View: the ShapeTracker operations (see view.hpp).
#include "graph/view.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/diagnostic.hpp"
#include "support/hash.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

bool is_one(const Expr& e) {
  return e.as_constant() == std::optional<std::int64_t>(1);
}

// True if `e` is a constant below zero: the only case in which a symbolic size is provably bad.
bool provably_negative(const Expr& e) {
  std::optional<std::int64_t> c = e.as_constant();
  return c && *c < 0;
}

std::vector<Expr> contiguous_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> strides(shape.size());
  Expr running = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = is_one(shape[d]) ? Expr(0) : running;
    running = running * shape[d];
  }
  return strides;
}

std::string join(const std::vector<Expr>& exprs) {
  std::string out = "[";
  for (std::size_t i = 0; i < exprs.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_string(exprs[i]);
  }
  return out + "]";
}

std::string shape_text(const std::vector<Expr>& shape) {
  return join(shape);
}

}  // namespace

View::View(std::vector<Expr> shape, std::vector<Expr> strides, Expr offset,
           std::optional<std::vector<ValidRange>> mask)
    : shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(std::move(offset)),
      mask_(std::move(mask)) {
  KILN_ASSERT(strides_.size() == shape_.size(), "View: strides and shape differ in rank");
  KILN_ASSERT(!mask_ || mask_->size() == shape_.size(), "View: mask and shape differ in rank");
  for (std::size_t d = 0; d < shape_.size(); ++d) {
    if (is_one(shape_[d])) strides_[d] = 0;
  }
  if (mask_) {
    bool full = true;
    for (std::size_t d = 0; d < shape_.size() && full; ++d) {
      full = (*mask_)[d].lo == Expr(0) && (*mask_)[d].hi == shape_[d];
    }
    if (full) mask_.reset();
  }
}

void View::check_dim(std::size_t dim, const char* op) const {
  if (dim >= rank()) {
    throw UserError(std::string(op) + ": dim " + std::to_string(dim) +
                    " is out of range for a view of rank " + std::to_string(rank()));
  }
}

View View::contiguous(std::vector<Expr> shape) {
  for (const Expr& size : shape) {
    if (provably_negative(size)) {
      throw UserError("view: negative size " + to_string(size) + " in shape " + shape_text(shape));
    }
  }
  std::vector<Expr> strides = contiguous_strides(shape);
  return View(std::move(shape), std::move(strides), Expr(0), std::nullopt);
}

View View::from_parts(std::vector<Expr> shape, std::vector<Expr> strides, Expr offset,
                      std::optional<std::vector<ValidRange>> mask) {
  if (strides.size() != shape.size() || (mask && mask->size() != shape.size())) {
    throw UserError("view: shape, strides and mask differ in rank");
  }
  for (const Expr& size : shape) {
    if (provably_negative(size)) {
      throw UserError("view: negative size " + to_string(size) + " in shape " + shape_text(shape));
    }
  }
  return View(std::move(shape), std::move(strides), std::move(offset), std::move(mask));
}

Expr View::numel() const {
  Expr n = 1;
  for (const Expr& size : shape_) n = n * size;
  return n;
}

bool View::is_contiguous() const {
  return !mask_ && offset_ == Expr(0) && strides_ == contiguous_strides(shape_);
}

View View::permute(const std::vector<std::size_t>& order) const {
  if (order.size() != rank()) {
    throw UserError("permute: order has " + std::to_string(order.size()) +
                    " entries for a view of rank " + std::to_string(rank()));
  }
  std::vector<bool> seen(rank(), false);
  for (std::size_t d : order) {
    if (d >= rank() || seen[d]) {
      throw UserError("permute: order is not a permutation of 0.." + std::to_string(rank()) +
                      " (bad entry " + std::to_string(d) + ")");
    }
    seen[d] = true;
  }
  std::vector<Expr> shape, strides;
  std::optional<std::vector<ValidRange>> mask;
  if (mask_) mask.emplace();
  for (std::size_t d : order) {
    shape.push_back(shape_[d]);
    strides.push_back(strides_[d]);
    if (mask_) mask->push_back((*mask_)[d]);
  }
  return View(std::move(shape), std::move(strides), offset_, std::move(mask));
}

View View::expand(std::size_t dim, const Expr& size) const {
  check_dim(dim, "expand");
  if (!is_one(shape_[dim])) {
    throw UserError("expand: dim " + std::to_string(dim) + " has size " + to_string(shape_[dim]) +
                    ", not 1");
  }
  if (provably_negative(size)) throw UserError("expand: negative size " + to_string(size));
  std::vector<Expr> shape = shape_;
  std::vector<Expr> strides = strides_;
  shape[dim] = size;
  strides[dim] = 0;
  std::optional<std::vector<ValidRange>> mask = mask_;
  if (mask) {
    // The single coordinate 0 is valid or not; every broadcast copy is the same.
    const ValidRange& r = (*mask)[dim];
    Expr valid0 = le(r.lo, 0) * lt(Expr(0), r.hi);
    (*mask)[dim] = {Expr(0), size * valid0};
  }
  return View(std::move(shape), std::move(strides), offset_, std::move(mask));
}

std::optional<View> View::reshape(const std::vector<Expr>& new_shape) const {
  for (const Expr& size : new_shape) {
    if (provably_negative(size)) {
      throw UserError("reshape: negative size " + to_string(size) + " in shape " +
                      shape_text(new_shape));
    }
  }
  Expr old_numel = numel();
  Expr new_numel = Expr(1);
  for (const Expr& size : new_shape) new_numel = new_numel * size;
  if (old_numel != new_numel) {
    throw UserError("reshape: " + shape_text(shape_) + " has " + to_string(old_numel) +
                    " elements, " + shape_text(new_shape) + " has " + to_string(new_numel));
  }
  if (new_shape == shape_) return *this;
  if (mask_) {
    // With padding, only dims of size 1 may come or go: the other dims keep their strides and
    // valid ranges, in order.
    std::vector<std::size_t> kept;
    for (std::size_t d = 0; d < rank(); ++d) {
      if (!is_one(shape_[d])) {
        kept.push_back(d);
      } else if (!((*mask_)[d].lo == Expr(0) && (*mask_)[d].hi == Expr(1))) {
        return std::nullopt;
      }
    }
    std::vector<Expr> strides;
    std::vector<ValidRange> mask;
    std::size_t next = 0;
    for (const Expr& size : new_shape) {
      if (is_one(size)) {
        strides.push_back(0);
        mask.push_back({Expr(0), Expr(1)});
        continue;
      }
      if (next == kept.size() || shape_[kept[next]] != size) return std::nullopt;
      strides.push_back(strides_[kept[next]]);
      mask.push_back((*mask_)[kept[next]]);
      ++next;
    }
    if (next != kept.size()) return std::nullopt;
    return View(new_shape, std::move(strides), offset_, std::move(mask));
  }
  if (old_numel == Expr(0) || old_numel == Expr(1)) {
    // Every element is at the offset (or there is none): any strides do.
    return View(new_shape, std::vector<Expr>(new_shape.size(), Expr(0)), offset_, std::nullopt);
  }
  if (is_contiguous()) return contiguous(new_shape);

  // Walk chunks of old dims that are laid out contiguously together (from the innermost), and
  // give each the new dims whose sizes multiply to the chunk's size. Dims of size 1 join any
  // chunk. Each new dim's stride follows from its place in its chunk.
  std::vector<Expr> strides(new_shape.size());
  std::size_t view_left = new_shape.size();  // new dims [0, view_left) are not yet assigned
  Expr chunk_base_stride = strides_.back();
  Expr tensor_numel = 1;
  Expr view_numel = 1;
  for (std::size_t tensor_d = rank(); tensor_d-- > 0;) {
    tensor_numel = tensor_numel * shape_[tensor_d];
    bool chunk_ends = tensor_d == 0 || (!is_one(shape_[tensor_d - 1]) &&
                                        strides_[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_left > 0 && (view_numel != tensor_numel || is_one(new_shape[view_left - 1]))) {
      strides[view_left - 1] = view_numel * chunk_base_stride;
      view_numel = view_numel * new_shape[view_left - 1];
      --view_left;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = strides_[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_left != 0) return std::nullopt;
  return View(new_shape, std::move(strides), offset_, std::nullopt);
}

View View::slice(std::size_t dim, const Expr& begin, const Expr& end) const {
  check_dim(dim, "slice");
  if (provably_negative(begin) || provably_negative(end - begin) ||
      provably_negative(shape_[dim] - end)) {
    throw UserError("slice: [" + to_string(begin) + ", " + to_string(end) + ") is not within dim " +
                    std::to_string(dim) + " of size " + to_string(shape_[dim]));
  }
  std::vector<Expr> shape = shape_;
  std::vector<Expr> strides = strides_;
  Expr size = end - begin;
  shape[dim] = size;
  Expr offset = offset_ + begin * strides_[dim];
  std::optional<std::vector<ValidRange>> mask = mask_;
  if (mask) {
    const ValidRange& r = (*mask)[dim];
    (*mask)[dim] = {max(r.lo - begin, Expr(0)), min(r.hi - begin, size)};
    // An empty range stays empty (lo may then exceed hi; valid() is 0 either way).
  }
  return View(std::move(shape), std::move(strides), std::move(offset), std::move(mask));
}

View View::pad(std::size_t dim, const Expr& before, const Expr& after) const {
  check_dim(dim, "pad");
  if (provably_negative(before) || provably_negative(after)) {
    throw UserError("pad: negative padding (" + to_string(before) + ", " + to_string(after) +
                    ") on dim " + std::to_string(dim));
  }
  std::vector<Expr> shape = shape_;
  shape[dim] = shape_[dim] + before + after;
  Expr offset = offset_ - before * strides_[dim];
  std::vector<ValidRange> mask;
  if (mask_) {
    mask = *mask_;
  } else {
    for (const Expr& size : shape_) mask.push_back({Expr(0), size});
  }
  mask[dim] = {mask[dim].lo + before, mask[dim].hi + before};
  return View(std::move(shape), strides_, std::move(offset), std::move(mask));
}

Expr View::index(const std::vector<Expr>& coords) const {
  if (coords.size() != rank()) {
    throw UserError("index: " + std::to_string(coords.size()) + " coordinates for a view of rank " +
                    std::to_string(rank()));
  }
  Expr at = offset_;
  for (std::size_t d = 0; d < rank(); ++d) at = at + coords[d] * strides_[d];
  return at;
}

Expr View::valid(const std::vector<Expr>& coords) const {
  if (coords.size() != rank()) {
    throw UserError("valid: " + std::to_string(coords.size()) + " coordinates for a view of rank " +
                    std::to_string(rank()));
  }
  Expr ok = 1;
  if (!mask_) return ok;
  for (std::size_t d = 0; d < rank(); ++d) {
    const ValidRange& r = (*mask_)[d];
    if (r.lo == Expr(0) && r.hi == shape_[d]) continue;  // every in-range coordinate is valid
    ok = ok * le(r.lo, coords[d]) * lt(coords[d], r.hi);
  }
  return ok;
}

std::uint64_t View::hash() const {
  std::uint64_t h = support::hash64("kiln::graph::View");
  h = support::hash_combine(h, rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    h = support::hash_combine(h, shape_[d].hash());
    h = support::hash_combine(h, strides_[d].hash());
  }
  h = support::hash_combine(h, offset_.hash());
  h = support::hash_combine(h, mask_ ? 1 : 0);
  if (mask_) {
    for (const ValidRange& r : *mask_) {
      h = support::hash_combine(h, r.lo.hash());
      h = support::hash_combine(h, r.hi.hash());
    }
  }
  return h;
}

std::string to_string(const View& v) {
  std::string out = "View(shape=" + join(v.shape()) + ", strides=" + join(v.strides()) +
                    ", offset=" + to_string(v.offset());
  if (v.mask()) {
    out += ", mask=[";
    for (std::size_t d = 0; d < v.mask()->size(); ++d) {
      if (d > 0) out += ", ";
      out += "[" + to_string((*v.mask())[d].lo) + ", " + to_string((*v.mask())[d].hi) + ")";
    }
    out += "]";
  }
  return out + ")";
}

}  // namespace kiln::graph
