// The primitives of the Expr sort: literals, arithmetic, comparisons and constant tests.
// Comparisons give an Expr (1 or 0, possibly symbolic, as graph::lt/le/eq do): a rule that
// needs a decided answer asks `(= (expr-value (expr-lt a b)) 1)`, which fails while undecided.
#include <cstdint>
#include <optional>
#include <string>

#include "compiler/sorts.hpp"

namespace kiln::compiler {

namespace {

using engine::I64Sort;
using engine::Value;
using graph::Expr;

}  // namespace

void add_expr_primitives(engine::EGraph& egraph, const GraphSorts& s) {
  engine::PrimitiveTable& table = egraph.primitives();
  auto add = [&](const char* name, std::vector<engine::SortId> inputs, engine::SortId output,
                 engine::PrimitiveFn fn) {
    table.add(engine::Primitive{name, std::move(inputs), output, false, std::move(fn)});
  };
  const ExprSort* ex = s.expr_sort.get();
  const engine::StringSort* str = s.string_sort.get();

  // Literals. Parse errors carry a location in the text; here they become failures.
  add("expr", {s.string}, s.expr, guarded([ex, str](const Value* a, std::size_t, Value& r) {
        r = ex->make(graph::parse_expr(str->get(a[0])));
        return true;
      }));
  auto constant = guarded([ex](const Value* a, std::size_t, Value& r) {
    r = ex->make(Expr(I64Sort::get(a[0])));
    return true;
  });
  add("expr", {s.i64}, s.expr, constant);
  add("expr-const", {s.i64}, s.expr, constant);
  add("dim", {s.string}, s.expr, guarded([ex, str](const Value* a, std::size_t, Value& r) {
        r = ex->make(Expr::dim(str->get(a[0])));
        return true;
      }));

  // Binary operators, canonical results.
  auto binary = [&](const char* name, Expr (*op)(const Expr&, const Expr&)) {
    add(name, {s.expr, s.expr}, s.expr, guarded([ex, op](const Value* a, std::size_t, Value& r) {
          r = ex->make(op(ex->get(a[0]), ex->get(a[1])));
          return true;
        }));
  };
  binary("expr-add", [](const Expr& x, const Expr& y) { return x + y; });
  binary("expr-sub", [](const Expr& x, const Expr& y) { return x - y; });
  binary("expr-mul", [](const Expr& x, const Expr& y) { return x * y; });
  binary("expr-div", [](const Expr& x, const Expr& y) { return floor_div(x, y); });
  binary("expr-ceil-div", [](const Expr& x, const Expr& y) { return ceil_div(x, y); });
  binary("expr-mod", [](const Expr& x, const Expr& y) { return mod(x, y); });
  binary("expr-min", [](const Expr& x, const Expr& y) { return min(x, y); });
  binary("expr-max", [](const Expr& x, const Expr& y) { return max(x, y); });
  binary("expr-lt", [](const Expr& x, const Expr& y) { return lt(x, y); });
  binary("expr-le", [](const Expr& x, const Expr& y) { return le(x, y); });
  binary("expr-eq", [](const Expr& x, const Expr& y) { return eq(x, y); });

  add("expr-simplify", {s.expr}, s.expr, guarded([ex](const Value* a, std::size_t, Value& r) {
        r = ex->make(graph::simplify(ex->get(a[0])));
        return true;
      }));
  // Holds when the Expr is a constant.
  add("expr-const?", {s.expr}, s.unit, [ex](const Value* a, std::size_t, Value& r) {
    r = 0;
    return ex->get(a[0]).as_constant().has_value();
  });
  add("expr-value", {s.expr}, s.i64, [ex](const Value* a, std::size_t, Value& r) {
    std::optional<std::int64_t> c = ex->get(a[0]).as_constant();
    if (!c) return fail_because("not a constant");
    r = I64Sort::make(*c);
    return true;
  });
  add("expr-to-string", {s.expr}, s.string, [ex, str](const Value* a, std::size_t, Value& r) {
    r = str->make(graph::to_string(ex->get(a[0])));
    return true;
  });
}

}  // namespace kiln::compiler
