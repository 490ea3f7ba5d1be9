// The `kiln` subcommands. Each adds itself to the CLI and returns what to run when parsed.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace kiln::tools {

struct Command {
  CLI::App* app;
  std::function<int()> run;  // the exit status
};

Command add_egg_command(CLI::App& app);    // egg_command.cpp
Command add_graph_command(CLI::App& app);  // graph_command.cpp
Command add_run_command(CLI::App& app);    // run_command.cpp

}  // namespace kiln::tools
