// Primitives that build kernels for rules: `one-op-body` (the one-op Body of an HLIR op, from
// the op's attributes and its input views and dtypes, as graph::one_op_body builds it from a
// graph), `dtype-join` (the merge of rules/dtype_prop.egg), and the few Shape and View queries
// the matmul rules need (`shape-drop`, `shape-merge`, `view-has-mask`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/sorts.hpp"
#include "graph/body_lower.hpp"
#include "graph/dtype.hpp"
#include "graph/hlir.hpp"

namespace kiln::compiler {

namespace {

using engine::I64Sort;
using engine::Value;
using graph::DType;
using graph::Expr;
using graph::Op;
using graph::View;

// The compute ops by name (every op with a one-op Body; Input and CustomOp have none).
std::optional<Op> compute_op(const std::string& name) {
  static constexpr Op kOps[] = {Op::Output,  Op::Constant,  Op::Iota,      Op::Cast,
                                Op::Exp2,    Op::Log2,      Op::Sin,       Op::Recip,
                                Op::Sqrt,    Op::Add,       Op::Mul,       Op::Mod,
                                Op::LessThan, Op::SumReduce, Op::MaxReduce, Op::Softmax,
                                Op::Gather,  Op::Scatter};
  for (Op op : kOps) {
    if (graph::op_name(op) == name) return op;
  }
  return std::nullopt;
}

// One input slot of the op: how it is read, and the dtype of the buffer it reads.
struct Slot {
  View view;
  DType dtype;
};

// The output shape of `op` reading `slots` (graph/hlir.hpp's shape contract); a UserError when
// the slots cannot give one (an axis out of range, a Gather without data dims).
std::vector<Expr> output_shape(Op op, std::size_t axis, const std::vector<Slot>& slots) {
  const std::vector<Expr>& first = slots[0].view.shape();
  if (op == Op::SumReduce || op == Op::MaxReduce) {
    if (axis >= first.size()) {
      throw support::UserError("axis " + std::to_string(axis) + " is out of range for a rank-" +
                               std::to_string(first.size()) + " input");
    }
    std::vector<Expr> out = first;
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
    return out;
  }
  if (op == Op::Gather) {
    if (first.empty()) throw support::UserError("Gather's table has no dims");
    std::vector<Expr> out = slots[1].view.shape();
    out.insert(out.end(), first.begin() + 1, first.end());
    return out;
  }
  return first;
}

// The one-op Body of a graph of one node of `op` over one Input per slot; a UserError saying why
// when the op, its arity or its operands are not a valid HLIR node (the failure's reason). Every Input is read only through
// its edge's view (graph::one_op_body reads the producers' dtypes and the edge views), so its
// shape is the view's own.
graph::Body build(const std::string& op_name, const std::string& dtype_name,
                                 std::vector<Slot> slots, std::size_t axis,
                                 std::vector<Expr> shape, double value, std::size_t arity) {
  std::optional<Op> op = compute_op(op_name);
  std::optional<DType> dtype = graph::parse_dtype(dtype_name);
  if (!op) throw support::UserError("'" + op_name + "' is not an HLIR op with a one-op kernel");
  if (!dtype) throw support::UserError("'" + dtype_name + "' is not a dtype");
  const bool source = *op == Op::Constant || *op == Op::Iota;
  const std::size_t wanted = source ? 0
                             : *op == Op::Scatter ? 3
                             : (*op == Op::Add || *op == Op::Mul || *op == Op::Mod ||
                                *op == Op::LessThan || *op == Op::Gather)
                                 ? 2
                                 : 1;
  if (wanted != arity) {
    throw support::UserError(op_name + " takes " + std::to_string(wanted) + " input(s), not " +
                             std::to_string(arity));
  }
  graph::Graph g;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    graph::Node in;
    in.op = Op::Input;
    in.dtype = slots[i].dtype;
    in.shape = slots[i].view.shape();
    in.name = "in" + std::to_string(i);
    g.add_node(std::move(in));
  }
  graph::Node n;
  n.op = *op;
  n.dtype = *dtype;
  n.axis = axis;
  n.value = value;
  n.name = "out";
  if (source) {
    n.shape = std::move(shape);
  } else {
    n.shape = output_shape(*op, axis, slots);
  }
  const graph::NodeId id = g.add_node(std::move(n));
  for (std::size_t i = 0; i < slots.size(); ++i) g.add_edge(i, id, i, slots[i].view);
  graph::validate(g);  // a UserError (a failure) for dtypes, shapes or axes that do not fit
  return graph::one_op_body(g, id);
}

}  // namespace

