// Partition into chunks at graph breaks and grouping of identical chunks (see partition.hpp).
#include "compiler/partition.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <string_view>
#include <utility>

#include "support/diagnostic.hpp"

namespace kiln::compiler {

namespace {

using graph::Graph;
using graph::Node;
using graph::NodeId;
using graph::Op;

// The canonical byte encoding of a chunk. Every field is a fixed-width word or a
// length-prefixed string, so distinct structures never encode alike.
class Encoder {
 public:
  void word(std::uint64_t w) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((w >> (8 * i)) & 0xff));
  }
  void text(std::string_view s) {
    word(s.size());
    bytes_.append(s);
  }
  void shape(const std::vector<graph::Expr>& dims) {
    word(dims.size());
    for (const graph::Expr& d : dims) text(graph::to_string(d));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

bool has_axis(Op op) { return op == Op::SumReduce || op == Op::MaxReduce || op == Op::Softmax; }

// The chunk's nodes in local order: Kahn's algorithm over the chunk's own edges, smallest id
// first among the ready nodes. `members` is sorted by id.
std::vector<NodeId> local_order(const Graph& g, const std::vector<NodeId>& members,
                                std::size_t chunk) {
  std::map<NodeId, std::size_t> pending;  // unmet in-chunk inputs per node
  for (NodeId id : members) {
    std::size_t n = 0;
    for (const Graph::Input& in : g.inputs(id)) n += g.chunk_of(in.producer) == chunk ? 1 : 0;
    pending[id] = n;
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (const auto& [id, n] : pending) {
    if (n == 0) ready.push(id);
  }
  std::vector<NodeId> order;
  order.reserve(members.size());
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    order.push_back(id);
    // A user reading `id` in two slots appears once in users() but has two pending edges.
    for (NodeId user : g.users(id)) {
      auto it = pending.find(user);
      if (it == pending.end()) continue;
      for (const Graph::Input& in : g.inputs(user)) {
        if (in.producer == id) --it->second;
      }
      if (it->second == 0) ready.push(user);
    }
  }
  KILN_ASSERT(order.size() == members.size(), "partition: a chunk's edges form a cycle");
  return order;
}

// Builds chunk `index` from its nodes (sorted by id) and returns its canonical encoding.
std::string build_chunk(const Graph& g, std::size_t index, const std::vector<NodeId>& members,
                        Chunk& chunk) {
  chunk.index = index;
  chunk.nodes = local_order(g, members, index);
  std::map<NodeId, std::size_t> local;
  for (std::size_t i = 0; i < chunk.nodes.size(); ++i) local[chunk.nodes[i]] = i;
  std::map<NodeId, std::size_t> boundary;  // producer -> boundary input number

  Encoder enc;
  enc.word(chunk.nodes.size());
  for (NodeId id : chunk.nodes) {
    const Node& n = g.node(id);
    enc.word(static_cast<std::uint64_t>(n.op));
    enc.word(static_cast<std::uint64_t>(n.dtype));
    enc.shape(n.shape);
    enc.word(n.persistent ? 1 : 0);
    if (n.op == Op::Constant) enc.word(std::bit_cast<std::uint64_t>(n.value));
    if (has_axis(n.op)) enc.word(n.axis);
    if (n.op == Op::CustomOp) enc.text(n.name);  // the op itself, not a tensor name
    std::vector<Graph::Input> inputs = g.inputs(id);
    enc.word(inputs.size());
    for (const Graph::Input& in : inputs) {
      enc.word(in.edge->slot);
      if (auto it = local.find(in.producer); it != local.end()) {
        enc.word(0);
        enc.word(it->second);
      } else {
        auto [b, fresh] = boundary.emplace(in.producer, chunk.inputs.size());
        if (fresh) chunk.inputs.push_back(in.producer);
        enc.word(1);
        enc.word(b->second);
      }
      enc.text(graph::to_string(in.edge->view));
    }
  }
  enc.word(chunk.inputs.size());
  for (NodeId p : chunk.inputs) {
    enc.word(static_cast<std::uint64_t>(g.node(p).dtype));
    enc.shape(g.node(p).shape);
  }
  for (std::size_t i = 0; i < chunk.nodes.size(); ++i) {
    for (NodeId user : g.users(chunk.nodes[i])) {
      if (g.chunk_of(user) != index || g.node(user).op == Op::Output) {
        chunk.outputs.push_back(chunk.nodes[i]);
        break;
      }
    }
  }
  enc.word(chunk.outputs.size());
  for (NodeId o : chunk.outputs) enc.word(local.at(o));
  chunk.hash = support::hash128(enc.bytes().data(), enc.bytes().size());
  return enc.bytes();
}

}  // namespace

std::optional<std::size_t> Chunk::local_index(graph::NodeId id) const {
  // Local order is id order for API-built graphs, but not in general: search linearly.
  auto it = std::find(nodes.begin(), nodes.end(), id);
  if (it == nodes.end()) return std::nullopt;
  return static_cast<std::size_t>(it - nodes.begin());
}

std::optional<graph::NodeId> Partition::map_node(std::size_t member,
                                                 graph::NodeId rep_node) const {
  KILN_ASSERT(member < chunks.size(), "partition: map_node of a chunk out of range");
  const Chunk& rep = chunks[groups[group_of_chunk[member]].members.front()];
  std::optional<std::size_t> i = rep.local_index(rep_node);
  if (!i) return std::nullopt;
  return chunks[member].nodes[*i];
}

std::optional<graph::NodeId> Partition::map_input(std::size_t member,
                                                  graph::NodeId rep_producer) const {
  KILN_ASSERT(member < chunks.size(), "partition: map_input of a chunk out of range");
  const Chunk& rep = chunks[groups[group_of_chunk[member]].members.front()];
  auto it = std::find(rep.inputs.begin(), rep.inputs.end(), rep_producer);
  if (it == rep.inputs.end()) return std::nullopt;
  return chunks[member].inputs[static_cast<std::size_t>(it - rep.inputs.begin())];
}

Partition partition(const graph::Graph& g) {
  std::vector<std::vector<NodeId>> by_chunk(g.num_chunks());
  for (NodeId id = 0; id < g.size(); ++id) by_chunk[g.chunk_of(id)].push_back(id);

  Partition p;
  std::vector<std::string> encodings;  // of each group's representative
  // hash -> groups with that hash (more than one only on a collision)
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::size_t>> by_hash;
  for (std::size_t c = 0; c < by_chunk.size(); ++c) {
    if (by_chunk[c].empty()) continue;
    Chunk chunk;
    std::string enc = build_chunk(g, c, by_chunk[c], chunk);
    std::size_t ci = p.chunks.size();
    std::vector<std::size_t>& candidates = by_hash[{chunk.hash.high, chunk.hash.low}];
    std::size_t group = p.groups.size();
    for (std::size_t cand : candidates) {
      if (encodings[cand] == enc) group = cand;
    }
    if (group == p.groups.size()) {
      candidates.push_back(group);
      p.groups.push_back({chunk.hash, {}});
      encodings.push_back(std::move(enc));
    }
    p.groups[group].members.push_back(ci);
    p.group_of_chunk.push_back(group);
    p.chunks.push_back(std::move(chunk));
  }
  return p;
}

}  // namespace kiln::compiler
