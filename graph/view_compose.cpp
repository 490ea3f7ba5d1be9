// compose(outer, inner): one View for reading a view of a view (see view.hpp). The general case
// builds the buffer index as a symbolic Expr over coordinate dims and asks the simplifier
// whether it is affine; nothing is guessed from stride patterns.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph/view.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

// A prefix for the coordinate dims that no dim of either view starts with.
std::string coordinate_prefix(const View& a, const View& b) {
  std::vector<std::string> names;
  auto collect = [&](const View& v) {
    auto add = [&](const Expr& e) {
      for (std::string& n : free_dims(e)) names.push_back(std::move(n));
    };
    for (const Expr& e : v.shape()) add(e);
    for (const Expr& e : v.strides()) add(e);
    add(v.offset());
    if (v.mask()) {
      for (const ValidRange& r : *v.mask()) {
        add(r.lo);
        add(r.hi);
      }
    }
  };
  collect(a);
  collect(b);
  std::string prefix = "_c";
  while (std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; })) {
    prefix = "_" + prefix;
  }
  return prefix;
}

bool depends_on(const Expr& e, const std::string& prefix) {
  std::vector<std::string> dims = free_dims(e);
  return std::any_of(dims.begin(), dims.end(),
                     [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
}

}  // namespace

std::optional<View> compose(const View& outer, const View& inner) {
  if (inner.is_contiguous()) return outer;
  for (const Expr& size : inner.shape()) {
    if (size == Expr(0)) return std::nullopt;  // T is empty: only padding could be read
  }
  const std::size_t rank = outer.rank();
  const std::string prefix = coordinate_prefix(outer, inner);
  std::vector<Expr> coords;
  DimRanges ranges;
  std::map<std::string, Expr> zero;
  for (std::size_t d = 0; d < rank; ++d) {
    std::string name = prefix + std::to_string(d);
    coords.push_back(Expr::dim(name));
    std::optional<std::int64_t> size = outer.shape()[d].as_constant();
    if (size && *size <= 0) return View::contiguous(outer.shape());  // no elements to read
    ranges[name] = size ? Interval{0, *size - 1} : Interval::at_least(0);
    zero[name] = Expr(0);
  }

  // t = unravel(outer.index(c)) in row-major order of inner's shape; then the buffer index.
  Expr position = outer.index(coords);
  std::vector<Expr> t(inner.rank());
  Expr suffix = 1;
  for (std::size_t k = inner.rank(); k-- > 0;) {
    Expr q = floor_div(position, suffix);
    t[k] = simplify(k == 0 ? q : mod(q, inner.shape()[k]), ranges);
    suffix = suffix * inner.shape()[k];
  }
  Expr index = simplify(inner.index(t), ranges);

  // Affine in c: index == base + sum c[d] * stride[d], with stride[d] read off at c = e_d.
  Expr base = substitute(index, zero);
  std::vector<Expr> strides(rank);
  Expr affine = base;
  for (std::size_t d = 0; d < rank; ++d) {
    std::map<std::string, Expr> unit = zero;
    unit[prefix + std::to_string(d)] = Expr(1);
    strides[d] = substitute(index, unit) - base;
    if (depends_on(strides[d], prefix)) return std::nullopt;
    affine = affine + coords[d] * strides[d];
  }
  if (simplify(index - affine, ranges) != Expr(0)) return std::nullopt;

  // Validity: outer's mask, narrowed by each padded dim of inner read as c[d] + b.
  std::optional<std::vector<ValidRange>> mask = outer.mask();
  if (inner.mask()) {
    if (!mask) {
      mask.emplace();
      for (const Expr& size : outer.shape()) mask->push_back({Expr(0), size});
    }
    for (std::size_t k = 0; k < inner.rank(); ++k) {
      const ValidRange& r = (*inner.mask())[k];
      if (r.lo == Expr(0) && r.hi == inner.shape()[k]) continue;
      Expr b = substitute(t[k], zero);
      if (!depends_on(t[k], prefix)) {
        if (simplify(le(r.lo, b) * lt(b, r.hi)) != Expr(1)) return std::nullopt;
        continue;
      }
      std::optional<std::size_t> along;
      for (std::size_t d = 0; d < rank && !along; ++d) {
        if (simplify(t[k] - coords[d] - b, ranges) == Expr(0)) along = d;
      }
      if (!along) return std::nullopt;
      ValidRange& m = (*mask)[*along];
      m = {max(m.lo, r.lo - b), min(m.hi, r.hi - b)};
    }
  }
  return View::from_parts(outer.shape(), std::move(strides), std::move(base), std::move(mask));
}

}  // namespace kiln::graph
