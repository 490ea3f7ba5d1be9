// The primitives of the Shape and View sorts: literals, the ShapeTracker operations, queries
// on a view, and composition. Dim arguments are i64 (a negative or out-of-range dim fails).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/sorts.hpp"

namespace kiln::compiler {

namespace {

using engine::I64Sort;
using engine::Value;
using graph::Expr;
using graph::View;

// An i64 argument used as a dim or axis: nullopt when negative.
std::optional<std::size_t> as_dim(Value v) {
  std::int64_t d = I64Sort::get(v);
  if (d < 0) return std::nullopt;
  return static_cast<std::size_t>(d);
}

}  // namespace

void add_shape_and_view_primitives(engine::EGraph& egraph, const GraphSorts& s) {
  engine::PrimitiveTable& table = egraph.primitives();
  auto add = [&](const char* name, std::vector<engine::SortId> inputs, engine::SortId output,
                 engine::PrimitiveFn fn, bool variadic = false) {
    table.add(engine::Primitive{name, std::move(inputs), output, variadic, std::move(fn)});
  };
  const ExprSort* ex = s.expr_sort.get();
  const ShapeSort* sh = s.shape_sort.get();
  const ViewSort* vs = s.view_sort.get();
  const engine::StringSort* str = s.string_sort.get();

  // --- Shape ---
  add("shape", {s.string}, s.shape, guarded([sh, str](const Value* a, std::size_t, Value& r) {
        r = sh->make(graph::parse_shape(str->get(a[0])));
        return true;
      }));
  add(
      "shape", {s.expr}, s.shape,
      [sh, ex](const Value* a, std::size_t n, Value& r) {
        Shape shape;
        for (std::size_t i = 0; i < n; ++i) shape.push_back(ex->get(a[i]));
        r = sh->make(shape);
        return true;
      },
      /*variadic=*/true);
  add("shape-rank", {s.shape}, s.i64, [sh](const Value* a, std::size_t, Value& r) {
    r = I64Sort::make(static_cast<std::int64_t>(sh->get(a[0]).size()));
    return true;
  });
  add("shape-dim", {s.shape, s.i64}, s.expr, [sh, ex](const Value* a, std::size_t, Value& r) {
    std::optional<std::size_t> d = as_dim(a[1]);
    if (!d || *d >= sh->get(a[0]).size()) return fail_because("dim out of range for the shape");
    r = ex->make(sh->get(a[0])[*d]);
    return true;
  });
  add("shape-numel", {s.shape}, s.expr, guarded([sh, ex](const Value* a, std::size_t, Value& r) {
        Expr n = 1;
        for (const Expr& size : sh->get(a[0])) n = n * size;
        r = ex->make(n);
        return true;
      }));

  // --- View literals and conversions ---
  add("view", {s.string}, s.view, guarded([vs, str](const Value* a, std::size_t, Value& r) {
        r = vs->make(graph::parse_view(str->get(a[0])));
        return true;
      }));
  add("view-contiguous", {s.shape}, s.view,
      guarded([vs, sh](const Value* a, std::size_t, Value& r) {
        r = vs->make(View::contiguous(sh->get(a[0])));
        return true;
      }));
  add("view-contiguous", {s.string}, s.view,
      guarded([vs, str](const Value* a, std::size_t, Value& r) {
        r = vs->make(View::contiguous(graph::parse_shape(str->get(a[0]))));
        return true;
      }));
  add("view-shape", {s.view}, s.shape, [vs, sh](const Value* a, std::size_t, Value& r) {
    r = sh->make(vs->get(a[0]).shape());
    return true;
  });
  add("view-to-string", {s.view}, s.string, [vs, str](const Value* a, std::size_t, Value& r) {
    r = str->make(graph::to_string(vs->get(a[0])));
    return true;
  });

  // --- ShapeTracker operations ---
  add(
      "view-permute", {s.view, s.i64}, s.view,
      guarded([vs](const Value* a, std::size_t n, Value& r) {
        std::vector<std::size_t> order;
        for (std::size_t i = 1; i < n; ++i) {
          std::optional<std::size_t> d = as_dim(a[i]);
          if (!d) return fail_because("negative dim");
          order.push_back(*d);
        }
        r = vs->make(vs->get(a[0]).permute(order));
        return true;
      }),
      /*variadic=*/true);
  add("view-expand", {s.view, s.i64, s.expr}, s.view,
      guarded([vs, ex](const Value* a, std::size_t, Value& r) {
        std::optional<std::size_t> d = as_dim(a[1]);
        if (!d) return fail_because("negative dim");
        r = vs->make(vs->get(a[0]).expand(*d, ex->get(a[2])));
        return true;
      }));
  // Fails when the reshape needs a copy.
  add("view-reshape", {s.view, s.shape}, s.view,
      guarded([vs, sh](const Value* a, std::size_t, Value& r) {
        std::optional<View> v = vs->get(a[0]).reshape(sh->get(a[1]));
        if (!v) return fail_because("this reshape needs a copy: no view reads it");
        r = vs->make(*v);
        return true;
      }));
  auto ranged = [&](const char* name, View (View::*op)(std::size_t, const Expr&, const Expr&)
                                          const) {
    add(name, {s.view, s.i64, s.expr, s.expr}, s.view,
        guarded([vs, ex, op](const Value* a, std::size_t, Value& r) {
          std::optional<std::size_t> d = as_dim(a[1]);
          if (!d) return fail_because("negative dim");
          r = vs->make((vs->get(a[0]).*op)(*d, ex->get(a[2]), ex->get(a[3])));
          return true;
        }));
  };
  ranged("view-slice", &View::slice);
  ranged("view-pad", &View::pad);
  // Fails when no single view reads the buffer (see graph::compose).
  add("view-compose", {s.view, s.view}, s.view,
      guarded([vs](const Value* a, std::size_t, Value& r) {
        std::optional<View> v = graph::compose(vs->get(a[0]), vs->get(a[1]));
        if (!v) return fail_because("no single view reads the buffer through both");
        r = vs->make(*v);
        return true;
      }));

  // --- Queries ---
  add("view-contiguous?", {s.view}, s.unit, [vs](const Value* a, std::size_t, Value& r) {
    r = 0;
    return vs->get(a[0]).is_contiguous();
  });
  add("view-rank", {s.view}, s.i64, [vs](const Value* a, std::size_t, Value& r) {
    r = I64Sort::make(static_cast<std::int64_t>(vs->get(a[0]).rank()));
    return true;
  });
  auto per_dim = [&](const char* name, const std::vector<Expr>& (View::*part)() const) {
    add(name, {s.view, s.i64}, s.expr, [vs, ex, part](const Value* a, std::size_t, Value& r) {
      const std::vector<Expr>& exprs = (vs->get(a[0]).*part)();
      std::optional<std::size_t> d = as_dim(a[1]);
      if (!d || *d >= exprs.size()) return fail_because("dim out of range for the view");
      r = ex->make(exprs[*d]);
      return true;
    });
  };
  per_dim("view-dim", &View::shape);
  per_dim("view-stride", &View::strides);
  // For library layouts: a dim of size 1 has stride 0 (canonical form), yet reads like a unit
  // stride, and any leading dimension fits it. view-unit-stride? holds for a unit stride or a
  // size-1 dim; view-lead is the stride along a dim, or `fallback` (the smallest legal leading
  // dimension, e.g. the row length) when that dim has size 1.
  add("view-unit-stride?", {s.view, s.i64}, s.unit, [vs](const Value* a, std::size_t, Value& r) {
    const View& v = vs->get(a[0]);
    std::optional<std::size_t> d = as_dim(a[1]);
    if (!d || *d >= v.rank()) return fail_because("dim out of range for the view");
    r = 0;
    return v.strides()[*d] == Expr(1) || v.shape()[*d] == Expr(1);
  });
  add("view-lead", {s.view, s.i64, s.expr}, s.expr,
      [vs, ex](const Value* a, std::size_t, Value& r) {
        const View& v = vs->get(a[0]);
        std::optional<std::size_t> d = as_dim(a[1]);
        if (!d || *d >= v.rank()) return fail_because("dim out of range for the view");
        r = v.shape()[*d] == Expr(1) ? a[2] : ex->make(v.strides()[*d]);
        return true;
      });
  add("view-offset", {s.view}, s.expr, [vs, ex](const Value* a, std::size_t, Value& r) {
    r = ex->make(vs->get(a[0]).offset());
    return true;
  });
  add("view-numel", {s.view}, s.expr, guarded([vs, ex](const Value* a, std::size_t, Value& r) {
        r = ex->make(vs->get(a[0]).numel());
        return true;
      }));
}

}  // namespace kiln::compiler
