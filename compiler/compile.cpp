// The compiler's top level; see compile.hpp.
#include "compiler/compile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>

#include "compiler/chunk_graph.hpp"
#include "compiler/group_cache.hpp"
#include "compiler/lower_program.hpp"
#include "compiler/partition.hpp"
#include "graph/views_in_bounds.hpp"
#include "support/diagnostic.hpp"

#ifndef KILN_SOURCE_RULES_DIR
#define KILN_SOURCE_RULES_DIR "rules"
#endif

namespace kiln::compiler {

namespace fs = std::filesystem;
using graph::NodeId;

fs::path default_rules_dir() {
  if (const char* dir = std::getenv("KILN_RULES_DIR"); dir && *dir) return dir;
  return KILN_SOURCE_RULES_DIR;
}

std::vector<fs::path> rule_files(const CompileOptions& options, const runtime::Target& target) {
  const fs::path dir = options.rules_dir.empty() ? default_rules_dir() : options.rules_dir;
  if (!fs::exists(dir / "hlir.egg")) {
    throw support::UserError("compile: no rules/hlir.egg under " + dir.string() +
                             " (set KILN_RULES_DIR)");
  }
  // Every rule file of the folder, at any depth, in path order: a new file is picked up by
  // dropping it in (its stage is one line of pipeline.egg). Each depends only on hlir.egg.
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const fs::path& p = e.path();
    if (e.is_regular_file() && p.extension() == ".egg" && p != dir / "hlir.egg" &&
        p.filename() != "pipeline.egg") {
      found.push_back(p);
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> files{dir / "hlir.egg"};
  files.insert(files.end(), found.begin(), found.end());
  for (const fs::path& f : target.rule_files()) files.push_back(f);
  for (const fs::path& f : options.extra_rules) {
    if (!fs::exists(f)) throw support::UserError("rule file " + f.string() + ": no such file");
    files.push_back(f);
  }
  return files;
}

CompiledProgram compile(const graph::Graph& g, runtime::Target& target, Measurer& measurer,
                        const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  graph::validate(g);
  graph::check_views_in_bounds(g, options.search.dims);
  CompiledProgram out;
  SearchOptions search = options.search;
  search.rule_files = rule_files(options, target);
  const fs::path dir = options.rules_dir.empty() ? default_rules_dir() : options.rules_dir;
  if (fs::exists(dir / "pipeline.egg")) search.pipeline = dir / "pipeline.egg";
  if (options.schedules) {
    search.schedules = dir / "schedule" / "pipeline.egg";
    if (!fs::exists(search.schedules)) {
      throw support::UserError("compile: schedules asked for, but there is no " +
                               search.schedules.string());
    }
  }

  const Partition partition = compiler::partition(g);
  std::vector<ChunkGraph> chunk_graphs;
  for (const Chunk& c : partition.chunks) chunk_graphs.push_back(make_chunk_graph(g, c));

  // Every graph input first: a chunk may read an input added in an earlier chunk.
  std::map<NodeId, runtime::ValueId> value_of;
  for (NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op == graph::Op::Input) {
      value_of[id] = out.llir.add_input(n.name, n.dtype, n.shape, n.persistent);
    }
  }

  for (std::size_t gi = 0; gi < partition.groups.size(); ++gi) {
    const ChunkGroup& group = partition.groups[gi];
    const ChunkGraph& rep = chunk_graphs[group.members[0]];
    if (search.verbose) {
      std::cerr << "group " << gi + 1 << "/" << partition.groups.size() << ": "
                << group.members.size() << " chunk(s) of " << partition.chunks[group.members[0]].nodes.size()
                << " nodes\n";
    }
    GroupSummary summary;
    summary.members = group.members;
    summary.nodes = partition.chunks[group.members[0]].nodes.size();
    summary.program = search_group_cached(rep, target, measurer, search);
    if (search.verbose && summary.program.report.from_cache) {
      std::cerr << "  from the program cache\n";
    } else if (search.verbose) {
      const GroupReport& r = summary.program.report;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double eta = elapsed / static_cast<double>(gi + 1) *
                         static_cast<double>(partition.groups.size() - gi - 1);
      std::cerr << "  " << r.eclasses << " e-classes, " << r.candidates << " candidates, "
                << r.pruned << " ranked out, " << r.checked << " checked, " << r.rejected.size()
                << " rejected, "
                << (r.fallbacks ? std::to_string(r.fallbacks) + " one-op restored, " : "")
                << r.measured
                << " measured (" << r.cache_hits << " cached"
                << (r.over_bound ? ", " + std::to_string(r.over_bound) +
                                       " by one run: slower than a whole program"
                                 : std::string())
                << "); best "
                << (r.kept_one_op ? r.one_op_seconds : r.program_seconds) * 1e3 << " ms (one-op "
                << (r.one_op_seconds > 0 ? std::to_string(r.one_op_seconds * 1e3) + " ms"
                                         : std::string("none"))
                << "); elapsed " << elapsed << " s, ETA " << eta
                << " s\n";
    }
    out.groups.push_back(std::move(summary));
  }

  // Instantiate each chunk's group program, in chunk order (producers come first).
  for (std::size_t ci = 0; ci < partition.chunks.size(); ++ci) {
    const std::size_t gi = partition.group_of_chunk[ci];
    const ChunkGroup& group = partition.groups[gi];
    const ChunkGraph& rep = chunk_graphs[group.members[0]];
    const Chunk& rep_chunk = partition.chunks[group.members[0]];
    const GroupProgram& program = out.groups[gi].program;
    // Rep chunk-graph node -> this chunk's original node.
    auto member_node = [&](NodeId sub) -> NodeId {
      NodeId rep_original = rep.original[sub];
      if (ci == group.members[0]) return rep_original;
      auto mapped = partition.map_node(ci, rep_original);
      KILN_ASSERT(mapped.has_value(), "compile: a group member lacks a node");
      return *mapped;
    };
    auto input_value = [&](NodeId sub) -> runtime::ValueId {
      auto k = std::find(rep.input_nodes.begin(), rep.input_nodes.end(), sub);
      NodeId original;
      if (k != rep.input_nodes.end()) {  // a boundary input
        NodeId rep_producer = rep_chunk.inputs[static_cast<std::size_t>(k - rep.input_nodes.begin())];
        if (ci == group.members[0]) {
          original = rep_producer;
        } else {
          auto mapped = partition.map_input(ci, rep_producer);
          KILN_ASSERT(mapped.has_value(), "compile: a group member lacks a boundary input");
          original = *mapped;
        }
      } else {
        original = member_node(sub);
      }
      auto it = value_of.find(original);
      KILN_ASSERT(it != value_of.end(), "compile: %" + std::to_string(original) +
                                            " is read before it is computed");
      return it->second;
    };
    auto label = [&](const GroupStep& s) {
      if (!s.node) return s.how;
      const NodeId original = member_node(*s.node);
      return "%" + std::to_string(original) + " " +
             std::string(graph::op_name(g.node(original).op)) +
             (s.how == "kernel" ? "" : " as " + s.how);
    };
    std::map<NodeId, runtime::ValueId> results =
        instantiate(program, out.llir, input_value, label);
    for (const auto& [sub, value] : results) {
      const NodeId original = member_node(sub);
      const graph::Node& n = g.node(original);
      const bool boundary = std::find(rep.output_nodes.begin(), rep.output_nodes.end(), sub) !=
                            rep.output_nodes.end();
      value_of[original] = value;
      if (!boundary && n.op == graph::Op::Output) out.llir.add_output(n.name, value);
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler
