// `kiln compile NAME`: searches the best checked program for an example model (compiler/) and
// runs it with the per-step report; `kiln explain NAME`: the same search, then why each
// kernel was chosen and what was rejected; `kiln dump-egraph NAME`: one group's e-graph.
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "compiler/chunk_graph.hpp"
#include "compiler/compile.hpp"
#include "compiler/partition.hpp"
#include "engine/dump.hpp"
#include "support/diagnostic.hpp"
#include "support/quoted.hpp"
#include "targets/registry.hpp"
#include "tools/commands.hpp"
#include "tools/model_io.hpp"

namespace kiln::tools {

namespace {

struct CompileCommandOptions {
  std::string name;
  std::string target = "cpu";
  std::vector<std::string> rules;
  std::vector<std::string> dims;
  std::vector<std::string> inputs;
  std::size_t budget = 1000;
  double max_seconds = 60.0;
  std::size_t max_rows = 2'000'000;
  std::string report;
  bool check = false;
  bool quiet = false;
  bool stats = false;
  bool search = false;  // search even when the program cache holds the group's program
  bool schedules = true;
  std::size_t measure_top = 3;
  int runs = 3;
  int top = 12;
  int threads = 0;
  unsigned seed = 1;
  // dump-egraph
  std::string stage = "saturated";
  std::string format = "dot";
  std::size_t group = 1;
};

void add_common(CLI::App* cmd, CompileCommandOptions& o) {
  cmd->add_option("name", o.name, example_names_help())->required();
  cmd->add_option("--target", o.target, target_help());
  cmd->add_option("--rules", o.rules, "More rule files, loaded after the built-in ones");
  cmd->add_option("--dim", o.dims, "A symbolic dim's value, NAME=VALUE (default 8; pos 0)");
  cmd->add_option("--budget", o.budget, "Most kernels measured per group (default 1000)");
  cmd->add_option("--max-seconds", o.max_seconds, "Saturation time limit per run (default 60)");
  cmd->add_option("--max-rows", o.max_rows, "Saturation size limit (default 2000000 rows)");
  cmd->add_option("--seed", o.seed, "Seed of the random inputs");
  cmd->add_flag("--stats", o.stats, "Print each group's saturation report (per-rule matches)");
  cmd->add_flag("--search", o.search,
                "Search every group even when the program cache holds its program");
  cmd->add_flag("--schedules,!--no-schedules", o.schedules,
                "Also try tiled, reordered and split kernels (rules/schedule/; the default)");
  cmd->add_option("--measure-top", o.measure_top,
                  "Candidates per e-class checked and measured besides its library calls and "
                  "one-op kernel, best first by the cost model (default 3; 0: all)")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--threads", o.threads,
                  "Threads for kernels and library calls (default: all cores)")
      ->check(CLI::Range(0, 1 << 20));
}

compiler::CompileOptions compile_options(const CompileCommandOptions& o,
                                         const graph::DimValues& dims) {
  compiler::CompileOptions options;
  for (const std::string& r : o.rules) options.extra_rules.push_back(r);
  options.search.dims = dims;
  options.search.limits.max_seconds = o.max_seconds;
  options.search.limits.max_rows = o.max_rows;
  options.search.max_measurements = o.budget;
  options.search.measure_top = o.measure_top;
  options.search.seed = o.seed;
  options.search.verbose = !o.quiet;
  // Statistics describe a search: one must run.
  options.search.program_cache = !o.search && !o.stats;
  options.schedules = o.schedules;
  return options;
}

std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + support::quoted(items[i]);
  return out + "]";
}

