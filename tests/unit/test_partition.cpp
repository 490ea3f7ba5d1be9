// Partition: chunks at graph breaks, structural hashes and groups of identical chunks.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compiler/partition.hpp"
#include "graph/nn.hpp"
#include "graph/tensor.hpp"

using namespace kiln::graph;
using kiln::compiler::Partition;
using kiln::compiler::partition;
namespace nn = kiln::graph::nn;

namespace {

// What a test block may change relative to the plain one.
struct Variant {
  DType dtype = DType::F32;
  double constant = 0.5;
  std::size_t axis = 1;
  bool transposed_view = false;
  std::string prefix = "block";
};

// x [4, 4] -> a small block: matmul with a weight, scale, softmax; reads the weight named
// after `prefix`.
GraphTensor block(GraphBuilder& b, const GraphTensor& x, const Variant& v) {
  GraphTensor w = b.input(v.prefix + ".w", {4, 4}, v.dtype);
  if (v.transposed_view) w = transpose(w, 0, 1);
  GraphTensor h = matmul(x, w) * v.constant;
  return softmax(h, v.axis) + x;
}

// A graph of `variants.size()` blocks, a break before each, and an output.
Partition blocks(const std::vector<Variant>& variants, bool breaks = true) {
  GraphBuilder b;
  GraphTensor x = b.input("x", {4, 4}, variants.front().dtype);
  for (const Variant& v : variants) {
    if (breaks) b.graph_break();
    x = block(b, x, v);
  }
  if (breaks) b.graph_break();
  x.output("y");
  return partition(b.graph());
}

}  // namespace

TEST_CASE("partition: identical blocks hash equal and form one group [compiler]") {
  Partition p = blocks({{}, {}, {}});
  // chunk 0: the input x; chunks 1-3: blocks; chunk 4: the output.
  REQUIRE(p.chunks.size() == 5);
  CHECK(p.chunks[1].hash == p.chunks[2].hash);
  CHECK(p.chunks[2].hash == p.chunks[3].hash);
  CHECK_FALSE(p.chunks[0].hash == p.chunks[1].hash);
  REQUIRE(p.groups.size() == 3);
  CHECK(p.groups[0].members == std::vector<std::size_t>{0});
  CHECK(p.groups[1].members == std::vector<std::size_t>{1, 2, 3});
  CHECK(p.groups[2].members == std::vector<std::size_t>{4});
  CHECK(p.group_of_chunk == std::vector<std::size_t>{0, 1, 1, 1, 2});
  // Each block reads the previous value and is read by the next chunk.
  for (std::size_t c = 1; c <= 3; ++c) {
    CHECK(p.chunks[c].inputs.size() == 1);
    CHECK(p.chunks[c].outputs.size() == 1);
  }
  CHECK(p.chunks[1].outputs == p.chunks[2].inputs);
}

TEST_CASE("partition: a block differing in a view, dtype, constant or axis differs [compiler]") {
  Variant plain;
  Variant view = plain;
  view.transposed_view = true;
  Variant constant = plain;
  constant.constant = 0.25;
  Variant axis = plain;
  axis.axis = 0;
  for (const Variant& other : {view, constant, axis}) {
    Partition p = blocks({plain, other, plain});
    CHECK_FALSE(p.chunks[1].hash == p.chunks[2].hash);
    CHECK(p.chunks[1].hash == p.chunks[3].hash);
    CHECK(p.groups[1].members == std::vector<std::size_t>{1, 3});
    CHECK(p.groups[2].members == std::vector<std::size_t>{2});
  }
  // A different dtype: compare whole graphs, since a block of one dtype reads only its own.
  Variant f64 = plain;
  f64.dtype = DType::F64;
  CHECK_FALSE(blocks({plain}).chunks[1].hash == blocks({f64}).chunks[1].hash);
}

TEST_CASE("partition: names and weights do not change the hash [compiler]") {
  Variant a, b;
  b.prefix = "other_block";
  Partition p = blocks({a, b});
  CHECK(p.chunks[1].hash == p.chunks[2].hash);
  CHECK(p.groups[1].members == std::vector<std::size_t>{1, 2});
  // Same structure in two graphs with different input/output names: same hashes.
  GraphBuilder b1, b2;
  (b1.input("x", {4}) * 2.0).output("y");
  (b2.input("input_ids", {4}) * 2.0).output("logits");
  CHECK(partition(b1.graph()).chunks[0].hash == partition(b2.graph()).chunks[0].hash);
  // Persistent flag is structure.
  GraphBuilder b3;
  GraphTensor s = b3.input("x", {4});
  b3.graph().node(s.node()).persistent = true;
  (s * 2.0).output("y");
  CHECK_FALSE(partition(b1.graph()).chunks[0].hash == partition(b3.graph()).chunks[0].hash);
}

