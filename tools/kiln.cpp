// The `kiln` command line. `kiln egg FILE.egg` runs a rule-language program and prints what it
// prints; later subcommands (compile, run, explain) arrive with the compiler.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/dump.hpp"
#include "examples/graphs.hpp"
#include "graph/hlir.hpp"
#include "support/diagnostic.hpp"

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

// `kiln graph NAME`: an example model's HLIR as text, or as egglog commands for rules/hlir.egg.
static int run_graph(const std::string& name, bool egglog) {
  const kiln::examples::Example* example = kiln::examples::find_example(name);
  if (!example) {
    std::cerr << "error: unknown example \"" << name << "\"; known:";
    for (const auto& e : kiln::examples::examples()) std::cerr << ' ' << e.name;
    std::cerr << "\n";
    return 1;
  }
  kiln::graph::GraphBuilder b;
  example->build(b);
  std::cout << (egglog ? kiln::graph::to_egglog(b.graph()) : kiln::graph::to_text(b.graph()));
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"kiln: a superoptimizer for machine-learning programs"};
  app.require_subcommand(1);

  EggOptions egg;
  CLI::App* egg_cmd = app.add_subcommand("egg", "Run a program in the egglog rule language");
  egg_cmd->add_option("files", egg.files, "Program files, run in order")->required()->check(CLI::ExistingFile);
  egg_cmd->add_flag("--graph-sorts", egg.graph_sorts,
                    "Add kiln's Expr, Shape and View sorts (for rules/hlir.egg and graph dumps)");
  egg_cmd->add_flag("--stats", egg.stats, "Print the run report (per-rule matches and times) to stderr");
  egg_cmd->add_option("--dot", egg.dot_path, "Write the final e-graph as Graphviz DOT");
  egg_cmd->add_option("--json", egg.json_path, "Write the final e-graph as JSON");
  egg_cmd->add_option("--root", egg.dump_root, "Dump only what is reachable from this global");
  egg_cmd->add_option("--max-iterations", egg.max_iterations, "Stop each run after this many iterations");
  egg_cmd->add_option("--max-rows", egg.max_rows, "Stop a run once the e-graph has more rows");
  egg_cmd->add_option("--max-seconds", egg.max_seconds, "Stop a run after this many seconds");
  egg_cmd->add_option("--match-limit", egg.match_limit,
                      "Ban a rule for a while when one iteration finds more matches (back-off)");

  std::string graph_name;
  bool graph_text = false, graph_egglog = false;
  CLI::App* graph_cmd = app.add_subcommand("graph", "Print an example model's HLIR graph");
  graph_cmd->add_option("name", graph_name, "mlp, attention, smollm2-135m or gemma3-4b")
      ->required();
  CLI::Option* text_flag = graph_cmd->add_flag("--text", graph_text, "HLIR text (the default)");
  graph_cmd->add_flag("--egglog", graph_egglog, "egglog commands for rules/hlir.egg")
      ->excludes(text_flag);

  CLI11_PARSE(app, argc, argv);
  if (graph_cmd->parsed()) return run_graph(graph_name, graph_egglog);
  if (egg_cmd->parsed()) return run_egg(egg);
  return 0;
}
