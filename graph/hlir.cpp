// The HLIR graph container, its validation and its two text forms.
#include "graph/hlir.hpp"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/graph/topological_sort.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>

#include "support/diagnostic.hpp"

namespace kiln::graph {

using support::UserError;

namespace {

std::string shape_text(const std::vector<Expr>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_string(shape[i]);
  }
  return out + "]";
}

std::string value_text(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string node_label(const Graph& g, NodeId id) {
  return "%" + std::to_string(id) + " (" + std::string(op_name(g.node(id).op)) + ")";
}

[[noreturn]] void fail(const Graph& g, NodeId id, const std::string& message) {
  throw UserError("HLIR node " + node_label(g, id) + ": " + message);
}

// The expected number of inputs, or -1 for any.
int arity(Op op) {
  switch (op) {
    case Op::Input: case Op::Constant: case Op::Iota: return 0;
    case Op::Output: case Op::Cast: case Op::Exp2: case Op::Log2: case Op::Sin: case Op::Recip:
    case Op::Sqrt: case Op::SumReduce: case Op::MaxReduce: case Op::Softmax: return 1;
    case Op::Add: case Op::Mul: case Op::Mod: case Op::LessThan: case Op::Gather: return 2;
    case Op::Scatter: return 3;
    case Op::CustomOp: return -1;
  }
  KILN_ASSERT(false, "unknown Op");
  return 0;
}

void expect_shape(const Graph& g, NodeId id, std::size_t slot, const std::vector<Expr>& got,
                  const std::vector<Expr>& want) {
  if (got != want) {
    fail(g, id, "input " + std::to_string(slot) + " is read with shape " + shape_text(got) +
                    " but the op needs " + shape_text(want));
  }
}

void expect_dtype(const Graph& g, NodeId id, const std::string& what, DType got, DType want) {
  if (got != want) {
    fail(g, id, what + " has dtype " + std::string(dtype_name(got)) + ", expected " +
                    std::string(dtype_name(want)));
  }
}

void validate_node(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  std::vector<Graph::Input> ins = g.inputs(id);
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].edge->slot != i) fail(g, id, "input slot " + std::to_string(i) + " is missing");
  }
  int want = arity(n.op);
  if (want >= 0 && ins.size() != static_cast<std::size_t>(want)) {
    fail(g, id, "takes " + std::to_string(want) + " input(s), got " + std::to_string(ins.size()));
  }
  auto in_shape = [&](std::size_t i) -> const std::vector<Expr>& {
    return ins[i].edge->view.shape();
  };
  auto in_dtype = [&](std::size_t i) { return g.node(ins[i].producer).dtype; };

  if ((n.op == Op::Input || n.op == Op::Output || n.op == Op::CustomOp) && n.name.empty()) {
    fail(g, id, "needs a name");
  }
  switch (n.op) {
    case Op::Input: case Op::Constant: case Op::Iota: case Op::CustomOp:
      break;
    case Op::Output:
    case Op::Cast: case Op::Exp2: case Op::Log2: case Op::Sin: case Op::Recip: case Op::Sqrt:
      expect_shape(g, id, 0, in_shape(0), n.shape);
      if (n.op != Op::Cast) expect_dtype(g, id, "the output", n.dtype, in_dtype(0));
      break;
    case Op::Add: case Op::Mul: case Op::Mod: case Op::LessThan:
      expect_dtype(g, id, "input 1", in_dtype(1), in_dtype(0));
      expect_dtype(g, id, "the output", n.dtype, n.op == Op::LessThan ? DType::Bool : in_dtype(0));
      expect_shape(g, id, 0, in_shape(0), n.shape);
      expect_shape(g, id, 1, in_shape(1), n.shape);
      break;
    case Op::SumReduce: case Op::MaxReduce: case Op::Softmax: {
      expect_dtype(g, id, "the output", n.dtype, in_dtype(0));
      const std::vector<Expr>& in = in_shape(0);
      if (n.axis >= in.size()) {
        fail(g, id, "axis " + std::to_string(n.axis) + " is out of range for input shape " +
                        shape_text(in));
      }
      std::vector<Expr> expected = in;
      if (n.op != Op::Softmax) {
        expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(n.axis));
      }
      if (n.shape != expected) {
        fail(g, id, "output shape " + shape_text(n.shape) + " does not match input shape " +
                        shape_text(in) + " along axis " + std::to_string(n.axis));
      }
      break;
    }
    case Op::Gather: case Op::Scatter: {
      constexpr std::size_t index_slot = 1;
      if (!is_integer(in_dtype(index_slot))) fail(g, id, "indices (input 1) must be integers");
      expect_dtype(g, id, "the output", n.dtype, in_dtype(0));
      const std::vector<Expr>& data = in_shape(0);
      if (data.empty()) fail(g, id, "input 0 must have at least one dim");
      std::vector<Expr> rows = in_shape(index_slot);
      rows.insert(rows.end(), data.begin() + 1, data.end());
      if (n.op == Op::Gather) {
        if (n.shape != rows) {
          fail(g, id, "output shape " + shape_text(n.shape) + " should be " + shape_text(rows));
        }
      } else {
        expect_dtype(g, id, "input 2", in_dtype(2), in_dtype(0));
        expect_shape(g, id, 2, in_shape(2), rows);
        expect_shape(g, id, 0, data, n.shape);
      }
      break;
    }
  }
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

