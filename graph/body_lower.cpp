// One-op Bodies for HLIR nodes; see body_lower.hpp.
#include "graph/body_lower.hpp"

#include <numbers>
#include <string>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

using support::UserError;

[[noreturn]] void fail(const Graph& g, NodeId id, const std::string& message) {
  throw UserError("one-op body: %" + std::to_string(id) + " (" +
                  std::string(op_name(g.node(id).op)) + "): " + message);
}

std::vector<DType> input_dtypes(const Graph& g, const std::vector<Graph::Input>& ins) {
  std::vector<DType> out;
  for (const Graph::Input& in : ins) out.push_back(g.node(in.producer).dtype);
  return out;
}

// Loads input `slot` at `coords` of its view.
ScalarId load_at(BodyBuilder& b, const std::vector<Graph::Input>& ins, std::size_t slot,
                 const std::vector<Expr>& coords) {
  const View& view = ins[slot].edge->view;
  return b.load(slot, view.index(coords), view.valid(coords));
}

// e^x as 2^(x * log2 e), the HLIR's only exponential.
ScalarId exp_of(BodyBuilder& b, ScalarId x, DType dtype) {
  return b.unary(ScalarOp::Exp2, b.binary(ScalarOp::Mul, x, b.constant(std::numbers::log2e,
                                                                        dtype)));
}

}  // namespace

bool has_one_op_body(Op op) {
  return op != Op::Input && op != Op::CustomOp;
}

Body one_op_body(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!has_one_op_body(n.op)) fail(g, id, "has no kernel of its own");
  const std::vector<Graph::Input> ins = g.inputs(id);
  BodyBuilder b(input_dtypes(g, ins));
  const View out_view = View::contiguous(n.shape);
  const Expr size = out_view.numel();

  // Output coordinates; Softmax puts its axis loop innermost.
  std::vector<Expr> coords(n.shape.size());
  std::vector<std::size_t> order;
  for (std::size_t d = 0; d < n.shape.size(); ++d) {
    if (!(n.op == Op::Softmax && d == n.axis)) order.push_back(d);
  }
  if (n.op == Op::Softmax) order.push_back(n.axis);

  if (n.op == Op::Scatter) {
    // Loops over the values: index dims (serial), then row dims (parallel).
    const View& values = ins[2].edge->view;
    const View& dest = ins[0].edge->view;
    if (!dest.is_contiguous()) fail(g, id, "a destination read through a non-contiguous view");
    const std::size_t index_rank = ins[1].edge->view.rank();
    std::vector<Expr> vc;
    for (std::size_t d = 0; d < values.rank(); ++d) {
      vc.push_back(b.output_loop(values.shape()[d], d >= index_rank));
    }
    std::vector<Expr> index_coords(vc.begin(), vc.begin() + static_cast<std::ptrdiff_t>(index_rank));
    ScalarId row = load_at(b, ins, 1, index_coords);
    std::vector<Expr> dest_coords{Expr(0)};
    dest_coords.insert(dest_coords.end(), vc.begin() + static_cast<std::ptrdiff_t>(index_rank),
                       vc.end());
    return b.finish_rows(load_at(b, ins, 2, vc), size, out_view.index(dest_coords), row,
                         out_view.strides()[0], n.shape[0], 0);
  }

  for (std::size_t d : order) coords[d] = b.output_loop(n.shape[d]);
  const Expr store = out_view.index(coords);
  auto finish = [&](ScalarId value) { return b.finish(value, size, store); };

  switch (n.op) {
    case Op::Constant: return finish(b.constant(n.value, n.dtype));
    case Op::Iota: return finish(b.index(store, n.dtype));
    case Op::Output: return finish(load_at(b, ins, 0, coords));
    case Op::Cast: return finish(b.cast(load_at(b, ins, 0, coords), n.dtype));
    case Op::Exp2: return finish(b.unary(ScalarOp::Exp2, load_at(b, ins, 0, coords)));
    case Op::Log2: return finish(b.unary(ScalarOp::Log2, load_at(b, ins, 0, coords)));
    case Op::Sin: return finish(b.unary(ScalarOp::Sin, load_at(b, ins, 0, coords)));
    case Op::Recip: return finish(b.unary(ScalarOp::Recip, load_at(b, ins, 0, coords)));
    case Op::Sqrt: return finish(b.unary(ScalarOp::Sqrt, load_at(b, ins, 0, coords)));
    case Op::Add: case Op::Mul: case Op::Mod: {
      ScalarOp op = n.op == Op::Add ? ScalarOp::Add : n.op == Op::Mul ? ScalarOp::Mul
                                                                      : ScalarOp::Mod;
      return finish(b.binary(op, load_at(b, ins, 0, coords), load_at(b, ins, 1, coords)));
    }
    case Op::LessThan:
      return finish(b.less_than(load_at(b, ins, 0, coords), load_at(b, ins, 1, coords),
                                n.dtype));
    case Op::SumReduce: case Op::MaxReduce: {
      std::string r = b.reduce_var();
      std::vector<Expr> in_coords = coords;
      in_coords.insert(in_coords.begin() + static_cast<std::ptrdiff_t>(n.axis), Expr::dim(r));
      const Expr extent = ins[0].edge->view.shape()[n.axis];
      std::size_t monoid = n.op == Op::SumReduce ? b.sum_monoid(n.dtype) : b.max_monoid(n.dtype);
      return finish(b.reduce(monoid, r, extent, {load_at(b, ins, 0, in_coords)}, n.dtype));
    }
    case Op::Softmax: {
      const Expr extent = n.shape[n.axis];
      auto at = [&](const std::string& var) {
        std::vector<Expr> c = coords;
        c[n.axis] = Expr::dim(var);
        return load_at(b, ins, 0, c);
      };
      const ScalarId minus_one = b.constant(-1.0, n.dtype);
      std::string rm = b.reduce_var();
      ScalarId m = b.reduce(b.max_monoid(n.dtype), rm, extent, {at(rm)}, n.dtype);
      ScalarId neg_m = b.binary(ScalarOp::Mul, m, minus_one);
      std::string rs = b.reduce_var();
      ScalarId e = exp_of(b, b.binary(ScalarOp::Add, at(rs), neg_m), n.dtype);
      ScalarId total = b.reduce(b.sum_monoid(n.dtype), rs, extent, {e}, n.dtype);
      ScalarId mine = exp_of(b, b.binary(ScalarOp::Add, load_at(b, ins, 0, coords), neg_m),
                             n.dtype);
      return finish(b.binary(ScalarOp::Mul, mine, b.unary(ScalarOp::Recip, total)));
    }
    case Op::Gather: {
      const View& data = ins[0].edge->view;
      if (data.mask() && !((*data.mask())[0] == ValidRange{Expr(0), data.shape()[0]})) {
        fail(g, id, "a table padded along its rows");
      }
      const std::size_t index_rank = ins[1].edge->view.rank();
      std::vector<Expr> index_coords(coords.begin(),
                                     coords.begin() + static_cast<std::ptrdiff_t>(index_rank));
      ScalarId row = load_at(b, ins, 1, index_coords);
      std::vector<Expr> data_coords{Expr(0)};
      data_coords.insert(data_coords.end(),
                         coords.begin() + static_cast<std::ptrdiff_t>(index_rank), coords.end());
      return finish(b.load_row(0, data.index(data_coords), row, data.strides()[0],
                               data.shape()[0], data.valid(data_coords)));
    }
    default: break;
  }
  fail(g, id, "has no kernel of its own");
}

}  // namespace kiln::graph
