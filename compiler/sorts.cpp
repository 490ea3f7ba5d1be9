// Registering the Expr, Shape and View sorts, and how their values print.
#include "compiler/sorts.hpp"

#include <cstdio>
#include <optional>

#include "support/hash.hpp"

namespace kiln::compiler {

namespace {

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += graph::to_string(shape[i]);
  }
  return out + "]";
}

// A literal call `(head "text")`; the texts printed here never contain '"' or '\'.
std::string literal(const char* head, const std::string& text) {
  return std::string("(") + head + " \"" + text + "\")";
}

engine::SortId builtin(const engine::EGraph& egraph, const std::string& name) {
  std::optional<engine::SortId> id = egraph.find_sort(name);
  KILN_ASSERT(id.has_value(), "register_graph_sorts: the builtin sorts are not registered");
  return *id;
}

}  // namespace

std::size_t ShapeHash::operator()(const Shape& s) const {
  std::uint64_t h = support::hash64("kiln::compiler::Shape");
  for (const graph::Expr& e : s) h = support::hash_combine(h, e.hash());
  return static_cast<std::size_t>(h);
}

std::string ExprSort::print(engine::Value v) const {
  return literal("expr", graph::to_string(get(v)));
}

std::string ShapeSort::print(engine::Value v) const {
  return literal("shape", shape_text(get(v)));
}

std::string ViewSort::print(engine::Value v) const {
  return literal("view", graph::to_string(get(v)));
}

std::string BodySort::print(engine::Value v) const {
  const support::Hash128 key = get(v).key();
  char hex[40];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(key.high),
                static_cast<unsigned long long>(key.low));
  return literal("body", std::string("kiln_") + hex);
}

GraphSorts register_graph_sorts(engine::EGraph& egraph) {
  GraphSorts s;
  s.i64 = builtin(egraph, "i64");
  s.unit = builtin(egraph, "Unit");
  s.string = builtin(egraph, "String");
  s.string_sort =
      std::dynamic_pointer_cast<const engine::StringSort>(egraph.sort(s.string).primitive);
  KILN_ASSERT(s.string_sort != nullptr, "register_graph_sorts: String is not the builtin sort");
  auto expr_sort = std::make_shared<const ExprSort>();
  auto shape_sort = std::make_shared<const ShapeSort>();
  auto view_sort = std::make_shared<const ViewSort>();
  s.expr = egraph.add_sort(engine::Sort{"Expr", false, expr_sort});
  s.shape = egraph.add_sort(engine::Sort{"Shape", false, shape_sort});
  s.view = egraph.add_sort(engine::Sort{"View", false, view_sort});
  auto body_sort = std::make_shared<const BodySort>();
  s.body = egraph.add_sort(engine::Sort{"Body", false, body_sort});
  s.body_sort = body_sort;
  s.expr_sort = expr_sort;
  s.shape_sort = shape_sort;
  s.view_sort = view_sort;
  add_expr_primitives(egraph, s);
  add_shape_and_view_primitives(egraph, s);
  add_body_primitives(egraph, s);
  add_kernel_primitives(egraph, s);
  return s;
}

}  // namespace kiln::compiler
