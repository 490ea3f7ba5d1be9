// The `kiln` subcommands. Each adds itself to the CLI and returns what to run when parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "tools/model_io.hpp"

namespace kiln::tools {

struct Command {
  CLI::App* app;
  std::function<int()> run;  // the exit status
};

Command add_egg_command(CLI::App& app);    // egg_command.cpp
Command add_graph_command(CLI::App& app);  // graph_command.cpp
Command add_run_command(CLI::App& app);    // run_command.cpp
Command add_compile_command(CLI::App& app);  // compile_command.cpp: compile, explain
Command add_explain_command(CLI::App& app);
Command add_dump_egraph_command(CLI::App& app);
Command add_check_rules_command(CLI::App& app);  // check_rules_command.cpp
Command add_generate_command(CLI::App& app);     // generate_command.cpp
Command add_tokenize_command(CLI::App& app);     // tokenize_command.cpp

// The help text of --target: the targets built in (run_command.cpp).
std::string target_help();

}  // namespace kiln::tools
