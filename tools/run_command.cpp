// `kiln run NAME`: runs an example model on a target, one kernel per HLIR op (no search: the
// baseline `kiln compile` improves on), and prints the outputs' checksums, the time of each
// kernel and the total. Inputs are random unless given as .npy files; persistent state starts
// at zero. `--check` runs the reference interpreter on the same inputs and compares.
#include <iostream>
#include <memory>

#include "runtime/lower_one_op.hpp"
#include "targets/registry.hpp"
#include "tools/commands.hpp"
#include "tools/model_io.hpp"

namespace kiln::tools {

namespace {

struct RunOptions {
  std::string name;
  std::string target = "cpu";
  std::vector<std::string> dims;
  std::vector<std::string> inputs;
  bool check = false;
  int runs = 3;
  int top = 12;
  int threads = 0;
  unsigned seed = 1;
};

}  // namespace

std::string target_help() {
  std::string text = "The target (default cpu):";
  for (const std::string& name : targets::target_names()) text += " " + name;
  return text;
}

Command add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run an example model, one kernel per op, with a report");
  cmd->add_option("name", o->name, example_names_help())->required();
  cmd->add_option("--target", o->target, target_help());
  cmd->add_option("--dim", o->dims, "A symbolic dim's value, NAME=VALUE (default 8; pos 0)");
  cmd->add_option("--input", o->inputs, "An input from a .npy file, NAME=FILE.npy");
  cmd->add_flag("--check", o->check, "Compare every output with the reference interpreter");
  cmd->add_option("--runs", o->runs, "Runs to time (default 3)");
  cmd->add_option("--top", o->top, "Kernels listed in the report (default 12)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs");
  cmd->add_option("--threads", o->threads,
                  "Threads for kernels and library calls (default: all cores)")
      ->check(CLI::Range(0, 1 << 20));
  return {cmd, [o] {
            const examples::Example& example = find_model(o->name);
            graph::GraphBuilder builder;
            example.build(builder);
            const graph::Graph& g = builder.graph();
            const graph::DimValues dims = choose_dims(g, o->dims);
            const ModelInputs in = make_inputs(g, dims, o->inputs, o->seed);
            std::unique_ptr<runtime::Target> target = targets::make_target(o->target);
            const int threads = target->set_threads(o->threads);
            std::cout << "model " << example.name << " (" << g.size() << " HLIR nodes), dims:";
            for (const auto& [name, value] : dims) std::cout << ' ' << name << '=' << value;
            std::cout << ", target " << o->target << ", threads " << threads
                      << ", one kernel per op\n";
            return run_and_report(g, runtime::lower_one_op(g), *target, dims, in, o->runs,
                                  o->top, o->check);
          }};
}

}  // namespace kiln::tools
