// reference_peak: the reference interpreter's memory on a decoder. Runs graph::interpret on
// Gemma-3-4B or SmolLM2-135M (optionally with fewer layers) at `seq` and `pos`, its weights made
// one at a time (graph::random_input) and each value freed after its last reader, and prints
// the bytes the model's inputs and all its values would take as doubles (what a map of inputs and
// interpret_all hold), the interpreter's predicted and measured peak, its time, and the logits'
// sum. Run it under `/usr/bin/time -v` for the process's peak RSS.
//
//   build/bin/reference_peak gemma3-4b [--layers N] [--seq S] [--pos P] [--estimate]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/interpret.hpp"
#include "graph/memory_estimate.hpp"
#include "graph/nn.hpp"
#include "graph/random_inputs.hpp"
#include "graph/tensor.hpp"

namespace {

using namespace kiln::graph;

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1 << 30); }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reference_peak gemma3-4b|smollm2-135m [--layers N] [--seq S] "
                         "[--pos P] [--estimate]\n");
    return 2;
  }
  const std::string name = argv[1];
  nn::DecoderConfig c = name == "gemma3-4b" ? nn::gemma3_4b() : nn::smollm2_135m();
  DimValues dims{{nn::kSeqDim, 1}, {nn::kPosDim, 0}};
  bool estimate_only = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--estimate") {
      estimate_only = true;
    } else if (i + 1 < argc && a == "--layers") {
      c.layers = static_cast<std::size_t>(std::atoi(argv[++i]));
    } else if (i + 1 < argc && a == "--seq") {
      dims[nn::kSeqDim] = std::atoll(argv[++i]);
    } else if (i + 1 < argc && a == "--pos") {
      dims[nn::kPosDim] = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr, "reference_peak: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  GraphBuilder b;
  if (name == "gemma3-4b") {
    nn::gemma3_decoder(b, c);
  } else {
    nn::llama_decoder(b, c);
  }
  const Graph& g = b.graph();
  std::int64_t inputs = 0, all = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    std::int64_t n = 1;
    for (const Expr& d : g.node(id).shape) n *= evaluate(d, dims);
    all += n * kBytesPerHeldElement;
    if (g.node(id).op == Op::Input) inputs += n * kBytesPerHeldElement;
  }
  const std::int64_t predicted = interpreter_peak_bytes(g, dims);
  std::printf("%s, %zu layers, seq %lld, pos %lld: %zu nodes\n", name.c_str(), c.layers,
              static_cast<long long>(dims[nn::kSeqDim]), static_cast<long long>(dims[nn::kPosDim]),
              g.size());
  std::printf("  inputs as doubles %.2f GiB; every value as doubles %.2f GiB; interpreter peak "
              "(predicted) %.2f GiB\n", gib(inputs), gib(all), gib(predicted));
  if (estimate_only) return 0;
  const auto start = std::chrono::steady_clock::now();
  InterpretStats stats;
  const std::map<std::string, Tensor> out = interpret(
      g, dims, [&](NodeId id) { return random_input(g, id, dims, 1); }, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double sum = 0.0;
  for (double v : out.at("logits").data) sum += v;
  std::printf("  interpreter peak (measured) %.2f GiB; %.1f s; logits sum %.6e\n",
              gib(stats.peak_bytes), seconds, sum);
  return 0;
}