TEST_CASE("partition: member mappings map representative nodes to their copies [compiler]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {4, 4});
  for (int i = 0; i < 3; ++i) {
    b.graph_break();
    Variant v;
    v.prefix = "layer" + std::to_string(i);
    x = block(b, x, v);
  }
  b.graph_break();
  x.output("y");
  const Graph& g = b.graph();
  Partition p = partition(g);
  const auto& group = p.groups[1];
  REQUIRE(group.members.size() == 3);
  const auto& rep = p.chunks[group.members[0]];
  for (std::size_t m : group.members) {
    const auto& member = p.chunks[m];
    REQUIRE(member.nodes.size() == rep.nodes.size());
    for (NodeId r : rep.nodes) {
      auto n = p.map_node(m, r);
      REQUIRE(n.has_value());
      CHECK(g.chunk_of(*n) == member.index);
      CHECK(g.node(*n).op == g.node(r).op);
      CHECK(g.node(*n).shape == g.node(r).shape);
      if (g.node(r).op == Op::Input) {
        CHECK(g.node(*n).name == "layer" + std::to_string(m - 1) + ".w");
      }
    }
    for (NodeId r : rep.inputs) {
      auto n = p.map_input(m, r);
      REQUIRE(n.has_value());
      CHECK(g.chunk_of(*n) == member.index - 1);
    }
  }
  CHECK_FALSE(p.map_node(2, 0).has_value());  // node 0 (x) is not in the representative
}

TEST_CASE("partition: a graph without breaks is one chunk [compiler]") {
  Partition p = blocks({{}, {}}, /*breaks=*/false);
  REQUIRE(p.chunks.size() == 1);
  REQUIRE(p.groups.size() == 1);
  CHECK(p.chunks[0].inputs.empty());
  CHECK(p.chunks[0].outputs.size() == 1);  // the value read by the Output node
}

TEST_CASE("partition: is deterministic and skips empty chunks [compiler]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {4});
  b.graph_break();
  b.graph_break();
  (x * 3.0).output("y");
  b.graph_break();
  Partition p1 = partition(b.graph());
  Partition p2 = partition(b.graph());
  REQUIRE(p1.chunks.size() == 2);
  CHECK(p1.chunks[1].index == 2);
  CHECK(p1.chunks[0].hash == p2.chunks[0].hash);
  CHECK(p1.chunks[1].hash == p2.chunks[1].hash);
  CHECK(p1.chunks[1].nodes == p2.chunks[1].nodes);
}

TEST_CASE("partition: a 4-layer LLaMA groups its layers into one group of 4 [compiler]") {
  nn::DecoderConfig c;
  c.name = "tiny";
  c.layers = 4;
  c.hidden = 8;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 2;
  c.intermediate = 12;
  c.vocab = 32;
  c.max_context = 4;
  GraphBuilder b;
  nn::llama_decoder(b, c);
  const Graph& g = b.graph();
  Partition p = partition(g);
  REQUIRE(p.chunks.size() == 6);  // prologue, 4 layers, final norm and head
  REQUIRE(p.groups.size() == 3);
  CHECK(p.groups[1].members == std::vector<std::size_t>{1, 2, 3, 4});
  // Each layer reads the residual stream, the positions and the mask from outside, and
  // writes the stream and its two caches.
  CHECK(p.chunks[2].inputs.size() == 3);
  CHECK(p.chunks[2].outputs.size() == 3);
  // Representative weights map to the same weights of each layer.
  const auto& rep = p.chunks[1];
  for (std::size_t m = 1; m <= 4; ++m) {
    const std::string prefix = "layers." + std::to_string(m - 1) + ".";
    for (NodeId r : rep.nodes) {
      const Node& rn = g.node(r);
      NodeId n = *p.map_node(m, r);
      CHECK(g.node(n).op == rn.op);
      CHECK(g.node(n).shape == rn.shape);
      if (rn.op == Op::Input || rn.op == Op::Output) {
        CHECK(g.node(n).name == prefix + rn.name.substr(rn.name.find('.', 7) + 1));
      }
    }
  }
}

TEST_CASE("partition: the full-size decoders group local and global layers [compiler]") {
  GraphBuilder smol;
  nn::llama_decoder(smol, nn::smollm2_135m());
  Partition p = partition(smol.graph());
  CHECK(p.chunks.size() == 32);
  CHECK(p.groups.size() == 3);
  GraphBuilder gemma;
  nn::DecoderConfig c = nn::gemma3_4b();
  nn::gemma3_decoder(gemma, c);
  Partition q = partition(gemma.graph());
  REQUIRE(q.chunks.size() == 36);
  REQUIRE(q.groups.size() == 4);  // prologue, local layers, global layers, head
  CHECK(q.groups[1].members.size() == 29);
  CHECK(q.groups[2].members == std::vector<std::size_t>{6, 12, 18, 24, 30});
}