// The literals of rules/hlir.egg: the View sort's `(view "...")`, a DType constructor, an f64.
std::string view_literal(const View& v) {
  return "(view " + quoted(to_string(v)) + ")";
}

std::string dtype_term(DType t) {
  switch (t) {
    case DType::F32: return "(F32)";
    case DType::F16: return "(F16)";
    case DType::BF16: return "(BF16)";
    case DType::F64: return "(F64)";
    case DType::I32: return "(I32)";
    case DType::I64: return "(I64)";
    case DType::Bool: return "(Bool)";
    case DType::U8: return "(U8)";
  }
  KILN_ASSERT(false, "unknown DType");
  return "";
}

// The shortest text that reads back as the same double, always an f64 token (`1.0`, not `1`).
std::string f64_literal(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  (void)ec;  // 64 bytes always suffice for a double
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Input: return "Input";
    case Op::Output: return "Output";
    case Op::Constant: return "Constant";
    case Op::Iota: return "Iota";
    case Op::Cast: return "Cast";
    case Op::Exp2: return "Exp2";
    case Op::Log2: return "Log2";
    case Op::Sin: return "Sin";
    case Op::Recip: return "Recip";
    case Op::Sqrt: return "Sqrt";
    case Op::Add: return "Add";
    case Op::Mul: return "Mul";
    case Op::Mod: return "Mod";
    case Op::LessThan: return "LessThan";
    case Op::SumReduce: return "SumReduce";
    case Op::MaxReduce: return "MaxReduce";
    case Op::Softmax: return "Softmax";
    case Op::Gather: return "Gather";
    case Op::Scatter: return "Scatter";
    case Op::CustomOp: return "CustomOp";
  }
  KILN_ASSERT(false, "unknown Op");
  return "";
}

NodeId Graph::add_node(Node node) { return boost::add_vertex(std::move(node), g_); }

void Graph::add_break() { breaks_.push_back(size()); }

std::size_t Graph::chunk_of(NodeId id) const {
  check_id(id, "node");
  return static_cast<std::size_t>(std::upper_bound(breaks_.begin(), breaks_.end(), id) -
                                  breaks_.begin());
}

void Graph::check_id(NodeId id, const char* what) const {
  if (id >= size()) {
    throw UserError(std::string("HLIR edge: ") + what + " %" + std::to_string(id) +
                    " does not exist (the graph has " + std::to_string(size()) + " nodes)");
  }
}

void Graph::add_edge(NodeId from, NodeId to, std::size_t slot, View view) {
  check_id(from, "producer");
  check_id(to, "consumer");
  for (const Input& in : inputs(to)) {
    if (in.edge->slot == slot) {
      throw UserError("HLIR edge %" + std::to_string(from) + " -> " + node_label(*this, to) +
                      ": input slot " + std::to_string(slot) + " is already taken by %" +
                      std::to_string(in.producer));
    }
  }
  if (reaches(to, from)) {
    throw UserError("HLIR edge %" + std::to_string(from) + " -> " + node_label(*this, to) +
                    " would create a cycle");
  }
  boost::add_edge(from, to, Edge{slot, std::move(view)}, g_);
}

const Node& Graph::node(NodeId id) const {
  KILN_ASSERT(id < size(), "HLIR node id out of range");
  return g_[id];
}

Node& Graph::node(NodeId id) {
  KILN_ASSERT(id < size(), "HLIR node id out of range");
  return g_[id];
}

