// Memory estimates before allocating; see memory_estimate.hpp.
#include "graph/memory_estimate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "support/diagnostic.hpp"

namespace kiln::graph {

namespace {

constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();

// a * b, or kSaturated when it does not fit (both are >= 0).
std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}

// Elements of `shape` at `dims`, saturating at kSaturated.
std::int64_t saturating_numel(const std::vector<Expr>& shape, const DimValues& dims) {
  std::int64_t count = 1;
  for (const Expr& d : shape) count = saturating_mul(count, evaluate(d, dims));
  return count;
}

std::string bytes_text(std::int64_t bytes) {
  if (bytes == kSaturated) return "more than 2^63 bytes";
  const double gib = static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f GiB", gib);
  return std::to_string(bytes) + " bytes (" + buffer + ")";
}

// "[batch, 512]", and " with batch=100000000000" for the dims it mentions.
std::string shape_with_dims(const std::vector<Expr>& shape, const DimValues& dims) {
  std::string text = "[";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    text += (i ? ", " : "") + to_string(shape[i]);
    for (const std::string& name : free_dims(shape[i])) {
      bool seen = false;
      for (const std::string& n : names) seen = seen || n == name;
      if (!seen) names.push_back(name);
    }
  }
  text += "]";
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto value = dims.find(names[i]);
    text += (i ? ", " : " with dim ") + names[i] + "=" +
            (value == dims.end() ? std::string("?") : std::to_string(value->second));
  }
  return text;
}

std::string node_what(const Node& n, NodeId id) {
  if (n.op == Op::Input) return "input '" + n.name + "'";
  return "%" + std::to_string(id) + " (" + std::string(op_name(n.op)) + ")";
}

}  // namespace

std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  // Unknown: do not refuse anything that can be counted.
  if (pages <= 0 || page_size <= 0) return kSaturated;
  return saturating_mul(pages, page_size);
}

std::int64_t checked_numel(const std::vector<Expr>& shape, const DimValues& dims,
                           const std::string& what, std::int64_t bytes_per_element,
                           std::int64_t limit) {
  const std::int64_t count = saturating_numel(shape, dims);
  const std::int64_t bytes = saturating_mul(count, bytes_per_element);
  if (bytes > limit) {
    throw support::UserError(what + " " + shape_with_dims(shape, dims) + " needs " +
                             bytes_text(bytes) + ", more than the " + bytes_text(limit) +
                             " of memory here; choose smaller dims");
  }
  return count;
}

void check_bytes_fit(std::int64_t bytes, const std::string& what, const DimValues& dims,
                     std::int64_t limit) {
  if (bytes <= limit) return;
  std::string with;
  for (const auto& [name, value] : dims) {
    with += (with.empty() ? " with dim " : ", ") + name + "=" + std::to_string(value);
  }
  throw support::UserError(what + with + " needs " + bytes_text(bytes) + ", more than the " +
                           bytes_text(limit) + " of memory here; choose smaller dims");
}

namespace {

std::int64_t held_element_bytes(const Node&) { return kBytesPerHeldElement; }

// Throws when the nodes of `g` that `counted` accepts, each element in `element_bytes(node)`,
// need more than `limit` bytes together; `whose` names them in the message.
template <class Counted, class ElementBytes>
void check_nodes_memory(const Graph& g, const DimValues& dims, std::int64_t limit,
                        const std::string& whose, Counted counted, ElementBytes element_bytes) {
  std::int64_t total = 0;
  NodeId largest = 0;
  std::int64_t largest_bytes = -1;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (!counted(g.node(id))) continue;
    const std::int64_t bytes =
        saturating_mul(saturating_numel(g.node(id).shape, dims), element_bytes(g.node(id)));
    total = saturating_add(total, bytes);
    if (bytes > largest_bytes) {
      largest_bytes = bytes;
      largest = id;
    }
  }
  if (total <= limit) return;
  const Node& n = g.node(largest);
  const std::string shape = shape_with_dims(n.shape, dims);
  const bool symbolic = shape.find(" with dim ") != std::string::npos;
  throw support::UserError(whose + " need " + bytes_text(total) + ", more than the " +
                           bytes_text(limit) + " of memory here; the largest is " +
                           node_what(n, largest) + " " + shape + " with " +
                           bytes_text(largest_bytes) +
                           (symbolic ? "; choose smaller dims" : "; the model is too large"));
}

}  // namespace

void check_graph_memory(const Graph& g, const DimValues& dims, std::int64_t limit) {
  check_nodes_memory(g, dims, limit, "the reference interpreter's values",
                     [](const Node&) { return true; }, held_element_bytes);
}

bool interpreter_copies_input(const Graph& g, NodeId consumer, const Graph::Input& in) {
  switch (g.node(consumer).op) {
    case Op::Output: case Op::Cast: case Op::Exp2: case Op::Log2: case Op::Sin: case Op::Recip:
    case Op::Sqrt: case Op::Add: case Op::Mul: case Op::Mod: case Op::LessThan:
      return false;
    default:
      return !(in.edge->view == View::contiguous(g.node(in.producer).shape));
  }
}

std::int64_t interpreter_peak_bytes(const Graph& g, const DimValues& dims) {
  // The interpreter's schedule (graph/interpret.cpp), counting bytes instead of computing.
  std::vector<std::size_t> readers(g.size(), 0);
  for (NodeId id = 0; id < g.size(); ++id) {
    for (const Graph::Input& in : g.inputs(id)) ++readers[in.producer];
  }
  auto bytes = [&](const std::vector<Expr>& shape) {
    return saturating_mul(saturating_numel(shape, dims), kBytesPerHeldElement);
  };
  std::vector<std::int64_t> held(g.size(), 0);
  std::vector<bool> fetched(g.size(), false);
  std::int64_t live = 0, peak = 0;
  auto fetch = [&](NodeId id) {
    held[id] = bytes(g.node(id).shape);
    fetched[id] = true;
    live = saturating_add(live, held[id]);
    peak = std::max(peak, live);
  };
  for (NodeId id : g.topological_order()) {
    const Node& n = g.node(id);
    if (n.op == Op::Input) {
      if (readers[id] == 0) fetch(id);
      continue;
    }
    const std::vector<Graph::Input> ins = g.inputs(id);
    std::int64_t reads = 0;
    for (const Graph::Input& in : ins) {
      if (g.node(in.producer).op == Op::Input && !fetched[in.producer]) fetch(in.producer);
      if (interpreter_copies_input(g, id, in)) {
        reads = saturating_add(reads, bytes(in.edge->view.shape()));
      }
    }
    held[id] = bytes(n.shape);
    peak = std::max(peak, saturating_add(live, saturating_add(reads, held[id])));
    live = saturating_add(live, held[id]);
    for (const Graph::Input& in : ins) {
      if (--readers[in.producer] == 0 && g.node(in.producer).op != Op::Output) {
        live -= held[in.producer];
      }
    }
    if (readers[id] == 0 && n.op != Op::Output) live -= held[id];
  }
  return peak;
}

void check_inputs_memory(const Graph& g, const DimValues& dims, std::int64_t limit) {
  check_nodes_memory(g, dims, limit, "the model's inputs (as doubles)",
                     [](const Node& n) { return n.op == Op::Input; }, held_element_bytes);
}

void check_native_inputs_memory(const Graph& g, const DimValues& dims, std::int64_t limit) {
  check_nodes_memory(
      g, dims, limit, "the model's inputs (in their dtypes)",
      [](const Node& n) { return n.op == Op::Input; },
      [](const Node& n) { return static_cast<std::int64_t>(dtype_size(n.dtype)); });
}

}  // namespace kiln::graph
