// The reference interpreter: one contiguous double buffer per node, inputs read through views;
// `interpret` keeps a buffer only while a later node reads it.
#include "graph/interpret.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>

#include "graph/memory_estimate.hpp"
#include "graph/quantized.hpp"
#include "support/diagnostic.hpp"

namespace kiln::graph {

using support::UserError;

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string node_label(const Graph& g, NodeId id) {
  return "%" + std::to_string(id) + " (" + std::string(op_name(g.node(id).op)) + ")";
}

[[noreturn]] void fail(const Graph& g, NodeId id, const std::string& message) {
  throw UserError("interpret: " + node_label(g, id) + ": " + message);
}

// Rounds `x` to `precision` significant bits, with `min_exp` the exponent of the smallest
// normal number (below it the spacing stays 2^(min_exp - precision + 1)) and magnitudes above
// `max_finite` after rounding becoming infinity. Ties go to even (the default rounding mode).
double round_float(double x, int precision, int min_exp, double max_finite) {
  if (!std::isfinite(x) || x == 0.0) return x;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e with 0.5 <= |m| < 1: the leading bit has exponent e - 1
  int quantum = std::max(e - 1, min_exp) - (precision - 1);
  double y = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  if (std::fabs(y) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), y);
  return y;
}

double saturate(double v, double lo, double hi) {
  if (std::isnan(v)) return 0.0;
  return std::clamp(std::trunc(v), lo, hi);
}

std::vector<std::int64_t> eval_shape(const std::vector<Expr>& shape, const DimValues& dims) {
  std::vector<std::int64_t> out;
  out.reserve(shape.size());
  for (const Expr& d : shape) out.push_back(evaluate(d, dims));
  return out;
}

// The elements of `src` seen through `view`, one at a time in row-major order of the view's
// shape: a coordinate outside the view's mask reads 0.
class ViewCursor {
 public:
  ViewCursor(const Graph& g, NodeId consumer, const std::vector<double>& src, const View& view,
             const DimValues& dims)
      : g_(g), consumer_(consumer), src_(src), view_(view),
        shape_(eval_shape(view.shape(), dims)), strides_(eval_shape(view.strides(), dims)),
        offset_(evaluate(view.offset(), dims)), lo_(view.rank(), 0), hi_(shape_),
        coord_(view.rank(), 0) {
    if (view.mask()) {
      for (std::size_t d = 0; d < view.rank(); ++d) {
        lo_[d] = evaluate((*view.mask())[d].lo, dims);
        hi_[d] = evaluate((*view.mask())[d].hi, dims);
      }
    }
  }

  double next() {
    bool valid = true;
    std::int64_t index = offset_;
    for (std::size_t d = 0; d < coord_.size(); ++d) {
      if (coord_[d] < lo_[d] || coord_[d] >= hi_[d]) valid = false;
      index += coord_[d] * strides_[d];
    }
    double v = 0.0;
    if (valid) {
      if (index < 0 || index >= static_cast<std::int64_t>(src_.size())) {
        fail(g_, consumer_, "view " + to_string(view_) + " reads position " +
                                std::to_string(index) + " of a buffer of " +
                                std::to_string(src_.size()) + " elements");
      }
      v = src_[static_cast<std::size_t>(index)];
    }
    for (std::size_t d = coord_.size(); d-- > 0;) {  // advance the row-major odometer
      if (++coord_[d] < shape_[d]) break;
      coord_[d] = 0;
    }
    return v;
  }

 private:
  const Graph& g_;
  NodeId consumer_;
  const std::vector<double>& src_;
  const View& view_;
  std::vector<std::int64_t> shape_, strides_;
  std::int64_t offset_;
  std::vector<std::int64_t> lo_, hi_, coord_;
};

// The elements of `src` seen through `view`, row-major in the view's shape.
std::vector<double> read_view(const Graph& g, NodeId consumer, const std::vector<double>& src,
                              const View& view, const DimValues& dims) {
  std::vector<double> out(static_cast<std::size_t>(numel(eval_shape(view.shape(), dims))));
  ViewCursor cursor(g, consumer, src, view, dims);
  for (double& v : out) v = cursor.next();
  return out;
}