void write_report(const std::string& path, const std::string& model, const std::string& target,
                  const compiler::CompiledProgram& p) {
  std::ostringstream out;
  out << "{\"model\": " << support::quoted(model) << ", \"target\": " << support::quoted(target)
      << ", \"compile_seconds\": " << p.seconds << ", \"steps\": " << p.llir.num_steps()
      << ", \"groups\": [";
  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    const compiler::GroupSummary& g = p.groups[gi];
    const compiler::GroupReport& r = g.program.report;
    out << (gi ? ", " : "") << "{\"members\": [";
    for (std::size_t i = 0; i < g.members.size(); ++i) out << (i ? ", " : "") << g.members[i];
    out << "], \"nodes\": " << g.nodes << ", \"eclasses\": " << r.eclasses
        << ", \"enodes\": " << r.enodes << ", \"candidates\": " << r.candidates
        << ", \"pruned\": " << r.pruned << ", \"checked\": " << r.checked
        << ", \"fallbacks\": " << r.fallbacks << ", \"measured\": " << r.measured
        << ", \"cache_hits\": " << r.cache_hits << ", \"timed_once\": " << r.over_bound
        << ", \"bound_seconds\": "
        << (std::isfinite(r.bound_seconds) ? std::to_string(r.bound_seconds) : "null")
        << ", \"stop_reason\": "
        << support::quoted(r.stop_reason) << ", \"extractions\": " << r.extractions
        << ", \"saturation_seconds\": " << r.saturation_seconds
        << ", \"check_seconds\": " << r.check_seconds
        << ", \"measure_seconds\": " << r.measure_seconds
        << ", \"extract_seconds\": " << r.extract_seconds << ", \"program_seconds\": "
        << r.program_seconds << ", \"one_op_seconds\": " << r.one_op_seconds
        << ", \"kept_one_op\": " << (r.kept_one_op ? "true" : "false")
        << ", \"from_cache\": " << (r.from_cache ? "true" : "false") << ", \"rejected\": [";
    for (std::size_t i = 0; i < r.rejected.size(); ++i) {
      out << (i ? ", " : "") << "{\"what\": " << support::quoted(r.rejected[i].what)
          << ", \"why\": " << support::quoted(r.rejected[i].why)
          << ", \"rules\": " << json_list(r.rejected[i].rules) << "}";
    }
    out << "], \"steps\": [";
    for (std::size_t i = 0; i < g.program.steps.size(); ++i) {
      const compiler::GroupStep& s = g.program.steps[i];
      out << (i ? ", " : "") << "{\"node\": " << (s.node ? std::to_string(*s.node) : "null")
          << ", \"how\": " << support::quoted(s.how)
          << ", \"in_place\": " << (s.in_place ? "true" : "false") << ", \"seconds\": " << s.seconds
          << ", \"measured\": " << (s.measured ? "true" : "false")
          << ", \"rules\": " << json_list(s.rules) << "}";
    }
    out << "]}";
  }
  out << "]}\n";
  std::ofstream file(path);
  file << out.str();
  if (!file) throw support::UserError("--report: cannot write " + path);
}

struct Built {
  graph::GraphBuilder builder;
  graph::DimValues dims;
};

void explain(const compiler::CompiledProgram& p) {
  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    const compiler::GroupSummary& g = p.groups[gi];
    const compiler::GroupReport& r = g.program.report;
    std::cout << "\ngroup " << gi + 1 << " (chunks";
    for (std::size_t m : g.members) std::cout << ' ' << m;
    std::cout << "; " << g.nodes << " HLIR nodes; " << r.eclasses << " e-classes, " << r.enodes
              << " e-nodes after saturation, which stopped: " << r.stop_reason << ")\n";
    std::cout << "  program " << seconds_text(r.program_seconds) << " vs one kernel per op "
              << seconds_text(r.one_op_seconds)
              << (r.kept_one_op ? "  (the one-op program was faster and is kept)" : "") << "\n";
    std::cout << "  chosen:\n";
    for (const compiler::GroupStep& s : g.program.steps) {
      std::cout << "    " << seconds_text(s.seconds) << (s.measured ? "  " : "~ ")
                << (s.node ? "%" + std::to_string(*s.node) : std::string("(new)")) << " as "
                << s.how;
      if (!s.rules.empty()) {
        std::cout << "   rules:";
        for (const std::string& rule : s.rules) std::cout << ' ' << rule;
      }
      std::cout << "\n";
    }
    if (!r.rejected.empty()) {
      std::cout << "  rejected:\n";
      for (const compiler::Rejection& x : r.rejected) {
        std::cout << "    " << x.what << ": " << x.why;
        if (!x.rules.empty()) {
          std::cout << " (rules:";
          for (const std::string& rule : x.rules) std::cout << ' ' << rule;
          std::cout << ")";
        }
        std::cout << "\n";
      }
    }
  }
}

