// Times small programs compiled by kiln on a target, for scripts/gpu-check's table of ratios
// against PyTorch: `gpu_bench TARGET CASE SIZE [RUNS]` compiles the case's graph through the
// search (constant shapes), runs it RUNS times with its inputs bound on the device, and prints
// `CASE SIZE median_ms X steps N`: X the median over the runs of the summed step times (the
// device synchronized around each step; outputs not fetched).
//
// Cases (f32 unless named):
//   elementwise N   y = relu(x * 2 + 1) * x over N elements (the peer: a device copy of N)
//   softmax N       softmax over the rows of a [N, N] matrix
//   matmul N        [N, N] x [N, N];  matmul_bf16 N the same in bf16
//   attention N D   softmax(q k^T / sqrt(D) + causal mask) v, q, k, v [N, D]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "compiler/compile.hpp"
#include "compiler/measure.hpp"
#include "graph/random_inputs.hpp"
#include "graph/tensor.hpp"
#include "runtime/executor.hpp"
#include "support/diagnostic.hpp"
#include "targets/registry.hpp"

using namespace kiln;
using graph::DType;
using graph::GraphBuilder;
using graph::GraphTensor;

namespace {

void build(GraphBuilder& b, const std::string& name, std::int64_t n, std::int64_t d) {
  if (name == "elementwise") {
    GraphTensor x = b.input("x", {n});
    (relu(x * 2.0 + 1.0) * x).output("y");
  } else if (name == "softmax") {
    softmax(b.input("x", {n, n}), 1).output("y");
  } else if (name == "matmul" || name == "matmul_bf16") {
    const DType t = name == "matmul" ? DType::F32 : DType::BF16;
    matmul(b.input("a", {n, n}, t), b.input("b", {n, n}, t)).output("y");
  } else if (name == "attention") {
    GraphTensor q = b.input("q", {n, d});
    GraphTensor k = b.input("k", {n, d});
    GraphTensor v = b.input("v", {n, d});
    GraphTensor scores = matmul(q, transpose(k, 0, 1)) * (1.0 / std::sqrt(double(d)));
    matmul(softmax(scores + b.causal_mask(n, n), 1), v).output("y");
  } else {
    throw support::UserError("unknown case '" + name +
                             "' (elementwise, softmax, matmul, matmul_bf16, attention)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: gpu_bench TARGET CASE SIZE [RUNS] [D]\n";
    return 2;
  }
  try {
    const std::string name = argv[2];
    const std::int64_t n = std::stoll(argv[3]);
    const int runs = argc > 4 ? std::stoi(argv[4]) : 10;
    const std::int64_t d = argc > 5 ? std::stoll(argv[5]) : 64;
    GraphBuilder b;
    build(b, name, n, d);
    const graph::Graph& g = b.graph();
    std::unique_ptr<runtime::Target> target = targets::make_target(argv[1]);
    compiler::SandboxOptions sandbox;
    sandbox.in_process = !target->capabilities().survives_fork;
    compiler::Measurer measurer(*target, {}, target->fingerprint(), {}, sandbox);
    compiler::CompileOptions options;
    options.search.verbose = false;
    const compiler::CompiledProgram p = compiler::compile(g, *target, measurer, options);
    runtime::Executor executor(p.llir, *target);
    for (const auto& [input, t] : graph::random_inputs(g, {}, 1)) executor.bind(input, t);
    executor.run({}, {});  // warm up: first launches, the arena
    std::vector<double> times;
    for (int r = 0; r < std::max(1, runs); ++r) {
      runtime::RunProfile profile;
      executor.run({}, {}, &profile, runtime::Executor::Fetch::Nothing);
      double kernels = 0.0;
      for (const runtime::StepTime& s : profile.steps) kernels += s.seconds;
      times.push_back(kernels);
    }
    std::sort(times.begin(), times.end());
    std::printf("%s %lld median_ms %.4f steps %zu\n", name.c_str(), static_cast<long long>(n),
                times[times.size() / 2] * 1e3, p.llir.num_steps());
    return 0;
  } catch (const support::UserError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
