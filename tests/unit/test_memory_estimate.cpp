// Memory estimates before allocating: dims too large for this machine are a UserError naming the
// dims and the bytes, from the estimate itself and from every allocating path (random inputs, the
// interpreter), never std::bad_alloc. The interpreter frees each value after its last reader:
// its peak on a decoder is what the estimate predicts and does not grow with the layer count,
// and its outputs are those of interpret_all, which keeps everything.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "graph/interpret.hpp"
#include "graph/memory_estimate.hpp"
#include "graph/native.hpp"
#include "graph/nn.hpp"
#include "graph/random_inputs.hpp"
#include "graph/tensor.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln::graph;
using kiln::testing::contains;
using kiln::testing::user_error_of;

namespace {

// y = exp(x) + 1 with x [batch, 512].
void build_exp_plus_one(GraphBuilder& b) {
  GraphTensor x = b.input("x", {Expr::dim("batch"), Expr(512)});
  (exp(x) + 1.0).output("y");
}

// A LLaMA decoder of `layers` layers at toy size.
void build_decoder(GraphBuilder& b, std::size_t layers) {
  nn::DecoderConfig c;
  c.layers = layers;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.intermediate = 64;
  c.vocab = 48;
  c.max_context = 16;
  nn::llama_decoder(b, c);
}

std::int64_t all_nodes_bytes(const Graph& g, const DimValues& dims) {
  std::int64_t total = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    std::int64_t count = 1;
    for (const Expr& d : g.node(id).shape) count *= evaluate(d, dims);
    total += count * kBytesPerHeldElement;
  }
  return total;
}

}  // namespace

TEST_CASE("memory: the interpreter frees values after their last reader; its peak is the "
          "estimate's and stays flat as layers are added", "[graph]") {
  const DimValues dims{{"seq", 3}, {"pos", 2}};
  std::map<std::size_t, std::int64_t> peak, total, outputs;
  for (std::size_t layers : {2, 6}) {
    INFO(layers << " layers");
    GraphBuilder b;
    build_decoder(b, layers);
    const Graph& g = b.graph();
    const std::map<std::string, Tensor> inputs = random_inputs(g, dims, 3);
    // Inputs made one at a time, each asked for once.
    std::map<NodeId, int> asked;
    const InputSource source = [&](NodeId id) {
      ++asked[id];
      return inputs.at(g.node(id).name);
    };
    InterpretStats stats;
    const std::map<std::string, Tensor> streamed = interpret(g, dims, source, &stats);
    for (const auto& [id, times] : asked) CHECK(times == 1);
    // The same values as the interpreter that keeps everything.
    const std::vector<std::vector<double>> all = interpret_all(g, dims, inputs);
    for (NodeId id = 0; id < g.size(); ++id) {
      if (g.node(id).op == Op::Output) CHECK(streamed.at(g.node(id).name).data == all[id]);
    }
    CHECK(stats.peak_bytes == interpreter_peak_bytes(g, dims));
    peak[layers] = stats.peak_bytes;
    total[layers] = all_nodes_bytes(g, dims);
    for (const auto& [name, t] : streamed) {
      outputs[layers] += static_cast<std::int64_t>(t.data.size()) * kBytesPerHeldElement;
    }
  }
  // The graph grows with its layers; what is alive at once grows only by the outputs kept for
  // the caller (each layer's updated KV caches).
  CHECK(total[6] > 2 * total[2]);
  CHECK(peak[6] <= peak[2] + (outputs[6] - outputs[2]));
  CHECK(peak[6] * 4 < total[6]);
}

TEST_CASE("memory: random_input makes one input alone, deterministically", "[graph]") {
  GraphBuilder b;
  build_decoder(b, 1);
  const Graph& g = b.graph();
  const DimValues dims{{"seq", 2}, {"pos", 0}};
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op != Op::Input) continue;
    INFO(n.name);
    const Tensor t = random_input(g, id, dims, 7);
    CHECK(t.dtype == n.dtype);
    CHECK(static_cast<std::int64_t>(t.data.size()) == numel(t.shape));
    CHECK(random_input(g, id, dims, 7).data == t.data);
    // The same values made directly in the input's own layout.
    const NativeTensor native = random_native_input(g, id, dims, 7);
    CHECK(native.shape() == t.shape);
    CHECK(std::ranges::equal(native.bytes(), to_native(t).bytes()));
    for (double v : t.data) CHECK(v == round_to_dtype(v, n.dtype));
    if (n.name == "tokens") {  // token ids index the embedding table
      for (double v : t.data) CHECK((v >= 0 && v < 48));
    }
  }
}

