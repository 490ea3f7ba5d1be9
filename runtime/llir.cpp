// LLIR storage, metadata and text form; see llir.hpp.
#include "runtime/llir.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "support/diagnostic.hpp"

namespace kiln::runtime {

using graph::Expr;
using support::UserError;

namespace {

Expr bytes_of(const Expr& elements, graph::DType dtype) {
  return elements * Expr(static_cast<std::int64_t>(graph::dtype_size(dtype)));
}

bool is_arithmetic(graph::ScalarOp op) {
  using graph::ScalarOp;
  switch (op) {
    case ScalarOp::Const:
    case ScalarOp::Param:
    case ScalarOp::Index:
    case ScalarOp::Load:
    case ScalarOp::Cast:
    case ScalarOp::Reduce: return false;
    default: return true;
  }
}

// Counts the arithmetic nodes of a Body, each weighted by the iterations around its first use.
class FlopCounter {
 public:
  explicit FlopCounter(const graph::Body& body) : body_(body) {}

  Expr count() {
    Expr iterations(1);
    for (const graph::Loop& loop : body_.loops()) iterations = iterations * loop.extent;
    visit(body_.value(), iterations);
    if (body_.store_row()) visit(*body_.store_row(), iterations);
    return total_;
  }

 private:
  void visit(graph::ScalarId id, const Expr& iterations) {
    if (!seen_.insert(id).second) return;
    const graph::Scalar& s = body_.scalar(id);
    if (s.op == graph::ScalarOp::Reduce) {
      const Expr inner = iterations * s.extent;
      for (graph::ScalarId arg : s.args) visit(arg, inner);
      const graph::Monoid& m = body_.monoids().at(s.slot);
      // The monoid's own nodes are counted afresh for each reduction that uses it.
      std::set<graph::ScalarId> own;
      for (graph::ScalarId lift : m.lift) count_tree(lift, inner, own);
      for (graph::ScalarId combine : m.combine) count_tree(combine, inner, own);
      std::set<graph::ScalarId> fin;
      count_tree(m.finalize, iterations, fin);
      return;
    }
    if (is_arithmetic(s.op)) total_ = total_ + iterations;
    for (graph::ScalarId arg : s.args) visit(arg, iterations);
  }

  void count_tree(graph::ScalarId id, const Expr& iterations, std::set<graph::ScalarId>& seen) {
    if (!seen.insert(id).second) return;
    const graph::Scalar& s = body_.scalar(id);
    if (is_arithmetic(s.op)) total_ = total_ + iterations;
    for (graph::ScalarId arg : s.args) count_tree(arg, iterations, seen);
  }

  const graph::Body& body_;
  std::set<graph::ScalarId> seen_;
  Expr total_;
};

Expr call_flops(const LibraryCall& call) {
  if (call.op.rfind("gemm", 0) != 0) return Expr(0);  // "gemm" and "gemm-<format>"
  auto param = [&](const char* name) {
    auto it = call.params.find(name);
    return it == call.params.end() ? Expr(1) : it->second;
  };
  return Expr(2) * param("batch") * param("m") * param("n") * param("k");
}

}  // namespace

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Input: return "input";
    case ValueKind::State: return "state";
    case ValueKind::Temporary: return "temp";
  }
  return "?";
}

Expr shape_size(const std::vector<Expr>& shape) {
  Expr size(1);
  for (const Expr& d : shape) size = size * d;
  return size;
}

Expr body_flops(const graph::Body& body) { return FlopCounter(body).count(); }

ValueId Llir::add_input(const std::string& name, graph::DType dtype, std::vector<Expr> shape,
                        bool persistent) {
  if (find_input(name)) throw UserError("LLIR: two inputs called '" + name + "'");
  Value v;
  v.kind = persistent ? ValueKind::State : ValueKind::Input;
  v.name = name;
  v.dtype = dtype;
  v.size = shape_size(shape);
  v.shape = std::move(shape);
  values_.push_back(std::move(v));
  return values_.size() - 1;
}

ValueId Llir::add_step(Step step, graph::DType dtype, std::vector<Expr> shape) {
  for (ValueId in : step.inputs) KILN_ASSERT(in < values_.size(), "LLIR: unknown input value");
  const StepId id = boost::add_vertex(g_);
  Value v;
  v.dtype = dtype;
  v.size = shape_size(shape);
  v.shape = std::move(shape);
  v.producer = id;
  values_.push_back(std::move(v));
  const ValueId out = values_.size() - 1;

  Expr read(0);
  for (std::size_t slot = 0; slot < step.inputs.size(); ++slot) {
    const Value& in = values_[step.inputs[slot]];
    read = read + bytes_of(in.size, in.dtype);
    if (in.producer) boost::add_edge(*in.producer, id, StepEdge{slot}, g_);
  }
  step.output = out;
  step.output_size = values_[out].size;
  step.bytes_read = read;
  step.bytes_written = bytes_of(values_[out].size, dtype);
  g_[id] = std::move(step);
  return out;
}

