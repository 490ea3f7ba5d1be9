// nn building blocks and decoders: tiny configs run by the reference interpreter against
// direct computations.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/interpret.hpp"
#include "graph/nn.hpp"
#include "graph/tensor.hpp"
#include "support/hash.hpp"

using namespace kiln::graph;
namespace nn = kiln::graph::nn;

namespace {

using Inputs = std::map<std::string, Tensor>;

// Deterministic values in [-scale, scale] seeded by the tensor's name, so that two graphs
// naming a weight alike get the same weight.
Tensor random_tensor(const std::string& name, std::vector<std::int64_t> shape, DType dtype,
                     double scale = 0.5) {
  std::mt19937_64 rng(kiln::support::hash64(name));
  std::uniform_real_distribution<double> dist(-scale, scale);
  Tensor t{dtype, std::move(shape), {}};
  for (std::int64_t i = 0; i < numel(t.shape); ++i) t.data.push_back(dist(rng));
  return t;
}

// Random values for every Input of `g` not already in `given` (caches start at zero).
Inputs fill_inputs(const Graph& g, const DimValues& dims, Inputs given) {
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op != Op::Input || given.count(n.name) != 0) continue;
    std::vector<std::int64_t> shape;
    for (const Expr& e : n.shape) shape.push_back(evaluate(e, dims));
    Tensor t = random_tensor(n.name, shape, n.dtype);
    if (n.persistent) t.data.assign(t.data.size(), 0.0);
    given[n.name] = t;
  }
  return given;
}

Tensor tokens(std::vector<double> ids) {
  return Tensor{DType::I32, {static_cast<std::int64_t>(ids.size())}, ids};
}

std::map<std::string, Tensor> run(const GraphBuilder& b, const DimValues& dims,
                                  const Inputs& inputs) {
  validate(b.graph());
  return interpret(b.graph(), dims, fill_inputs(b.graph(), dims, inputs));
}

// Row-major helpers for the direct computations.
using Mat = std::vector<double>;  // rows x cols

Mat linear_ref(const Mat& x, std::int64_t rows, std::int64_t in, const Mat& w, std::int64_t out) {
  Mat y(static_cast<std::size_t>(rows * out), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (std::int64_t i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  }
  return y;
}

Mat rms_norm_ref(const Mat& x, std::int64_t rows, std::int64_t n, const Mat& w, double eps) {
  Mat y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (std::int64_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * inv * w[i];
  }
  return y;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want,
                 double eps = 1e-9) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(eps));
}

const DType kF = DType::F64;

// Multi-head attention with grouped kv heads and RoPE, written out: x [seq, hidden], causal.
Mat attention_ref(const Inputs& in, const std::string& p, const Mat& x, std::int64_t seq,
                  std::int64_t hidden, std::int64_t heads, std::int64_t kv, std::int64_t d,
                  double base) {
  Mat q = linear_ref(x, seq, hidden, in.at(p + ".q.weight").data, heads * d);
  Mat k = linear_ref(x, seq, hidden, in.at(p + ".k.weight").data, kv * d);
  Mat v = linear_ref(x, seq, hidden, in.at(p + ".v.weight").data, kv * d);
  auto rope = [&](Mat& t, std::int64_t nh) {
    const std::int64_t h = d / 2;
    for (std::int64_t s = 0; s < seq; ++s) {
      for (std::int64_t head = 0; head < nh; ++head) {
        double* row = &t[(s * nh + head) * d];
        for (std::int64_t i = 0; i < h; ++i) {
          double a = static_cast<double>(s) * std::pow(base, -2.0 * i / static_cast<double>(d));
          double x1 = row[i], x2 = row[i + h];
          row[i] = x1 * std::cos(a) - x2 * std::sin(a);
          row[i + h] = x2 * std::cos(a) + x1 * std::sin(a);
        }
      }
    }
  };
  rope(q, heads);
  rope(k, kv);
  Mat o(static_cast<std::size_t>(seq * heads * d), 0.0);
  const std::int64_t group = heads / kv;
  for (std::int64_t h = 0; h < heads; ++h) {
    const std::int64_t j = h / group;
    for (std::int64_t s = 0; s < seq; ++s) {
      std::vector<double> w;
      double mx = -INFINITY;
      for (std::int64_t t = 0; t <= s; ++t) {  // causal: keys 0..s
        double dot = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          dot += q[(s * heads + h) * d + i] * k[(t * kv + j) * d + i];
        }
        w.push_back(dot / std::sqrt(static_cast<double>(d)));
        mx = std::max(mx, w.back());
      }
      double total = 0;
      for (double& e : w) total += (e = std::exp(e - mx));
      for (std::int64_t t = 0; t <= s; ++t) {
        for (std::int64_t i = 0; i < d; ++i) {
          o[(s * heads + h) * d + i] += w[t] / total * v[(t * kv + j) * d + i];
        }
      }
    }
  }
  return linear_ref(o, seq, heads * d, in.at(p + ".o.weight").data, hidden);
}