TEST_CASE("memory: random_native_input is random_input in every dtype's layout", "[graph]") {
  GraphBuilder b;
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64,
                  DType::U8, DType::Bool}) {
    b.input("in_" + std::string(dtype_name(t)), {Expr(3), Expr::dim("n")}, t)
        .output("out_" + std::string(dtype_name(t)));
  }
  const Graph& g = b.graph();
  const DimValues dims{{"n", 37}};
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op != Op::Input) continue;
    INFO(g.node(id).name);
    const NativeTensor native = random_native_input(g, id, dims, 3);
    CHECK(native.dtype() == g.node(id).dtype);
    CHECK(native.bytes().size() == 3 * 37 * dtype_size(native.dtype()));
    CHECK(std::ranges::equal(native.bytes(), to_native(random_input(g, id, dims, 3)).bytes()));
    CHECK(to_tensor(native).data == random_input(g, id, dims, 3).data);
  }
}

TEST_CASE("memory: a tensor that fits is counted, one that does not names its dims and bytes",
          "[graph]") {
  const std::vector<Expr> shape = {Expr::dim("batch"), Expr(512)};
  CHECK(checked_numel(shape, {{"batch", 3}}, "input 'x'") == 3 * 512);
  CHECK(checked_numel(shape, {{"batch", 3}}, "input 'x'", 4, 3 * 512 * 4) == 3 * 512);
  const std::string error =
      user_error_of([&] { checked_numel(shape, {{"batch", 3}}, "input 'x'", 4, 3 * 512 * 4 - 1); });
  CHECK(contains(error, "input 'x' [batch, 512] with dim batch=3 needs 6144 bytes"));
  CHECK(contains(error, "more than the 6143 bytes"));
  // 10^11 rows of 512 doubles: 409.6 TB, far beyond any machine.
  const std::string huge =
      user_error_of([&] { checked_numel(shape, {{"batch", 100000000000}}, "input 'x'"); });
  CHECK(contains(huge, "with dim batch=100000000000 needs 409600000000000 bytes"));
  // Element counts past 2^63 saturate instead of wrapping around to something small.
  const std::vector<Expr> square = {Expr::dim("n"), Expr::dim("n")};
  CHECK(contains(user_error_of([&] { checked_numel(square, {{"n", 1LL << 40}}, "t"); }),
                 "needs more than 2^63 bytes"));
}

TEST_CASE("memory: the interpreter's estimate is the sum of every node, largest named",
          "[graph]") {
  GraphBuilder b;
  build_exp_plus_one(b);
  const DimValues dims{{"batch", 2}};
  std::int64_t total = 0;
  for (NodeId id = 0; id < b.graph().size(); ++id) {
    std::int64_t count = 1;
    for (const Expr& d : b.graph().node(id).shape) count *= evaluate(d, dims);
    total += count * kBytesPerHeldElement;
  }
  CHECK_NOTHROW(check_graph_memory(b.graph(), dims, total));
  const std::string error = user_error_of([&] { check_graph_memory(b.graph(), dims, total - 1); });
  CHECK(contains(error, "need " + std::to_string(total) + " bytes"));
  CHECK(contains(error, "[batch, 512] with dim batch=2"));
}

TEST_CASE("memory: random inputs and the interpreter refuse dims too large before allocating",
          "[graph]") {
  GraphBuilder b;
  build_exp_plus_one(b);
  const DimValues huge{{"batch", 100000000000}};
  const std::string inputs = user_error_of([&] { random_inputs(b.graph(), huge, 1); });
  CHECK(contains(inputs, "the model's inputs (as doubles) need 409600000000000 bytes"));
  CHECK(contains(inputs, "input 'x' [batch, 512] with dim batch=100000000000"));
  CHECK(contains(user_error_of([&] { interpret_all(b.graph(), huge, {}); }),
                 "with dim batch=100000000000"));
  // At sane dims both run.
  const DimValues small{{"batch", 2}};
  CHECK(interpret(b.graph(), small, random_inputs(b.graph(), small, 1)).at("y").data.size() ==
        2 * 512);
}

TEST_CASE("memory: inputs that each fit but not together are refused, the largest named",
          "[graph]") {
  GraphBuilder b;
  GraphTensor w1 = b.input("w1", {Expr(64), Expr(64)});
  GraphTensor w2 = b.input("w2", {Expr(64), Expr(32)});
  (w1 + 1.0).output("y1");
  (w2 + 1.0).output("y2");
  const std::int64_t both = (64 * 64 + 64 * 32) * kBytesPerHeldElement;
  CHECK_NOTHROW(check_inputs_memory(b.graph(), {}, both));
  const std::string error = user_error_of([&] { check_inputs_memory(b.graph(), {}, both - 1); });
  CHECK(contains(error, "the model's inputs (as doubles) need " + std::to_string(both) + " bytes"));
  CHECK(contains(error, "the largest is input 'w1' [64, 64] with 32768 bytes"));
  CHECK(contains(error, "the model is too large"));
  // In their own dtypes (f32 here) they need half as much.
  CHECK_NOTHROW(check_native_inputs_memory(b.graph(), {}, both / 2));
  const std::string native =
      user_error_of([&] { check_native_inputs_memory(b.graph(), {}, both / 2 - 1); });
  CHECK(contains(native, "the model's inputs (in their dtypes) need " + std::to_string(both / 2) +
                             " bytes"));
  CHECK(contains(native, "the largest is input 'w1' [64, 64] with 16384 bytes"));
}
