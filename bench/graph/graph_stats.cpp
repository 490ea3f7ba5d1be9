// graph_stats: for each example model, the HLIR node count by op, the chunk and group counts
// from compiler/partition, and the time to build the graph and to partition it (median of 5).
//
//   build/bin/graph_stats [NAME...]     (default: every example)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compiler/partition.hpp"
#include "examples/graphs.hpp"
#include "graph/hlir.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void report(const kiln::examples::Example& e) {
  constexpr int kRuns = 5;
  std::vector<double> build_ms, partition_ms;
  kiln::compiler::Partition p;
  std::map<std::string, std::size_t> by_op;  // ordered: deterministic output
  std::size_t nodes = 0;
  for (int run = 0; run < kRuns; ++run) {
    kiln::graph::GraphBuilder b;
    Clock::time_point t0 = Clock::now();
    e.build(b);
    build_ms.push_back(ms_since(t0));
    Clock::time_point t1 = Clock::now();
    p = kiln::compiler::partition(b.graph());
    partition_ms.push_back(ms_since(t1));
    if (run == 0) {
      const kiln::graph::Graph& g = b.graph();
      nodes = g.size();
      for (kiln::graph::NodeId id = 0; id < g.size(); ++id) {
        ++by_op[std::string(kiln::graph::op_name(g.node(id).op))];
      }
    }
  }
  std::printf("%s: %.*s\n", std::string(e.name).c_str(), static_cast<int>(e.description.size()),
              e.description.data());
  std::printf("  nodes %zu, chunks %zu, groups %zu\n", nodes, p.chunks.size(), p.groups.size());
  std::printf("  by op:");
  for (const auto& [op, n] : by_op) std::printf(" %s %zu", op.c_str(), n);
  std::printf("\n  build %.2f ms, partition %.2f ms (median of %d)\n", median(build_ms),
              median(partition_ms), kRuns);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const kiln::examples::Example*> chosen;
  for (int i = 1; i < argc; ++i) {
    const kiln::examples::Example* e = kiln::examples::find_example(argv[i]);
    if (!e) {
      std::fprintf(stderr, "graph_stats: unknown example \"%s\"\n", argv[i]);
      return 1;
    }
    chosen.push_back(e);
  }
  if (chosen.empty()) {
    for (const auto& e : kiln::examples::examples()) chosen.push_back(&e);
  }
  for (const auto* e : chosen) report(*e);
  return 0;
}