// Builds attention over x [seq, hidden] without a cache; output "y".
void build_attention(GraphBuilder& b, std::int64_t seq, std::int64_t hidden,
                     const nn::AttentionConfig& c) {
  GraphTensor x = b.input("x", {seq, hidden}, kF);
  GraphTensor mask = b.causal_mask(seq, seq, 0, std::nullopt, kF);
  nn::attention(x, nn::positions(b, seq, 0), mask, "attn", c).output("y");
}

nn::DecoderConfig tiny_llama(std::int64_t layers) {
  nn::DecoderConfig c;
  c.name = "tiny-llama";
  c.layers = layers;
  c.hidden = 8;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 2;
  c.intermediate = 12;
  c.vocab = 32;
  c.rope_base = 100.0;
  c.tied_embeddings = true;
  c.max_context = 4;
  c.dtype = kF;
  return c;
}

}  // namespace

TEST_CASE("nn: linear matches loops, with and without bias [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {3, 5}, kF);
  nn::linear(x, "fc", 4).output("y");
  nn::linear(x, "fcb", 4, /*bias=*/true).output("yb");
  Inputs in = fill_inputs(b.graph(), {}, {});
  auto out = run(b, {}, in);
  Mat want = linear_ref(in["x"].data, 3, 5, in["fc.weight"].data, 4);
  CHECK(out["y"].shape == std::vector<std::int64_t>{3, 4});
  check_close(out["y"].data, want);
  Mat wantb = linear_ref(in["x"].data, 3, 5, in["fcb.weight"].data, 4);
  for (std::size_t i = 0; i < wantb.size(); ++i) wantb[i] += in["fcb.bias"].data[i % 4];
  check_close(out["yb"].data, wantb);
}

TEST_CASE("nn: embedding reads rows of the table [graph]") {
  GraphBuilder b;
  GraphTensor table = nn::weight(b, "embed.weight", {6, 3}, kF);
  nn::embedding(b.input("ids", {4}, DType::I32), table).output("y");
  Inputs in = fill_inputs(b.graph(), {}, {{"ids", tokens({5, 0, 2, 5})}});
  auto y = run(b, {}, in)["y"];
  REQUIRE(y.shape == std::vector<std::int64_t>{4, 3});
  const std::vector<int> rows = {5, 0, 2, 5};
  for (std::size_t r = 0; r < 4; ++r) {
    for (std::size_t c = 0; c < 3; ++c) {
      CHECK(y.data[r * 3 + c] == in["embed.weight"].data[rows[r] * 3 + c]);
    }
  }
}

TEST_CASE("nn: rms_norm and layer_norm match their definitions [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {2, 6}, kF);
  nn::rms_norm(x, "n", 1e-5).output("rms");
  nn::rms_norm(x, "g", 1e-6, /*unit_offset=*/true).output("gemma");
  nn::layer_norm(x, "ln", 1e-5).output("ln");
  Inputs in = fill_inputs(b.graph(), {}, {});
  auto out = run(b, {}, in);
  check_close(out["rms"].data, rms_norm_ref(in["x"].data, 2, 6, in["n.weight"].data, 1e-5));
  Mat one_plus = in["g.weight"].data;
  for (double& w : one_plus) w += 1.0;
  check_close(out["gemma"].data, rms_norm_ref(in["x"].data, 2, 6, one_plus, 1e-6));
  const Mat& xv = in["x"].data;
  for (int r = 0; r < 2; ++r) {
    double mean = 0, var = 0;
    for (int i = 0; i < 6; ++i) mean += xv[r * 6 + i] / 6;
    for (int i = 0; i < 6; ++i) var += (xv[r * 6 + i] - mean) * (xv[r * 6 + i] - mean) / 6;
    for (int i = 0; i < 6; ++i) {
      double want = (xv[r * 6 + i] - mean) / std::sqrt(var + 1e-5) * in["ln.weight"].data[i] +
                    in["ln.bias"].data[i];
      CHECK(out["ln"].data[r * 6 + i] == Approx(want).margin(1e-9));
    }
  }
}

