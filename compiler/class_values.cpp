// Reference values of e-classes; see class_values.hpp.
#include "compiler/class_values.hpp"

#include <algorithm>
#include <sstream>

#include "engine/builtins.hpp"
#include "graph/compare.hpp"
#include "graph/hlir.hpp"
#include "graph/memory_estimate.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

using engine::ENode;
using engine::Value;
using graph::Op;

namespace {

std::optional<Op> op_named(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(Op::CustomOp); ++i) {
    if (graph::op_name(static_cast<Op>(i)) == name) return static_cast<Op>(i);
  }
  return std::nullopt;
}

// An HLIR e-node's layout in rules/hlir.egg: how many (term, view) input pairs come first.
std::size_t input_pairs(Op op) {
  switch (op) {
    case Op::Input: case Op::Constant: case Op::Iota: case Op::CustomOp: return 0;
    case Op::Add: case Op::Mul: case Op::Mod: case Op::LessThan: case Op::Gather: return 2;
    case Op::Scatter: return 3;
    default: return 1;
  }
}

}  // namespace

std::int64_t reference_memory_limit() {
  return std::min<std::int64_t>(std::int64_t{4} << 30, graph::physical_memory_bytes() / 4);
}

void check_reference_fits(const graph::Graph& g, const graph::DimValues& dims) {
  // The inputs are held twice: as random tensors, and as the interpreter's node values.
  graph::check_inputs_memory(g, dims, reference_memory_limit() / 2);
  graph::check_graph_memory(g, dims, reference_memory_limit());
}

graph::DimValues check_dims_of(const graph::DimValues& dims, std::int64_t cap) {
  graph::DimValues out;
  for (const auto& [name, value] : dims) out[name] = std::min(value, cap);
  return out;
}

ClassValues::ClassValues(const EGraphView& view, graph::DimValues check_dims)
    : view_(view), dims_(std::move(check_dims)) {}

void ClassValues::set(Value eclass, ClassValue value) {
  const Value c = view_.find(eclass);
  values_[c] = std::move(value);
  pinned_.insert(c);
}

const ClassValue* ClassValues::get(Value eclass) {
  const Value c = view_.find(eclass);
  if (auto it = values_.find(c); it != values_.end()) return it->second ? &*it->second : nullptr;
  if (!visiting_.insert(c).second) {
    hit_cycle_ = true;
    return nullptr;
  }
  const bool outer = visiting_.size() == 1;
  if (outer) hit_cycle_ = false;
  std::optional<ClassValue> found;
  std::string why;
  for (const ENode& node : view_.nodes(c)) {
    Evaluated e = evaluate(node);
    if (e.value) {
      found = std::move(e.value);
      break;
    }
    if (why.empty()) why = describe(node) + ": " + e.why;
  }
  visiting_.erase(c);
  // A class that failed only because a cycle cut a path may succeed from another start.
  if (!found && hit_cycle_ && !outer) return nullptr;
  if (!found) why_missing_[c] = why.empty() ? "it has no e-nodes" : why;
  auto& slot = values_[c];
  slot = std::move(found);
  return slot ? &*slot : nullptr;
}

std::string ClassValues::why_missing(Value eclass) const {
  auto it = why_missing_.find(view_.find(eclass));
  return it == why_missing_.end() ? std::string() : it->second;
}

std::optional<ClassValue> ClassValues::other_than(Value eclass, const ENode& node) {
  const Value c = view_.find(eclass);
  if (pinned_.count(c)) return *get(c);
  // Cached values may come from `node` itself, so evaluate the other e-nodes afresh.
  for (const ENode& other : view_.nodes(c)) {
    if (other.function == node.function && other.row == node.row) continue;
    Evaluated e = evaluate(other);
    if (e.value) return e.value;
  }
  return std::nullopt;
}

