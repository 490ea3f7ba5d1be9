// `kiln egg FILES`: runs programs in the rule language (egglog's dialect) and prints what they
// print; optional run limits, a run report, and dumps of the final e-graph.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/dump.hpp"
#include "support/diagnostic.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {

namespace {

struct EggOptions {
  std::vector<std::string> files;
  bool stats = false;
  bool graph_sorts = false;
  std::string dot_path;
  std::string json_path;
  std::string dump_root;
  std::optional<std::uint64_t> max_iterations;
  std::optional<std::size_t> max_rows;
  std::optional<double> max_seconds;
  std::optional<std::uint64_t> match_limit;
};

int run_egg(const EggOptions& options) {
  kiln::dsl::Session session(std::cout);
  // kiln's Expr, Shape and View sorts, for rules/hlir.egg and graphs printed by
  // graph::to_egglog. Opt-in: plain egglog programs often declare their own `Expr`.
  if (options.graph_sorts) kiln::compiler::register_graph_sorts(session.egraph());
  kiln::engine::RunLimits limits;
  limits.max_iterations = options.max_iterations;
  limits.max_rows = options.max_rows;
  limits.max_seconds = options.max_seconds;
  limits.match_limit = options.match_limit;
  session.set_limits(limits);
  int status = 0;
  try {
    for (const std::string& file : options.files) session.run_file(file);
  } catch (const kiln::support::UserError& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    status = 1;
  }
  if (options.stats) std::cerr << session.total_report().summary();
  std::optional<kiln::engine::Value> root;
  if (!options.dump_root.empty()) {
    const kiln::dsl::Global* global = session.global(options.dump_root);
    if (!global || !session.egraph().is_eq(global->sort)) {
      std::cerr << "error: --root " << options.dump_root << " is not a global e-class\n";
      return 1;
    }
    root = global->value;
  }
  if (!options.dot_path.empty()) {
    std::ofstream dot(options.dot_path);
    dot << kiln::engine::to_dot(session.egraph(), root);
  }
  if (!options.json_path.empty()) {
    std::ofstream json(options.json_path);
    json << kiln::engine::to_json(session.egraph(), root);
  }
  return status;
}

}  // namespace

Command add_egg_command(CLI::App& app) {
  auto options = std::make_shared<EggOptions>();
  CLI::App* egg_cmd = app.add_subcommand("egg", "Run a program in the egglog rule language");
  egg_cmd->add_option("files", options->files, "Program files, run in order")->required()->check(CLI::ExistingFile);
  egg_cmd->add_flag("--graph-sorts", options->graph_sorts,
                    "Add kiln's Expr, Shape and View sorts (for rules/hlir.egg and graph dumps)");
  egg_cmd->add_flag("--stats", options->stats, "Print the run report (per-rule matches and times) to stderr");
  egg_cmd->add_option("--dot", options->dot_path, "Write the final e-graph as Graphviz DOT");
  egg_cmd->add_option("--json", options->json_path, "Write the final e-graph as JSON");
  egg_cmd->add_option("--root", options->dump_root, "Dump only what is reachable from this global");
  egg_cmd->add_option("--max-iterations", options->max_iterations, "Stop each run after this many iterations");
  egg_cmd->add_option("--max-rows", options->max_rows, "Stop a run once the e-graph has more rows");
  egg_cmd->add_option("--max-seconds", options->max_seconds, "Stop a run after this many seconds");
  egg_cmd->add_option("--match-limit", options->match_limit,
                      "Ban a rule for a while when one iteration finds more matches (back-off)");
  return {egg_cmd, [options] { return run_egg(*options); }};
}

}  // namespace kiln::tools
