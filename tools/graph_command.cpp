// `kiln graph NAME`: an example model's HLIR as text, or as egglog commands for rules/hlir.egg.
#include <iostream>
#include <memory>

#include "examples/graphs.hpp"
#include "graph/hlir.hpp"
#include "tools/commands.hpp"
#include "tools/model_io.hpp"

namespace kiln::tools {

Command add_graph_command(CLI::App& app) {
  struct Options {
    std::string name;
    bool text = false;
    bool egglog = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("graph", "Print an example model's HLIR graph");
  cmd->add_option("name", options->name, example_names_help())->required();
  CLI::Option* text_flag = cmd->add_flag("--text", options->text, "HLIR text (the default)");
  cmd->add_flag("--egglog", options->egglog, "egglog commands for rules/hlir.egg")
      ->excludes(text_flag);
  return {cmd, [options] {
            graph::GraphBuilder b;
            find_model(options->name).build(b);
            std::cout << (options->egglog ? graph::to_egglog(b.graph())
                                          : graph::to_text(b.graph()));
            return 0;
          }};
}

}  // namespace kiln::tools
