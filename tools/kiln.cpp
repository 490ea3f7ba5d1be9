// The `kiln` command line: one subcommand per file in tools/.
//   kiln egg FILES      run rule-language programs (egglog's dialect)
//   kiln graph NAME     print an example model's HLIR
//   kiln run NAME       run an example model on a target, one kernel per op, with a report
//   kiln compile NAME   search the fastest checked program, then run it with a report
//   kiln explain NAME   the search's choices and rejections
//   kiln dump-egraph    one group's e-graph (DOT or JSON)
//   kiln check-rules    each rule's unions checked by evaluating both sides
//   kiln generate       generate text with a LLaMA model from a GGUF file
//   kiln tokenize       token ids of a text under a GGUF file's tokenizer
// A user's mistake exits with status 1, an internal error with 70 (tools/exit_status.hpp).
#include <CLI/CLI.hpp>

#include <iostream>
#include <vector>

#include "targets/cpu/threads.hpp"
#include "tools/commands.hpp"
#include "tools/exit_status.hpp"

int main(int argc, char** argv) {
  // OpenBLAS (linked for the CPU target) starts threads that poll for ~0.1 s when it is loaded;
  // every command, `kiln egg` too, would share the cores with them.
  kiln::targets::cpu::stop_blas_threads();
  CLI::App app{"kiln: a superoptimizer for machine-learning programs"};
  app.require_subcommand(1);
  std::vector<kiln::tools::Command> commands = {
      kiln::tools::add_egg_command(app),
      kiln::tools::add_graph_command(app),
      kiln::tools::add_run_command(app),
      kiln::tools::add_compile_command(app),
      kiln::tools::add_explain_command(app),
      kiln::tools::add_dump_egraph_command(app),
      kiln::tools::add_check_rules_command(app),
      kiln::tools::add_generate_command(app),
      kiln::tools::add_tokenize_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints and succeeds; a malformed command line is a user's mistake: status 1, as
    // for every other one (CLI11's own codes are 100 and up).
    return app.exit(e) == 0 ? 0 : 1;
  }
  for (const kiln::tools::Command& c : commands) {
    if (c.app->parsed()) return kiln::tools::run_reporting_errors(c.run, std::cout, std::cerr);
  }
  return 0;
}
