// The reference interpreter: runs any HLIR graph on the CPU, as the numerical truth that every
// later stage is checked against (DESIGN §1). It favours obviously-correct code over speed.
//
// Model. Every node's result is a row-major buffer of doubles of its output shape, with the
// symbolic dims bound from `dims`. interpret_all keeps every buffer (the compiler's checks read
// every node's value, at small dims). interpret keeps a buffer only until its last reader has
// run and asks for an Input's value only when its first reader runs, so a model's check holds
// one layer's values and the weights in use, not the whole graph's: a 4B-parameter decoder is
// checked in a few GiB when its weights come from an InputSource that makes them on demand
// (graph/random_inputs.hpp's random_input) rather than from a map that holds them all.
// Elementwise ops read their inputs through their views one element at a time and other ops
// read a contiguous view of a whole producer in place, so a broadcast operand is never copied
// out at its broadcast size. (Buffers stay doubles, one per node: each op computes in double
// and rounds to its dtype as before, so no value changes; what brings a model within memory is
// bounding what is alive at once.) A consumer reads each input through its edge's View: for
// every coordinate of the view shape, a coordinate outside the view's mask reads 0 (padding)
// and any other reads the producer's buffer at `offset + sum(coord[d] * stride[d])`.
// Reductions and softmax accumulate in double.
//
// Rounding. Every value a node stores is rounded to the node's dtype: f64 kept, f32 through a
// float cast, f16 and bf16 to their precision and range (round to nearest even, overflow to
// infinity, subnormals kept), integers truncated toward zero and saturated to the type's range
// (NaN becomes 0), bool to 0 or 1 (nonzero is 1).
//
// Semantics of the primops (shapes as in hlir.hpp):
//   Iota       each element is its row-major linear index.
//   Mod        floats: fmod (the result has the dividend's sign); integers: floor modulus (the
//              result has the divisor's sign, as Python's %); an integer modulus by 0 is a
//              UserError.
//   LessThan   1 where a < b, else 0 (false for NaN).
//   MaxReduce  the maximum; NaN if any element is NaN; -inf over an empty axis.
//   Softmax    exp(x - max) / sum(exp(x - max)) along the axis.
//   Gather     out[j, ...] = data[indices[j], ...]; an index outside [0, rows) is a UserError.
//   Scatter    dest with row indices[j] replaced by values[j, ...], in order of j (the last
//              write to a row wins); an index outside [0, rows) is a UserError.
//
// Errors (UserErrors): a graph that fails validate(), a missing or unbound dim, an input missing
// from `inputs` or given with the wrong dtype, shape or data size, a view reading outside its
// producer, two Outputs with one name, and a CustomOp other than dequantization
// (graph/quantized.hpp): "not supported by the interpreter".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/hlir.hpp"

namespace kiln::graph {

// A concrete tensor: row-major values (stored as double) of a shape and dtype.
struct Tensor {
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::vector<double> data;
};

// The product of `shape` (1 for a scalar).
std::int64_t numel(const std::vector<std::int64_t>& shape);

// `v` rounded to what `t` can hold (see "Rounding" above).
double round_to_dtype(double v, DType t);

// How an interpretation rounds: every value to its node's dtype (the reference), or float
// values not at all (computed in double; integers and bools still round as their dtype says).
// The difference between the two is how far the reference's own roundings move a value.
enum class Rounding { ToDtype, FloatsInDouble };

// The value of every node (by node id, row-major in the node's shape) when `g` runs with its
// dims bound by `dims` and its Input nodes fed from `inputs` (by name).
std::vector<std::vector<double>> interpret_all(const Graph& g, const DimValues& dims,
                                               const std::map<std::string, Tensor>& inputs,
                                               Rounding rounding = Rounding::ToDtype);

// An Input node's value, asked for once, when the first node that reads it runs.
using InputSource = std::function<Tensor(NodeId)>;

struct InterpretStats {
  // The most bytes of buffers alive at once: the values kept for later readers, plus the
  // running node's output and the copies of its inputs read through their views
  // (graph/memory_estimate.hpp: interpreter_copies_input says which; interpreter_peak_bytes
  // predicts this number).
  std::int64_t peak_bytes = 0;
};

// Runs `g`, freeing each value after its last reader; returns the value of every Output node,
// by name. A UserError when the peak would not fit this machine's memory.
std::map<std::string, Tensor> interpret(const Graph& g, const DimValues& dims,
                                        const InputSource& source,
                                        InterpretStats* stats = nullptr);
// The same with every Input fed from `inputs` (by name).
std::map<std::string, Tensor> interpret(const Graph& g, const DimValues& dims,
                                        const std::map<std::string, Tensor>& inputs);

}  // namespace kiln::graph