void add_kernel_primitives(engine::EGraph& egraph, const GraphSorts& s) {
  engine::PrimitiveTable& table = egraph.primitives();
  const engine::StringSort* str = s.string_sort.get();
  const ViewSort* vs = s.view_sort.get();
  const ShapeSort* sh = s.shape_sort.get();
  const BodySort* bs = s.body_sort.get();
  const std::optional<engine::SortId> f64 = egraph.find_sort("f64");
  KILN_ASSERT(f64.has_value(), "add_kernel_primitives: the builtin sorts are not registered");

  // The slots of a call: (view, dtype) pairs from argument `first` on; a UserError for a dtype
  // name that is not one.
  auto slots_of = [vs, str](const Value* a, std::size_t first, std::size_t count) {
    std::vector<Slot> slots;
    for (std::size_t i = first; i + 1 < count; i += 2) {
      const std::string& name = str->get(a[i + 1]);
      std::optional<DType> dtype = graph::parse_dtype(name);
      if (!dtype) throw support::UserError("'" + name + "' is not a dtype");
      slots.push_back(Slot{vs->get(a[i]), *dtype});
    }
    return slots;
  };
  auto add = [&](std::vector<engine::SortId> inputs, engine::PrimitiveFn fn) {
    table.add(engine::Primitive{"one-op-body", std::move(inputs), s.body, false, std::move(fn)});
  };

  // (one-op-body op dtype shape value): Constant (filled with value) and Iota (value ignored).
  add({s.string, s.string, s.shape, *f64},
      guarded([str, sh, bs](const Value* a, std::size_t, Value& r) {
        r = bs->make(build(str->get(a[0]), str->get(a[1]), {}, 0, sh->get(a[2]),
                           engine::F64Sort::get(a[3]), 0));
        return true;
      }));
  // (one-op-body op dtype axis view0 dtype0): the one-input ops; axis is read by SumReduce,
  // MaxReduce and Softmax only. A negative axis fails.
  add({s.string, s.string, s.i64, s.view, s.string},
      guarded([str, bs, slots_of](const Value* a, std::size_t n, Value& r) {
        const std::int64_t axis = I64Sort::get(a[2]);
        if (axis < 0) throw support::UserError("negative axis " + std::to_string(axis));
        r = bs->make(build(str->get(a[0]), str->get(a[1]), slots_of(a, 3, n),
                           static_cast<std::size_t>(axis), {}, 0.0, 1));
        return true;
      }));
  // (one-op-body op dtype view0 dtype0 view1 dtype1 [view2 dtype2]): two- and three-input ops.
  auto by_slots = guarded([str, bs, slots_of](const Value* a, std::size_t n, Value& r) {
    std::vector<Slot> slots = slots_of(a, 2, n);
    const std::size_t arity = slots.size();
    r = bs->make(build(str->get(a[0]), str->get(a[1]), std::move(slots), 0, {}, 0.0, arity));
    return true;
  });
  add({s.string, s.string, s.view, s.string, s.view, s.string}, by_slots);
  add({s.string, s.string, s.view, s.string, s.view, s.string, s.view, s.string}, by_slots);

  // (dtype-join a b): a when a and b are the same dtype name; fails otherwise (dtype_prop's
  // merge: a union of two e-classes of different dtypes is an error, never a silent choice).
  table.add(engine::Primitive{"dtype-join", {s.string, s.string}, s.string, false,
                              [str](const Value* a, std::size_t, Value& r) {
                                if (a[0] != a[1]) {  // interned: equal iff same
                                  engine::primitive_failure_reason() =
                                      "dtypes '" + str->get(a[0]) + "' and '" + str->get(a[1]) +
                                      "' differ";
                                  return false;
                                }
                                r = a[0];
                                return true;
                              }});

  // (shape-drop s d): s without dim d. (shape-merge s d): dims d and d+1 become their product.
  // With view-reshape they move views between ranks (matmul_flattening). A dim out of range
  // fails.
  table.add(engine::Primitive{"shape-drop", {s.shape, s.i64}, s.shape, false,
                              [sh](const Value* a, std::size_t, Value& r) {
                                Shape shape = sh->get(a[0]);
                                const std::int64_t d = I64Sort::get(a[1]);
                                if (d < 0 || static_cast<std::size_t>(d) >= shape.size()) {
                                  return fail_because("dim out of range for the shape");
                                }
                                shape.erase(shape.begin() + d);
                                r = sh->make(shape);
                                return true;
                              }});
  table.add(engine::Primitive{"shape-merge", {s.shape, s.i64}, s.shape, false,
                              guarded([sh](const Value* a, std::size_t, Value& r) {
                                Shape shape = sh->get(a[0]);
                                const std::int64_t d = I64Sort::get(a[1]);
                                if (d < 0 || static_cast<std::size_t>(d) + 1 >= shape.size()) {
                                  return fail_because("no dims d and d+1 in the shape");
                                }
                                shape[static_cast<std::size_t>(d)] =
                                    shape[static_cast<std::size_t>(d)] *
                                    shape[static_cast<std::size_t>(d) + 1];
                                shape.erase(shape.begin() + d + 1);
                                r = sh->make(shape);
                                return true;
                              })});

  // (view-has-mask v): true when the view reads padding somewhere (a library call cannot).
  const std::optional<engine::SortId> boolean = egraph.find_sort("bool");
  KILN_ASSERT(boolean.has_value(), "add_kernel_primitives: the builtin sorts are not registered");
  table.add(engine::Primitive{"view-has-mask", {s.view}, *boolean, false,
                              [vs](const Value* a, std::size_t, Value& r) {
                                r = engine::BoolSort::make(vs->get(a[0]).mask().has_value());
                                return true;
                              }});
}

}  // namespace kiln::compiler
