// What running candidates in worker processes costs (compiler/sandbox.hpp): the same small
// kernels run in process (the peer), one worker per run, and one worker per batch, with the
// compiler holding little memory and then 1 GiB (fork copies page tables). Prints times and
// ratios to the in-process run; run by hand: build/bin/sandbox_overhead [runs].
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/measure.hpp"
#include "graph/body.hpp"
#include "targets/cpu/target.hpp"

using namespace kiln;
using graph::DType;
using graph::Expr;

namespace {

// out[o] = exp2(sum_r x[o, r] * y[r]) over n rows of 64: a typical small checked kernel.
graph::Body dot_body() {
  graph::BodyBuilder b({DType::F32, DType::F32});
  Expr o = b.output_loop(Expr::dim("n"));
  std::string r = b.reduce_var();
  graph::ScalarId x = b.load(0, o * 64 + Expr::dim(r));
  graph::ScalarId y = b.load(1, Expr::dim(r));
  graph::ScalarId sum = b.reduce(b.sum_monoid(DType::F32), r, Expr(64),
                                 {b.binary(graph::ScalarOp::Mul, x, y)}, DType::F32);
  return b.finish(b.unary(graph::ScalarOp::Exp2, sum), Expr::dim("n"), o);
}

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 200;
  const graph::DimValues dims = {{"n", 64}};
  std::unique_ptr<runtime::Target> target = targets::make_cpu_target(
      std::filesystem::temp_directory_path() / "kiln-bench-sandbox-kernels");
  const std::filesystem::path cache = std::filesystem::temp_directory_path() / "kiln-bench-sandbox";
  compiler::SandboxOptions in_process;
  in_process.in_process = true;
  compiler::Measurer here(*target, cache, "", {}, in_process);
  compiler::Measurer sandboxed(*target, cache, "", {}, {});
  const compiler::Candidate c = compiler::body_candidate(dot_body(), {64 * 64, 64}, dims);
  const std::vector<std::vector<double>> inputs =
      compiler::random_inputs(c, dims, 1);
  const std::vector<compiler::Candidate> batch(static_cast<std::size_t>(runs), c);
  const std::vector<std::vector<std::vector<double>>> batch_inputs(batch.size(), inputs);
  here.prepare({c}, dims);
  sandboxed.prepare({c}, dims);

  std::vector<char> ballast;
  std::printf("%-26s %12s %14s %14s %12s %12s %10s\n", "compiler memory", "runs",
              "in process s", "worker/run s", "batch s", "per run", "per batch");
  for (std::size_t mib : {0, 1024}) {
    ballast.assign(mib << 20, 1);  // touched, so the pages exist
    const double in = seconds_of([&] { here.try_run_all(batch, batch_inputs, dims); });
    const double each = seconds_of([&] {
      for (int i = 0; i < runs; ++i) sandboxed.try_run(c, inputs, dims);
    });
    const double one = seconds_of([&] { sandboxed.try_run_all(batch, batch_inputs, dims); });
    std::printf("%-26s %12d %14.4f %14.4f %12.4f %11.1fx %9.1fx\n",
                (std::to_string(mib) + " MiB ballast").c_str(), runs, in, each, one, each / in,
                one / in);
  }
  std::printf("(per run: one worker per run over in process; per batch: one worker for all)\n");
  return 0;
}