int compile_and_maybe_run(const CompileCommandOptions& o, bool explaining) {
  const examples::Example& example = find_model(o.name);
  graph::GraphBuilder builder;
  example.build(builder);
  const graph::Graph& g = builder.graph();
  const graph::DimValues dims = choose_dims(g, o.dims);
  std::unique_ptr<runtime::Target> target = targets::make_target(o.target);
  const int threads = target->set_threads(o.threads);
  // Times depend on the compiler, its flags and the code generator as much as on the machine,
  // and times measured on N threads are not times on M.
  // A device that a forked worker cannot use (a GPU driver's) is measured in process.
  compiler::SandboxOptions sandbox;
  sandbox.in_process = !target->capabilities().survives_fork;
  compiler::Measurer measurer(*target, {},
                              target->fingerprint() + ";threads " + std::to_string(threads), {},
                              sandbox);
  std::cout << "model " << example.name << " (" << g.size() << " HLIR nodes), dims:";
  for (const auto& [name, value] : dims) std::cout << ' ' << name << '=' << value;
  std::cout << ", target " << o.target << ", threads " << threads << "\n";
  compiler::CompiledProgram p = compiler::compile(g, *target, measurer, compile_options(o, dims));
  std::size_t measured = 0, hits = 0, rejected = 0, cached = 0;
  for (const auto& group : p.groups) {
    measured += group.program.report.measured;
    hits += group.program.report.cache_hits;
    rejected += group.program.report.rejected.size();
    cached += group.program.report.from_cache ? 1 : 0;
  }
  std::cout << "compiled in " << seconds_text(p.seconds) << ": " << p.groups.size()
            << " group(s), " << p.llir.num_steps() << " steps; measured " << measured
            << " kernel(s), " << hits << " from the cache, rejected " << rejected;
  if (cached > 0) std::cout << "; " << cached << " group program(s) from the program cache";
  std::cout << "\n";
  if (!o.report.empty()) write_report(o.report, o.name, o.target, p);
  if (o.stats) {
    for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
      std::cerr << "group " << gi + 1 << " saturation:\n" << p.groups[gi].program.report.rule_stats;
    }
  }
  if (explaining) {
    explain(p);
    return 0;
  }
  const ModelInputs in = make_inputs(g, dims, o.inputs, o.seed);
  return run_and_report(g, p.llir, *target, dims, in, o.runs, o.top, o.check);
}

}  // namespace

Command add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Search the fastest checked program for an example model, then run it");
  add_common(cmd, *o);
  cmd->add_option("--input", o->inputs, "An input from a .npy file, NAME=FILE.npy");
  cmd->add_option("--report", o->report, "Write the compile report as JSON");
  cmd->add_flag("--check", o->check, "Compare every output with the reference interpreter");
  cmd->add_flag("--quiet", o->quiet, "No progress lines");
  cmd->add_option("--runs", o->runs, "Runs to time (default 3)");
  cmd->add_option("--top", o->top, "Steps listed in the report (default 12)");
  return {cmd, [o] { return compile_and_maybe_run(*o, false); }};
}

Command add_explain_command(CLI::App& app) {
  auto o = std::make_shared<CompileCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Compile an example model and explain each choice and each rejection");
  add_common(cmd, *o);
  o->quiet = true;
  o->search = true;  // the explanation is of a search: e-classes, candidates, rejections
  return {cmd, [o] { return compile_and_maybe_run(*o, true); }};
}

Command add_dump_egraph_command(CLI::App& app) {
  auto o = std::make_shared<CompileCommandOptions>();
  CLI::App* cmd = app.add_subcommand("dump-egraph", "Print one group's e-graph");
  add_common(cmd, *o);
  cmd->add_option("--stage", o->stage, "encoded (terms only) or saturated (default)")
      ->check(CLI::IsMember({"encoded", "saturated"}));
  cmd->add_option("--format", o->format, "dot (default) or json")
      ->check(CLI::IsMember({"dot", "json"}));
  cmd->add_option("--group", o->group, "Which group, from 1 (default 1)");
  return {cmd, [o] {
            const examples::Example& example = find_model(o->name);
            graph::GraphBuilder builder;
            example.build(builder);
            const graph::Graph& g = builder.graph();
            std::unique_ptr<runtime::Target> target = targets::make_target(o->target);
            compiler::CompileOptions options = compile_options(*o, choose_dims(g, o->dims));
            options.search.rule_files = compiler::rule_files(options, *target);
            options.search.pipeline = compiler::default_rules_dir() / "pipeline.egg";
            if (options.schedules) {
              options.search.schedules = compiler::default_rules_dir() / "schedule" / "pipeline.egg";
            }
            const compiler::Partition partition = compiler::partition(g);
            if (o->group == 0 || o->group > partition.groups.size()) {
              throw support::UserError("--group " + std::to_string(o->group) + ": the model has " +
                                       std::to_string(partition.groups.size()) + " group(s)");
            }
            const compiler::ChunkGraph chunk = compiler::make_chunk_graph(
                g, partition.chunks[partition.groups[o->group - 1].members[0]]);
            std::ostringstream printed;
            dsl::Session session(printed);
            compiler::encode_group(session, chunk, options.search, o->stage == "saturated");
            std::cout << (o->format == "dot" ? engine::to_dot(session.egraph(), std::nullopt)
                                             : engine::to_json(session.egraph(), std::nullopt));
            return 0;
          }};
}

}  // namespace kiln::tools
