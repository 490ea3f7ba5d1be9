// Random graph inputs; see random_inputs.hpp.
#include "graph/random_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "graph/memory_estimate.hpp"
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

}  // namespace

namespace {

// Input `id`'s tensor, its elements drawn from `rng` (the rules in random_inputs.hpp).
Tensor draw(const Graph& g, NodeId id, const DimValues& dims, std::mt19937& rng) {
  const Node& n = g.node(id);
  Tensor t{n.dtype, {}, {}};
  for (const Expr& d : n.shape) t.shape.push_back(evaluate(d, dims));
  const std::int64_t count = checked_numel(n.shape, dims, "input '" + n.name + "'");
  t.data.resize(static_cast<std::size_t>(count));
  if (is_float(n.dtype)) {
    const auto last = static_cast<double>(
        t.shape.empty() ? 1 : std::max<std::int64_t>(1, t.shape.back()));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (double& v : t.data) {
      do v = round_to_dtype(dist(rng) / std::sqrt(last), n.dtype); while (v == 0.0);
    }
  } else {
    const std::int64_t bound = std::max<std::int64_t>(1, index_bound(g, id, dims));
    std::uniform_int_distribution<std::int64_t> dist(0, bound - 1);
    for (double& v : t.data) v = static_cast<double>(dist(rng));
  }
  return t;
}

}  // namespace

std::map<std::string, Tensor> random_inputs(const Graph& g, const DimValues& dims, unsigned seed) {
  check_inputs_memory(g, dims);  // each may fit and all together not (a model's weights)
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> out;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == Op::Input) out[g.node(id).name] = draw(g, id, dims, rng);
  }
  return out;
}

Tensor random_input(const Graph& g, NodeId id, const DimValues& dims, unsigned seed) {
  KILN_ASSERT(g.node(id).op == Op::Input, "random_input: %" + std::to_string(id) + " is no input");
  std::seed_seq seeds{seed, static_cast<unsigned>(support::hash64(g.node(id).name))};
  std::mt19937 rng(seeds);
  return draw(g, id, dims, rng);
}

}  // namespace kiln::graph
