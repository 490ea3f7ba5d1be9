// Memory estimates made before allocating: a tensor, or every value the reference interpreter
// keeps for a graph, must fit in this machine's memory at the given dims, or a UserError names
// the dims that make it too large and the bytes it would need (never std::bad_alloc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "graph/hlir.hpp"

namespace kiln::graph {

// The interpreter and random inputs hold every element as a double.
inline constexpr std::int64_t kBytesPerHeldElement = 8;

// This machine's physical memory in bytes: the cap the checks below use by default.
std::int64_t physical_memory_bytes();

// The element count of `shape` at `dims`. A UserError naming `what`, its shape and the dims in it
// when its elements, `bytes_per_element` each, need more than `limit` bytes (or 2^63).
std::int64_t checked_numel(const std::vector<Expr>& shape, const DimValues& dims,
                           const std::string& what,
                           std::int64_t bytes_per_element = kBytesPerHeldElement,
                           std::int64_t limit = physical_memory_bytes());

// A UserError when `bytes`, needed by `what` at `dims`, exceed `limit`; it lists the dims.
void check_bytes_fit(std::int64_t bytes, const std::string& what, const DimValues& dims,
                     std::int64_t limit = physical_memory_bytes());

// A UserError when the values of every node of `g` at `dims`, all held at once as doubles (what
// the reference interpreter's interpret_all keeps), need more than `limit` bytes; it names the largest tensor,
// the dims in its shape, and the total.
void check_graph_memory(const Graph& g, const DimValues& dims,
                        std::int64_t limit = physical_memory_bytes());

// The same for the Input nodes of `g` only (what random_inputs allocates): a model's weights can
// each fit and still not fit together.
void check_inputs_memory(const Graph& g, const DimValues& dims,
                         std::int64_t limit = physical_memory_bytes());
// The same with each input in its own dtype (what a device holds once they are bound).
void check_native_inputs_memory(const Graph& g, const DimValues& dims,
                                std::int64_t limit = physical_memory_bytes());

// Whether graph::interpret copies input `in` of node `consumer` out of its producer's buffer:
// elementwise ops read their inputs through their views one element at a time, and other ops
// read a contiguous view of the whole producer in place; the rest is copied through the view.
bool interpreter_copies_input(const Graph& g, NodeId consumer, const Graph::Input& in);

// The peak bytes of graph::interpret (outputs only, values freed after their last reader, each
// Input fetched when first read) at `dims`: exactly what its InterpretStats reports.
std::int64_t interpreter_peak_bytes(const Graph& g, const DimValues& dims);

}  // namespace kiln::graph