ValueId Llir::add_kernel(graph::Body body, std::vector<ValueId> inputs, std::vector<Expr> shape,
                         std::string label, bool in_place) {
  KILN_ASSERT(body.inputs().size() == inputs.size(), "LLIR: kernel input count mismatch");
  KILN_ASSERT(body.output_size() == shape_size(shape), "LLIR: kernel output size mismatch");
  for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
    KILN_ASSERT(inputs[slot] < values_.size() && values_[inputs[slot]].dtype == body.inputs()[slot],
                "LLIR: kernel input dtype mismatch");
  }
  Step step;
  step.inputs = std::move(inputs);
  step.label = std::move(label);
  step.flops = body_flops(body);
  step.alias = body.output_aliases();
  KILN_ASSERT(!in_place || step.alias, "LLIR: an in-place kernel needs an output alias");
  step.in_place = in_place;
  const graph::DType dtype = body.dtype();
  step.op = std::move(body);
  return add_step(std::move(step), dtype, std::move(shape));
}

ValueId Llir::add_call(LibraryCall call, std::vector<ValueId> inputs, graph::DType dtype,
                       std::vector<Expr> shape, std::string label) {
  Step step;
  step.inputs = std::move(inputs);
  step.label = std::move(label);
  step.flops = call_flops(call);
  step.op = std::move(call);
  return add_step(std::move(step), dtype, std::move(shape));
}

void Llir::add_output(const std::string& name, ValueId value) {
  KILN_ASSERT(value < values_.size(), "LLIR: unknown output value");
  for (const Output& o : outputs_) {
    if (o.name == name) throw UserError("LLIR: two outputs called '" + name + "'");
  }
  outputs_.push_back(Output{name, value});
}

const Step& Llir::step(StepId id) const {
  KILN_ASSERT(id < num_steps(), "LLIR: unknown step");
  return g_[id];
}

const Value& Llir::value(ValueId id) const {
  KILN_ASSERT(id < values_.size(), "LLIR: unknown value");
  return values_[id];
}

std::vector<StepId> Llir::users(StepId id) const {
  std::vector<StepId> out;
  for (auto [e, end] = boost::out_edges(id, g_); e != end; ++e) {
    out.push_back(boost::target(*e, g_));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<ValueId> Llir::find_input(const std::string& name) const {
  for (ValueId id = 0; id < values_.size(); ++id) {
    if (values_[id].kind != ValueKind::Temporary && values_[id].name == name) return id;
  }
  return std::nullopt;
}

std::string to_text(const Llir& llir, bool include_bodies) {
  std::ostringstream out;
  auto shape_text = [](const std::vector<Expr>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i) s += ", ";
      s += graph::to_string(shape[i]);
    }
    return s + "]";
  };
  for (ValueId id = 0; id < llir.num_values(); ++id) {
    const Value& v = llir.value(id);
    out << "%" << id << " = ";
    if (!v.producer) {
      out << value_kind_name(v.kind) << " " << v.name << " " << graph::dtype_name(v.dtype) << " "
          << shape_text(v.shape) << "\n";
      continue;
    }
    const Step& s = llir.step(*v.producer);
    if (s.body()) {
      out << "kernel";
    } else {
      out << "call " << s.call()->op;
    }
    out << " " << graph::dtype_name(v.dtype) << " " << shape_text(v.shape) << " (";
    for (std::size_t slot = 0; slot < s.inputs.size(); ++slot) {
      out << (slot ? ", " : "") << "%" << s.inputs[slot];
    }
    out << ") \"" << s.label << "\" size=" << graph::to_string(s.output_size)
        << " read=" << graph::to_string(s.bytes_read)
        << " written=" << graph::to_string(s.bytes_written)
        << " flops=" << graph::to_string(s.flops);
    if (s.alias) out << " alias=" << *s.alias;
    if (s.in_place) out << " in_place";
    if (const LibraryCall* call = s.call()) {
      for (const auto& [name, value] : call->params) {
        out << " " << name << "=" << graph::to_string(value);
      }
    }
    out << "\n";
    if (include_bodies && s.body()) {
      std::istringstream body(to_text(*s.body()));
      for (std::string line; std::getline(body, line);) out << "    " << line << "\n";
    }
  }
  for (const Output& o : llir.outputs()) out << "output " << o.name << " = %" << o.value << "\n";
  return out.str();
}

}  // namespace kiln::runtime