double floor_mod(const Graph& g, NodeId id, double a, double b) {
  auto x = static_cast<std::int64_t>(a);
  auto y = static_cast<std::int64_t>(b);
  if (y == 0) fail(g, id, "integer modulus by zero");
  std::int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return static_cast<double>(r);
}

// The row index `v` checked against `rows`.
std::size_t row_index(const Graph& g, NodeId id, double v, std::int64_t rows) {
  if (v < 0.0 || v >= static_cast<double>(rows)) {
    fail(g, id, "index " + std::to_string(static_cast<std::int64_t>(v)) +
                    " is out of range for " + std::to_string(rows) + " rows");
  }
  return static_cast<std::size_t>(v);
}

}  // namespace

std::int64_t numel(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

double round_to_dtype(double v, DType t) {
  switch (t) {
    case DType::F64: return v;
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return round_float(v, 11, -14, 65504.0);
    case DType::BF16:
      return round_float(v, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127));
    case DType::I32: return saturate(v, -2147483648.0, 2147483647.0);
    // The largest double below 2^63, so that the result converts to int64 safely.
    case DType::I64: return saturate(v, -0x1p63, std::nextafter(0x1p63, 0.0));
    case DType::U8: return saturate(v, 0.0, 255.0);
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

namespace {

// Input node `id`'s value from `source`, checked against the node and rounded to its dtype.
std::vector<double> input_value(const Graph& g, NodeId id, const DimValues& dims,
                                const InputSource& source) {
  const Node& n = g.node(id);
  const std::vector<std::int64_t> shape = eval_shape(n.shape, dims);
  const auto count = static_cast<std::size_t>(numel(shape));
  Tensor t = source(id);
  if (t.dtype != n.dtype) {
    fail(g, id, "input \"" + n.name + "\" has dtype " + std::string(dtype_name(t.dtype)) +
                    ", expected " + std::string(dtype_name(n.dtype)));
  }
  if (t.shape != shape) {
    fail(g, id, "input \"" + n.name + "\" has shape " + shape_text(t.shape) +
                    ", expected " + shape_text(shape));
  }
  if (t.data.size() != count) {
    fail(g, id, "input \"" + n.name + "\" has " + std::to_string(t.data.size()) +
                    " values for shape " + shape_text(shape));
  }
  for (double& v : t.data) v = round_to_dtype(v, n.dtype);
  return std::move(t.data);
}

// Runs `g`. keep_all: every node's value stays in `values`; else a value is freed after its
// last reader (Outputs stay) and an Input is fetched when its first reader runs.
void run(const Graph& g, const DimValues& dims, const InputSource& source, bool keep_all,
         std::vector<std::vector<double>>& values, InterpretStats* stats,
         Rounding rounding = Rounding::ToDtype) {
  values.assign(g.size(), {});
  std::vector<std::size_t> readers(g.size(), 0);  // edges still to read each value
  for (NodeId id = 0; id < g.size(); ++id) {
    for (const Graph::Input& in : g.inputs(id)) ++readers[in.producer];
  }
  std::vector<bool> fetched(g.size(), false);
  std::int64_t live = 0, peak = 0;
  auto bytes = [](std::size_t elements) {
    return static_cast<std::int64_t>(elements) * kBytesPerHeldElement;
  };
  auto fetch = [&](NodeId id) {
    values[id] = input_value(g, id, dims, source);
    fetched[id] = true;
    live += bytes(values[id].size());
    peak = std::max(peak, live);
  };
  auto release = [&](NodeId id) {
    live -= bytes(values[id].size());
    std::vector<double>().swap(values[id]);
  };

  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Input) {
      if (keep_all || readers[id] == 0) fetch(id);
      continue;
    }
    std::vector<std::int64_t> shape = eval_shape(n.shape, dims);
    const auto count = static_cast<std::size_t>(numel(shape));
    std::vector<Graph::Input> ins = g.inputs(id);
    // Input i read through its view (a copy, or the producer's buffer itself: see
    // interpreter_copies_input), and that view's concrete shape. Elementwise ops read their
    // inputs through cursors instead, without a copy.
    std::vector<std::vector<double>> copies(ins.size());
    std::vector<const std::vector<double>*> in(ins.size());
    std::vector<std::vector<std::int64_t>> in_shape(ins.size());
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const NodeId p = ins[i].producer;
      if (g.node(p).op == Op::Input && !fetched[p]) fetch(p);
      in[i] = &values[p];
      if (interpreter_copies_input(g, id, ins[i])) {
        copies[i] = read_view(g, id, values[p], ins[i].edge->view, dims);
        in[i] = &copies[i];
        live += bytes(copies[i].size());
      }
      in_shape[i] = eval_shape(ins[i].edge->view.shape(), dims);
    }
    auto cursor = [&](std::size_t i) {
      return ViewCursor(g, id, values[ins[i].producer], ins[i].edge->view, dims);
    };
    std::vector<double> out(count, 0.0);
    live += bytes(count);
    peak = std::max(peak, live);

    switch (n.op) {
      case Op::Input: break;  // fetched above
      case Op::Constant: std::fill(out.begin(), out.end(), n.value); break;
      case Op::Iota:
        for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<double>(i);
        break;
      case Op::Output: case Op::Cast: case Op::Exp2: case Op::Log2: case Op::Sin:
      case Op::Recip: case Op::Sqrt: {
        ViewCursor a = cursor(0);
        for (double& v : out) {
          const double x = a.next();
          switch (n.op) {
            case Op::Exp2: v = std::exp2(x); break;
            case Op::Log2: v = std::log2(x); break;
            case Op::Sin: v = std::sin(x); break;
            case Op::Recip: v = 1.0 / x; break;
            case Op::Sqrt: v = std::sqrt(x); break;
            default: v = x; break;  // Output, Cast (rounded below)
          }
        }
        break;
      }
      case Op::Add: case Op::Mul: case Op::Mod: case Op::LessThan: {
        ViewCursor a = cursor(0), b = cursor(1);
        for (double& v : out) {
          const double x = a.next(), y = b.next();
          switch (n.op) {
            case Op::Add: v = x + y; break;
            case Op::Mul: v = x * y; break;
            case Op::Mod: v = is_float(n.dtype) ? std::fmod(x, y) : floor_mod(g, id, x, y); break;
            default: v = x < y ? 1.0 : 0.0; break;  // LessThan
          }
        }
        break;
      }
      case Op::SumReduce: case Op::MaxReduce: case Op::Softmax: {
        const std::vector<std::int64_t>& s = in_shape[0];
        std::size_t outer = 1, inner = 1;
        for (std::size_t d = 0; d < n.axis; ++d) outer *= static_cast<std::size_t>(s[d]);
        for (std::size_t d = n.axis + 1; d < s.size(); ++d) inner *= static_cast<std::size_t>(s[d]);
        const auto len = static_cast<std::size_t>(s[n.axis]);
        const std::vector<double>& x = *in[0];
        auto at = [&](std::size_t o, std::size_t k, std::size_t i) { return (o * len + k) * inner + i; };
        for (std::size_t o = 0; o < outer; ++o) {
          for (std::size_t i = 0; i < inner; ++i) {
            double sum = 0.0, m = -std::numeric_limits<double>::infinity();
            for (std::size_t k = 0; k < len; ++k) {
              double v = x[at(o, k, i)];
              sum += v;
              if (v > m || std::isnan(v)) m = std::isnan(m) ? m : v;
            }
            if (n.op == Op::SumReduce) {
              out[o * inner + i] = sum;
            } else if (n.op == Op::MaxReduce) {
              out[o * inner + i] = m;
            } else {
              double total = 0.0;
              for (std::size_t k = 0; k < len; ++k) total += std::exp(x[at(o, k, i)] - m);
              for (std::size_t k = 0; k < len; ++k) {
                out[at(o, k, i)] = std::exp(x[at(o, k, i)] - m) / total;
              }
            }
          }
        }
        break;
      }
      case Op::Gather: {
        const std::int64_t rows = in_shape[0][0];
        const std::size_t row_size = rows == 0 ? 0 : in[0]->size() / static_cast<std::size_t>(rows);
        for (std::size_t j = 0; j < in[1]->size(); ++j) {
          std::size_t r = row_index(g, id, (*in[1])[j], rows);
          std::copy_n(in[0]->begin() + static_cast<std::ptrdiff_t>(r * row_size), row_size,
                      out.begin() + static_cast<std::ptrdiff_t>(j * row_size));
        }
        break;
      }
      case Op::Scatter: {
        out = *in[0];
        const std::int64_t rows = in_shape[0][0];
        const std::size_t row_size = rows == 0 ? 0 : in[0]->size() / static_cast<std::size_t>(rows);
        for (std::size_t j = 0; j < in[1]->size(); ++j) {
          std::size_t r = row_index(g, id, (*in[1])[j], rows);
          std::copy_n(in[2]->begin() + static_cast<std::ptrdiff_t>(j * row_size), row_size,
                      out.begin() + static_cast<std::ptrdiff_t>(r * row_size));
        }
        break;
      }
      case Op::CustomOp: {
        const std::optional<QuantFormat> format = dequantize_op_format(n.name);
        if (!format || in.size() != 2 || shape.size() != 2) {
          fail(g, id, "CustomOp \"" + n.name + "\" is not supported by the interpreter");
        }
        out = dequantize_values(*format, *in[0], *in[1], shape[0], shape[1]);
        break;
      }
    }

    if (out.size() != count) {
      fail(g, id, "computed " + std::to_string(out.size()) + " values for shape " +
                      shape_text(shape));
    }
    if (rounding == Rounding::ToDtype || !is_float(n.dtype)) {
      for (double& v : out) v = round_to_dtype(v, n.dtype);
    }
    for (const std::vector<double>& x : copies) live -= bytes(x.size());
    values[id] = std::move(out);
    if (keep_all) continue;
    for (const Graph::Input& x : ins) {
      if (--readers[x.producer] == 0 && g.node(x.producer).op != Op::Output) release(x.producer);
    }
    if (readers[id] == 0 && n.op != Op::Output) release(id);
  }
  if (stats) stats->peak_bytes = peak;
}