std::vector<Graph::Input> Graph::inputs(NodeId id) const {
  KILN_ASSERT(id < size(), "HLIR node id out of range");
  std::vector<Input> out;
  for (auto [it, end] = boost::in_edges(id, g_); it != end; ++it) {
    out.push_back(Input{boost::source(*it, g_), &g_[*it]});
  }
  std::sort(out.begin(), out.end(),
            [](const Input& a, const Input& b) { return a.edge->slot < b.edge->slot; });
  return out;
}

std::vector<NodeId> Graph::users(NodeId id) const {
  KILN_ASSERT(id < size(), "HLIR node id out of range");
  std::vector<NodeId> out;
  for (auto [it, end] = boost::out_edges(id, g_); it != end; ++it) {
    out.push_back(boost::target(*it, g_));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<NodeId> Graph::topological_order() const {
  // A depth-first search over the reversed edges (consumer -> producer), with roots in id
  // order, finishes every node after its producers: its finish order is a topological order.
  std::vector<NodeId> order;
  order.reserve(size());
  auto reversed = boost::make_reverse_graph(g_);
  try {
    boost::topological_sort(reversed, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    KILN_ASSERT(false, "HLIR graph has a cycle; add_edge should have rejected it");
  }
  return order;
}

bool Graph::reaches(NodeId from, NodeId to) const {
  KILN_ASSERT(from < size() && to < size(), "HLIR node id out of range");
  std::vector<boost::default_color_type> colors(size(), boost::white_color);
  auto color_map =
      boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, g_));
  boost::breadth_first_search(g_, from, boost::color_map(color_map));
  return colors[to] != boost::white_color;
}

void validate(const Graph& g) {
  for (NodeId id : g.topological_order()) validate_node(g, id);
}

std::string to_text(const Graph& g) {
  std::ostringstream out;
  std::size_t chunk = 0;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (g.chunk_of(id) != chunk) {
      chunk = g.chunk_of(id);
      out << "-- chunk " << chunk << " --\n";
    }
    out << '%' << id << " = " << op_name(n.op) << ' ' << dtype_name(n.dtype) << ' '
        << shape_text(n.shape);
    std::vector<Graph::Input> ins = g.inputs(id);
    if (!ins.empty()) {
      out << " (";
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (i > 0) out << ", ";
        out << '%' << ins[i].producer;
        const View& v = ins[i].edge->view;
        if (v != View::contiguous(g.node(ins[i].producer).shape)) out << " as " << to_string(v);
      }
      out << ')';
    }
    if (!n.name.empty()) out << " name=" << quoted(n.name);
    if (n.op == Op::Constant) out << " value=" << value_text(n.value);
    if (n.op == Op::SumReduce || n.op == Op::MaxReduce || n.op == Op::Softmax) {
      out << " axis=" << n.axis;
    }
    if (n.persistent) out << " persistent";
    out << '\n';
  }
  return out.str();
}

std::string to_egglog(const Graph& g) {
  std::ostringstream out;
  std::vector<NodeId> persistent;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    std::vector<Graph::Input> ins = g.inputs(id);
    std::string args;
    for (const Graph::Input& in : ins) {
      args += " $t" + std::to_string(in.producer) + ' ' + view_literal(in.edge->view);
    }
    std::string dtype = dtype_term(n.dtype);
    std::string shape = "(shape " + quoted(shape_text(n.shape)) + ")";
    out << "(let $t" << id << " (" << op_name(n.op);
    switch (n.op) {
      case Op::Input: out << ' ' << quoted(n.name) << ' ' << dtype << ' ' << shape; break;
      case Op::Output: out << args << ' ' << quoted(n.name); break;
      case Op::Constant: out << ' ' << f64_literal(n.value) << ' ' << dtype << ' ' << shape; break;
      case Op::Iota: out << ' ' << dtype << ' ' << shape; break;
      case Op::Cast: out << args << ' ' << dtype; break;
      case Op::SumReduce: case Op::MaxReduce: case Op::Softmax: out << args << ' ' << n.axis; break;
      case Op::CustomOp: {
        out << ' ' << quoted(n.name) << ' ';
        for (const Graph::Input& in : ins) {
          out << "(HCons $t" << in.producer << ' ' << view_literal(in.edge->view) << ' ';
        }
        out << "(HNil)" << std::string(ins.size(), ')') << ' ' << dtype << ' ' << shape;
        break;
      }
      default: out << args; break;
    }
    out << "))\n";
    if (n.persistent) persistent.push_back(id);
  }
  for (NodeId id : persistent) out << "(Persistent $t" << id << ")\n";
  return out.str();
}

}  // namespace kiln::graph
