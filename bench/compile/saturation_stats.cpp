// Saturation alone, per group, for the example models: how long the compiler's rule pipeline
// takes on each distinct chunk and how large the e-graph grows. No kernel is compiled,
// measured or checked, so this runs on the full-size Gemma-3-4B graph, whose head is too large
// for the reference interpreter. A program, not a test.
//
//   build/bin/saturation_stats [NAME...]     (default: every example)
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>

#include "compiler/chunk_graph.hpp"
#include "compiler/compile.hpp"
#include "compiler/partition.hpp"
#include "compiler/search.hpp"
#include "dsl/session.hpp"
#include "examples/graphs.hpp"
#include "targets/registry.hpp"

using namespace kiln;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) names.push_back(argv[i]);
  if (names.empty()) {
    for (const auto& e : examples::examples()) names.emplace_back(e.name);
  }
  auto target = targets::make_target("cpu");
  compiler::CompileOptions options;
  compiler::SearchOptions search;
  search.rule_files = compiler::rule_files(options, *target);
  search.pipeline = compiler::default_rules_dir() / "pipeline.egg";
  for (const std::string& name : names) {
    const examples::Example* example = examples::find_example(name);
    if (!example) {
      std::fprintf(stderr, "unknown example %s\n", name.c_str());
      return 1;
    }
    auto start = Clock::now();
    graph::GraphBuilder b;
    example->build(b);
    const double build = since(start);
    start = Clock::now();
    const compiler::Partition p = compiler::partition(b.graph());
    const double partition = since(start);
    std::printf("%s: %zu HLIR nodes, %zu chunks, %zu groups; build %.1f ms, partition %.1f ms\n",
                name.c_str(), b.graph().size(), p.chunks.size(), p.groups.size(), build * 1e3,
                partition * 1e3);
    double total = 0;
    for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
      const compiler::ChunkGraph chunk =
          compiler::make_chunk_graph(b.graph(), p.chunks[p.groups[gi].members[0]]);
      std::ostringstream printed;
      dsl::Session session(printed);
      start = Clock::now();
      compiler::encode_group(session, chunk, search, /*saturate=*/true);
      const double seconds = since(start);
      total += seconds;
      const engine::EGraph& eg = session.egraph();
      std::size_t rows = 0;
      std::set<engine::Value> classes;
      for (engine::FunctionId f = 0; f < eg.num_functions(); ++f) {
        if (eg.function(f).kind != engine::FunctionKind::Constructor) continue;
        const engine::Table& t = eg.table(f);
        rows += t.size();
        for (engine::RowId r = 0; r < t.end(); ++r) {
          if (t.alive(r)) classes.insert(eg.find_const(t.output(r)));
        }
      }
      std::printf("  group %zu (%zu chunk(s) of %zu nodes): %zu e-classes, %zu e-nodes, "
                  "saturated in %.1f ms\n",
                  gi + 1, p.groups[gi].members.size(),
                  p.chunks[p.groups[gi].members[0]].nodes.size(), classes.size(), rows,
                  seconds * 1e3);
    }
    std::printf("  saturation of all groups: %.1f ms\n", total * 1e3);
  }
  return 0;
}