TEST_CASE("nn: SwiGLU and gated GELU MLPs match loops [graph]") {
  GraphBuilder b;
  GraphTensor x = b.input("x", {2, 4}, kF);
  nn::swiglu_mlp(x, "s", 6).output("swiglu");
  nn::gated_gelu_mlp(x, "g", 6).output("geglu");
  nn::gelu_mlp(x, "m", 6).output("gelu");
  Inputs in = fill_inputs(b.graph(), {}, {});
  auto out = run(b, {}, in);
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  auto gelu = [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  for (const auto& [name, prefix] :
       std::vector<std::pair<std::string, std::string>>{{"swiglu", "s"}, {"geglu", "g"}}) {
    Mat gate = linear_ref(in["x"].data, 2, 4, in[prefix + ".gate.weight"].data, 6);
    Mat up = linear_ref(in["x"].data, 2, 4, in[prefix + ".up.weight"].data, 6);
    for (std::size_t i = 0; i < gate.size(); ++i) {
      gate[i] = (name == "swiglu" ? silu(gate[i]) : gelu(gate[i])) * up[i];
    }
    check_close(out[name].data, linear_ref(gate, 2, 6, in[prefix + ".down.weight"].data, 4));
  }
  Mat h = linear_ref(in["x"].data, 2, 4, in["m.fc1.weight"].data, 6);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = gelu(h[i] + in["m.fc1.bias"].data[i % 6]);
  Mat y = linear_ref(h, 2, 6, in["m.fc2.weight"].data, 4);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] += in["m.fc2.bias"].data[i % 4];
  check_close(out["gelu"].data, y);
}

TEST_CASE("nn: grouped-query attention with RoPE matches its formula [graph]") {
  nn::AttentionConfig c;
  c.heads = 4;
  c.kv_heads = 2;
  c.head_dim = 4;
  c.rope_base = 100.0;
  GraphBuilder b;
  build_attention(b, 3, 8, c);
  Inputs in = fill_inputs(b.graph(), {}, {});
  auto y = run(b, {}, in)["y"];
  REQUIRE(y.shape == std::vector<std::int64_t>{3, 8});
  check_close(y.data, attention_ref(in, "attn", in["x"].data, 3, 8, 4, 2, 4, 100.0));
}

TEST_CASE("nn: GQA equals MHA with repeated kv weights [graph]") {
  nn::AttentionConfig gqa;
  gqa.heads = 4;
  gqa.kv_heads = 2;
  gqa.head_dim = 2;
  nn::AttentionConfig mha = gqa;
  mha.kv_heads = 4;
  GraphBuilder bg, bm;
  build_attention(bg, 3, 8, gqa);
  build_attention(bm, 3, 8, mha);
  Inputs in = fill_inputs(bg.graph(), {}, {});
  // MHA head h uses GQA kv head h / 2: repeat each kv head's weight rows.
  Inputs in_mha = in;
  for (const char* w : {"attn.k.weight", "attn.v.weight"}) {
    const Tensor& t = in[w];  // [kv * d, hidden]
    Tensor r{kF, {4 * 2, 8}, {}};
    for (int h = 0; h < 4; ++h) {
      for (int row = 0; row < 2; ++row) {
        for (int col = 0; col < 8; ++col) r.data.push_back(t.data[((h / 2) * 2 + row) * 8 + col]);
      }
    }
    in_mha[w] = r;
  }
  // The GQA graph's kv weights really are smaller, so the comparison is not trivial.
  CHECK(in["attn.k.weight"].shape == std::vector<std::int64_t>{4, 8});
  check_close(run(bg, {}, in)["y"].data, run(bm, {}, in_mha)["y"].data, 1e-12);
}

