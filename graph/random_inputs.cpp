// Random graph inputs; see random_inputs.hpp.
#include "graph/random_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/memory_estimate.hpp"
#include "graph/native.hpp"
#include "support/diagnostic.hpp"
#include "support/hash.hpp"

namespace kiln::graph {

namespace {

// The exclusive upper bound for integer input `id`: the row count of a table it indexes.
std::int64_t index_bound(const Graph& g, NodeId id, const DimValues& dims) {
  for (NodeId user : g.users(id)) {
    const Node& u = g.node(user);
    if (u.op != Op::Gather && u.op != Op::Scatter) continue;
    std::vector<Graph::Input> ins = g.inputs(user);
    if (ins.size() > 1 && ins[1].producer == id) {
      return evaluate(ins[0].edge->view.shape()[0], dims);
    }
  }
  return 4;
}

// The shape of input `id` at `dims`.
std::vector<std::int64_t> input_shape(const Graph& g, NodeId id, const DimValues& dims) {
  std::vector<std::int64_t> shape;
  for (const Expr& d : g.node(id).shape) shape.push_back(evaluate(d, dims));
  return shape;
}

// The element count of input `id`, each element held in `bytes_per_element`; a UserError when
// they would not fit this machine's memory.
std::int64_t input_numel(const Graph& g, NodeId id, const DimValues& dims,
                         std::int64_t bytes_per_element) {
  return checked_numel(g.node(id).shape, dims, "input '" + g.node(id).name + "'",
                       bytes_per_element);
}

// Calls `put(i, value)` for the `count` elements i of input `id` of `shape`, in order, each
// drawn from `rng` (the rules in random_inputs.hpp) and already rounded to the input's dtype.
template <class Put>
void draw(const Graph& g, NodeId id, const DimValues& dims, const std::vector<std::int64_t>& shape,
          std::int64_t count, std::mt19937& rng, Put put) {
  const Node& n = g.node(id);
  if (is_float(n.dtype)) {
    const auto last = static_cast<double>(
        shape.empty() ? 1 : std::max<std::int64_t>(1, shape.back()));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (std::int64_t i = 0; i < count; ++i) {
      double v = 0.0;
      do v = round_to_dtype(dist(rng) / std::sqrt(last), n.dtype); while (v == 0.0);
      put(i, v);
    }
  } else {
    const std::int64_t bound = std::max<std::int64_t>(1, index_bound(g, id, dims));
    std::uniform_int_distribution<std::int64_t> dist(0, bound - 1);
    // Rounded too, so that a bool holds 0 or 1 as a device's byte does.
    for (std::int64_t i = 0; i < count; ++i) put(i, round_to_dtype(static_cast<double>(dist(rng)), n.dtype));
  }
}

Tensor draw_tensor(const Graph& g, NodeId id, const DimValues& dims, std::mt19937& rng) {
  Tensor t{g.node(id).dtype, input_shape(g, id, dims), {}};
  const std::int64_t count = input_numel(g, id, dims, kBytesPerHeldElement);
  t.data.resize(static_cast<std::size_t>(count));
  draw(g, id, dims, t.shape, count, rng,
       [&](std::int64_t i, double v) { t.data[static_cast<std::size_t>(i)] = v; });
  return t;
}

// The generator of random_input: seeded by `seed` and the input's name.
std::mt19937 input_generator(const Graph& g, NodeId id, unsigned seed) {
  KILN_ASSERT(g.node(id).op == Op::Input, "random_input: %" + std::to_string(id) + " is no input");
  std::seed_seq seeds{seed, static_cast<unsigned>(support::hash64(g.node(id).name))};
  return std::mt19937(seeds);
}

}  // namespace

std::map<std::string, Tensor> random_inputs(const Graph& g, const DimValues& dims, unsigned seed) {
  check_inputs_memory(g, dims);  // each may fit and all together not (a model's weights)
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> out;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == Op::Input) out[g.node(id).name] = draw_tensor(g, id, dims, rng);
  }
  return out;
}

Tensor random_input(const Graph& g, NodeId id, const DimValues& dims, unsigned seed) {
  std::mt19937 rng = input_generator(g, id, seed);
  return draw_tensor(g, id, dims, rng);
}

NativeTensor random_native_input(const Graph& g, NodeId id, const DimValues& dims,
                                 unsigned seed) {
  std::mt19937 rng = input_generator(g, id, seed);
  const DType dtype = g.node(id).dtype;
  const std::size_t size = dtype_size(dtype);
  std::vector<std::int64_t> shape = input_shape(g, id, dims);
  const std::int64_t count = input_numel(g, id, dims, static_cast<std::int64_t>(size));
  std::vector<std::byte> bytes(static_cast<std::size_t>(count) * size);
  draw(g, id, dims, shape, count, rng, [&](std::int64_t i, double v) {
    store_native(v, dtype, bytes.data() + static_cast<std::size_t>(i) * size);
  });
  return {dtype, std::move(shape), std::move(bytes)};
}

}  // namespace kiln::graph
