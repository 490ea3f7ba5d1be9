// The verify phase; see verify_program.hpp.
#include "compiler/verify_program.hpp"

#include <cstdio>
#include <cstdlib>

#include "compiler/lower_program.hpp"
#include "graph/compare.hpp"
#include "graph/random_inputs.hpp"
#include "runtime/executor.hpp"
#include "runtime/timer.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

namespace {

// Binds inputs (weights stay on the device) and sets persistent state.
void feed(runtime::Executor& executor, const graph::Graph& g,
          const std::map<std::string, graph::Tensor>& inputs) {
  for (graph::NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != graph::Op::Input) continue;
    const graph::Tensor& t = inputs.at(n.name);
    if (n.persistent) executor.set_state(n.name, t); else executor.bind(n.name, t);
  }
}

// verify_program in this process.
std::string verify_here(const GroupProgram& program, const ChunkGraph& chunk,
                        runtime::Target& target, const GroupReference& reference) {
  const graph::Graph& g = chunk.graph;
  try {
    runtime::Llir llir = standalone_llir(program, g);
    runtime::Executor executor(llir, target);
    feed(executor, g, reference.inputs);
    const std::map<std::string, graph::Tensor> got = executor.run(reference.dims, {});
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      const graph::Node& n = g.node(id);
      if (n.op != graph::Op::Output) continue;
      std::string why = graph::mismatch(
          got.at(n.name).data, reference.values[id],
          graph::tolerance(n.dtype, graph::reduction_length(g, id, reference.dims)),
          id < reference.spread.size() ? reference.spread[id] : std::vector<double>{});
      if (!why.empty()) return "output " + n.name + ": " + why;
    }
  } catch (const std::exception& e) {
    return std::string("it failed to run: ") + e.what();
  }
  return "";
}

}  // namespace

std::string verify_program(const GroupProgram& program, const ChunkGraph& chunk,
                           runtime::Target& target, const GroupReference& reference,
                           const SandboxOptions& sandbox) {
  const JobResult verdict = run_sandboxed(
      [&] { return verify_here(program, chunk, target, reference); }, sandbox);
  return verdict.ok() ? verdict.output : "it failed to run: " + verdict.failure;
}

double time_program(const GroupProgram& program, const ChunkGraph& chunk, runtime::Target& target,
                    Measurer& measurer, const graph::DimValues& dims, unsigned seed) {
  const graph::Graph& g = chunk.graph;
  runtime::Llir llir = standalone_llir(program, g);
  return measurer.time_program(runtime::to_text(llir, true), dims, [&] {
    const JobResult timed = run_sandboxed(
        [&] {
          runtime::Executor executor(llir, target);
          feed(executor, g, graph::random_inputs(g, dims, seed));
          executor.run(dims, {});
          // Weights, state and outputs stay on the device (see Executor::Fetch).
          const double seconds =
              runtime::measure([&](int) {
                                 executor.run(dims, {}, nullptr, runtime::Executor::Fetch::Nothing);
                               },
                               [&] { target.device().synchronize(); })
                  .median_seconds;
          char text[32];
          std::snprintf(text, sizeof text, "%.17g", seconds);
          return std::string(text);
        },
        measurer.sandbox());
    if (!timed.ok()) throw support::UserError("timing a checked program failed: " + timed.failure);
    return std::strtod(timed.output.c_str(), nullptr);
  });
}

}  // namespace kiln::compiler