TEST_CASE("nn: a KV cache gives the same last token in two steps as in one [graph]") {
  GraphBuilder b;
  nn::DecoderConfig c = tiny_llama(2);
  nn::llama_decoder(b, c);
  // One step: three tokens.
  auto whole = run(b, {{"seq", 3}, {"pos", 0}}, {{"tokens", tokens({7, 1, 30})}});
  // Two steps: two tokens, then the third with the caches the first step left.
  auto first = run(b, {{"seq", 2}, {"pos", 0}}, {{"tokens", tokens({7, 1})}});
  Inputs carried{{"tokens", tokens({30})}};
  for (const auto& [name, t] : first) {
    if (name != "logits") carried[name] = t;
  }
  REQUIRE(carried.size() == 1 + 2 * 2);  // k and v per layer
  auto second = run(b, {{"seq", 1}, {"pos", 2}}, carried);
  REQUIRE(second["logits"].shape == std::vector<std::int64_t>{1, 32});
  Mat last(whole["logits"].data.begin() + 2 * 32, whole["logits"].data.end());
  check_close(second["logits"].data, last, 1e-9);
  // The first two rows agree too, and the cache rows written match.
  check_close(first["logits"].data, Mat(whole["logits"].data.begin(),
                                        whole["logits"].data.begin() + 2 * 32), 1e-9);
  check_close(second["layers.1.attn.k_cache"].data, whole["layers.1.attn.k_cache"].data, 1e-9);
}

TEST_CASE("nn: a tiny LLaMA decoder runs end to end [graph]") {
  GraphBuilder b;
  nn::DecoderConfig c = tiny_llama(2);
  c.tied_embeddings = false;
  GraphTensor logits = nn::llama_decoder(b, c);
  CHECK(logits.shape() == std::vector<Expr>{Expr::dim("seq"), Expr(32)});
  CHECK(b.graph().num_chunks() == 4);  // prologue, 2 layers, head
  auto out = run(b, {{"seq", 3}, {"pos", 0}}, {{"tokens", tokens({0, 5, 31})}});
  REQUIRE(out["logits"].shape == std::vector<std::int64_t>{3, 32});
  for (double v : out["logits"].data) CHECK(std::isfinite(v));
  // Persistent state: the caches, and nothing else.
  std::size_t persistent = 0;
  for (NodeId id = 0; id < b.graph().size(); ++id) {
    if (b.graph().node(id).persistent) {
      ++persistent;
      CHECK(b.graph().node(id).name.find("_cache") != std::string::npos);
    }
  }
  CHECK(persistent == 4);
}

TEST_CASE("nn: a tiny Gemma 3 decoder runs, and its sliding window limits attention [graph]") {
  nn::DecoderConfig c = tiny_llama(2);
  c.name = "tiny-gemma";
  c.rms_eps = 1e-6;
  c.sliding_window = 1;  // a local layer sees only its own token
  c.global_every = 2;    // layer 1 global
  c.scale_embeddings = true;
  CHECK_FALSE(nn::is_global_layer(c, 0));
  CHECK(nn::is_global_layer(c, 1));
  GraphBuilder b;
  nn::gemma3_decoder(b, c);
  auto out = run(b, {{"seq", 3}, {"pos", 0}}, {{"tokens", tokens({3, 9, 27})}});
  REQUIRE(out["logits"].shape == std::vector<std::int64_t>{3, 32});
  for (double v : out["logits"].data) CHECK(std::isfinite(v));

  // A one-layer model of only local layers: each token's output ignores the others, so
  // changing token 0 leaves row 2 unchanged.
  c.layers = 1;
  c.global_every = 0;
  GraphBuilder local;
  nn::gemma3_decoder(local, c);
  auto a = run(local, {{"seq", 3}, {"pos", 0}}, {{"tokens", tokens({3, 9, 27})}});
  auto z = run(local, {{"seq", 3}, {"pos", 0}}, {{"tokens", tokens({4, 9, 27})}});
  check_close(Mat(a["logits"].data.begin() + 64, a["logits"].data.end()),
              Mat(z["logits"].data.begin() + 64, z["logits"].data.end()), 1e-12);
  CHECK(a["logits"].data[0] != z["logits"].data[0]);
}
