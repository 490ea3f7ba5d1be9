// `kiln check-rules [RULES...] --on MODEL...`: saturates example graphs with the shipped rule
// files (and RULES), samples the unions each rule made and evaluates both sides on random inputs
// (compiler/check_rules.hpp). Prints one line per rule and an example per failing rule; the exit
// status is 1 when any rule's unions disagree.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>

#include "compiler/check_rules.hpp"
#include "compiler/compile.hpp"
#include "examples/graphs.hpp"
#include "support/diagnostic.hpp"
#include "targets/registry.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {

namespace {

struct CheckRulesCommandOptions {
  std::vector<std::string> rules;
  std::vector<std::string> models;
  std::vector<std::string> dims;
  std::string target = "cpu";
  std::size_t samples = 32;
  double max_seconds = 60.0;
  std::size_t max_rows = 2'000'000;
};

int check_rules_command(const CheckRulesCommandOptions& o) {
  std::unique_ptr<runtime::Target> target = targets::make_target(o.target);
  compiler::CompileOptions compile;
  for (const std::string& r : o.rules) compile.extra_rules.push_back(r);
  compiler::CheckRulesOptions options;
  options.search.rule_files = compiler::rule_files(compile, *target);
  options.search.pipeline = compiler::default_rules_dir() / "pipeline.egg";
  // Every shipped rule is judged, the schedule layer's too.
  const std::filesystem::path schedules = compiler::default_rules_dir() / "schedule" / "pipeline.egg";
  if (std::filesystem::exists(schedules)) options.search.schedules = schedules;
  options.search.limits.max_seconds = o.max_seconds;
  options.search.limits.max_rows = o.max_rows;
  options.samples_per_rule = o.samples;
  std::vector<std::string> models = o.models;
  if (models.empty()) {
    for (const examples::Example& e : examples::examples()) models.emplace_back(e.name);
  }
  std::map<std::string, compiler::RuleCheck> results;
  for (const std::string& name : models) {
    const examples::Example& example = find_model(name);
    graph::GraphBuilder builder;
    example.build(builder);
    options.search.dims = choose_dims(builder.graph(), o.dims);
    std::cerr << "checking rules on " << name << "\n";
    try {
      compiler::check_rules(builder.graph(), options, results);
    } catch (const support::UserError& e) {
      if (!o.models.empty()) throw;  // asked for by name: an error
      std::cerr << "  skipped: " << e.what() << "\n";  // the default list: go on
    }
  }
  std::size_t failing = 0;
  std::cout << std::left << std::setw(44) << "rule" << std::right << std::setw(9) << "sampled"
            << std::setw(10) << "failures" << std::setw(9) << "skipped" << "\n";
  for (const auto& [rule, r] : results) {
    std::cout << std::left << std::setw(44) << rule << std::right << std::setw(9) << r.sampled
              << std::setw(10) << r.failures << std::setw(9) << r.skipped << "\n";
    failing += r.failures > 0;
  }
  for (const auto& [rule, r] : results) {
    if (r.failures) std::cout << "\nrule " << rule << " is unsound: " << r.example << "\n";
  }
  std::cout << "\n" << results.size() << " rules, " << failing << " unsound\n";
  return failing ? 1 : 0;
}

}  // namespace

Command add_check_rules_command(CLI::App& app) {
  auto o = std::make_shared<CheckRulesCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check-rules", "Check every rule's unions on example graphs by evaluating both sides");
  cmd->add_option("rules", o->rules, "More rule files, loaded after the built-in ones");
  cmd->add_option("--on", o->models, "Example models to saturate (default: all)");
  cmd->add_option("--dim", o->dims, "A symbolic dim's value, NAME=VALUE");
  cmd->add_option("--target", o->target, "Whose rule files to check (default cpu)");
  cmd->add_option("--samples", o->samples, "Unions checked per rule and group (default 32)");
  cmd->add_option("--max-seconds", o->max_seconds, "Saturation time limit per run (default 60)");
  cmd->add_option("--max-rows", o->max_rows, "Saturation size limit (default 2000000 rows)");
  return {cmd, [o] { return check_rules_command(*o); }};
}

}  // namespace kiln::tools