ClassValues::Evaluated ClassValues::evaluate(const ENode& node) {
  Evaluated out;
  const std::string& name = view_.name(node);
  const Value* row = view_.row(node);
  const GraphSorts& s = view_.sorts();
  if (name == "ConsumedBuffer") {  // the buffer itself
    if (const ClassValue* v = get(row[0])) out.value = *v;
    else out.why = "its buffer has no value";
    return out;
  }
  if (name == "Kernel") return evaluate_kernel(node);
  const bool no_copy = name == "ScatterNoCopy";  // computes what Scatter does, in place
  std::optional<Op> op = no_copy ? std::optional<Op>(Op::Scatter) : op_named(name);
  if (!op || *op == Op::Input || *op == Op::CustomOp) {
    out.why = "no interpreter semantics for " + name;
    return out;
  }
  graph::Graph g;
  std::map<std::string, graph::Tensor> feeds;
  std::vector<graph::View> views;
  std::vector<graph::NodeId> producers;
  std::vector<const ClassValue*> ins;
  for (std::size_t i = 0; i < input_pairs(*op); ++i) {
    const ClassValue* v = get(row[2 * i]);
    if (!v) {
      out.why = "input " + std::to_string(i) + " (c" + std::to_string(view_.find(row[2 * i])) +
                ") has no value";
      return out;
    }
    ins.push_back(v);
    views.push_back(s.view_sort->get(row[2 * i + 1]));
    graph::Node in;
    in.op = Op::Input;
    in.dtype = v->dtype;
    in.shape = v->shape;
    in.name = "in" + std::to_string(i);
    producers.push_back(g.add_node(in));
    graph::Tensor t;
    t.dtype = v->dtype;
    for (const graph::Expr& d : v->shape) t.shape.push_back(graph::evaluate(d, dims_));
    t.data = v->data;
    feeds[in.name] = std::move(t);
  }
  graph::Node n;
  n.op = *op;
  const std::size_t after = 2 * input_pairs(*op);  // the attributes
  switch (*op) {
    case Op::Output:
      n.dtype = ins[0]->dtype;
      n.shape = views[0].shape();
      n.name = s.string_sort->get(row[after]);
      break;
    case Op::Constant:
      n.value = engine::F64Sort::get(row[0]);
      n.shape = s.shape_sort->get(row[2]);
      if (auto d = view_.dtype(row[1])) n.dtype = *d; else out.why = "an unknown dtype";
      break;
    case Op::Iota:
      n.shape = s.shape_sort->get(row[1]);
      if (auto d = view_.dtype(row[0])) n.dtype = *d; else out.why = "an unknown dtype";
      break;
    case Op::Cast:
      n.shape = views[0].shape();
      if (auto d = view_.dtype(row[after])) n.dtype = *d; else out.why = "an unknown dtype";
      break;
    case Op::LessThan:
      n.dtype = graph::DType::Bool;
      n.shape = views[0].shape();
      break;
    case Op::SumReduce: case Op::MaxReduce: case Op::Softmax: {
      const std::int64_t axis = engine::I64Sort::get(row[after]);
      n.dtype = ins[0]->dtype;
      n.shape = views[0].shape();
      if (axis < 0 || static_cast<std::size_t>(axis) >= n.shape.size()) {
        out.why = "axis " + std::to_string(axis) + " out of range";
        return out;
      }
      n.axis = static_cast<std::size_t>(axis);
      if (*op != Op::Softmax) n.shape.erase(n.shape.begin() + axis);
      break;
    }
    case Op::Gather: {
      n.dtype = ins[0]->dtype;
      n.shape = views[1].shape();
      const auto& data = views[0].shape();
      if (!data.empty()) n.shape.insert(n.shape.end(), data.begin() + 1, data.end());
      break;
    }
    default:  // elementwise, Scatter: the first input's view shape and dtype
      n.dtype = ins[0]->dtype;
      n.shape = views[0].shape();
      break;
  }
  if (!out.why.empty()) return out;
  try {
    const graph::NodeId id = g.add_node(n);
    for (std::size_t i = 0; i < producers.size(); ++i) g.add_edge(producers[i], id, i, views[i]);
    std::vector<std::vector<double>> values = graph::interpret_all(g, dims_, feeds);
    out.value = ClassValue{n.dtype, n.shape, std::move(values[id]), describe(node)};
  } catch (const support::UserError& e) {
    out.why = e.what();
  }
  return out;
}

std::int64_t ClassValues::upstream_reduction(const std::vector<Value>& inputs) {
  std::int64_t longest = 1;
  for (Value v : inputs) {
    if (const ClassValue* value = get(v)) longest = std::max(longest, value->reduction_length);
  }
  return longest;
}

ClassValues::Evaluated ClassValues::evaluate_kernel(const ENode& node) {
  Evaluated out;
  const Value c = view_.eclass(node);
  for (const ENode& other : view_.nodes(c)) {
    if (!view_.is(other, "Kernel")) {
      out.why = "a Kernel is checked against its e-class's HLIR value, not a value itself";
      return out;
    }
  }
  const Value* row = view_.row(node);
  const graph::Body& body = view_.sorts().body_sort->get(row[0]);
  std::vector<const std::vector<double>*> ins;
  for (Value in : view_.list(row[1])) {
    const ClassValue* v = get(in);
    if (!v) {
      out.why = "input " + std::to_string(ins.size()) + " (c" + std::to_string(view_.find(in)) +
                ") has no value";
      return out;
    }
    ins.push_back(&v->data);
  }
  try {
    if (ins.size() != body.inputs().size() || body.output_aliases()) {
      out.why = "the Kernel's inputs do not fit its Body";
      return out;
    }
    std::vector<double> data(static_cast<std::size_t>(graph::evaluate(body.output_size(), dims_)));
    graph::interpret_body(body, ins, dims_, data);
    out.value = ClassValue{body.dtype(), {body.output_size()}, std::move(data), describe(node),
                           graph::reduction_length(body, dims_)};
  } catch (const support::UserError& e) {
    out.why = e.what();
  }
  return out;
}

std::string ClassValues::describe(const ENode& node) const {
  std::ostringstream out;
  out << '(' << view_.name(node);
  const engine::FunctionDecl& decl = view_.egraph().function(node.function);
  const Value* row = view_.row(node);
  if (view_.is(node, "Kernel")) {  // (Kernel (body "kiln_...") c3 c7): the body and its inputs
    out << ' ' << view_.sorts().body_sort->print(row[0]);
    for (Value in : view_.list(row[1])) out << " c" << view_.find(in);
  }
  for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
    if (decl.inputs[i] == view_.hlir_sort()) out << " c" << view_.find(row[i]);
  }
  out << ')';
  return out.str();
}

}  // namespace kiln::compiler