InputSource from_map(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  return [&g, &inputs](NodeId id) {
    const Node& n = g.node(id);
    auto it = inputs.find(n.name);
    if (it == inputs.end()) fail(g, id, "missing input \"" + n.name + "\"");
    return it->second;
  };
}

}  // namespace

std::vector<std::vector<double>> interpret_all(const Graph& g, const DimValues& dims,
                                               const std::map<std::string, Tensor>& inputs,
                                               Rounding rounding) {
  validate(g);
  check_graph_memory(g, dims);
  std::vector<std::vector<double>> values;
  run(g, dims, from_map(g, inputs), /*keep_all=*/true, values, nullptr, rounding);
  return values;
}

std::map<std::string, Tensor> interpret(const Graph& g, const DimValues& dims,
                                        const InputSource& source, InterpretStats* stats) {
  validate(g);
  check_bytes_fit(interpreter_peak_bytes(g, dims), "the reference interpreter", dims);
  std::vector<std::vector<double>> values;
  run(g, dims, source, /*keep_all=*/false, values, stats);
  std::map<std::string, Tensor> outputs;
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op != Op::Output) continue;
    if (outputs.count(n.name) != 0) fail(g, id, "two outputs are named \"" + n.name + "\"");
    outputs[n.name] = Tensor{n.dtype, eval_shape(n.shape, dims), std::move(values[id])};
  }
  return outputs;
}

std::map<std::string, Tensor> interpret(const Graph& g, const DimValues& dims,
                                        const std::map<std::string, Tensor>& inputs) {
  return interpret(g, dims, from_map(g, inputs));
}

}  // namespace kiln::graph
