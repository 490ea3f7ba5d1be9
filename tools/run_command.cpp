// `kiln run NAME`: runs an example model on a target, one kernel per HLIR op (the compiler's
// search arrives with `kiln compile`), and prints the outputs' checksums, the time of each
// kernel and the total. Inputs are random (weights scaled by 1/sqrt(fan-in); index inputs in
// range) unless given as .npy files; persistent state starts at zero. `--check` runs the
// reference interpreter on the same inputs and compares every output.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "examples/graphs.hpp"
#include "graph/interpret.hpp"
#include "graph/npy.hpp"
#include "runtime/executor.hpp"
#include "runtime/lower_one_op.hpp"
#include "support/diagnostic.hpp"
#include "targets/registry.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {

namespace {

using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::Op;
using graph::Tensor;
using support::UserError;

struct RunOptions {
  std::string name;
  std::string target = "cpu";
  std::vector<std::string> dims;    // NAME=VALUE
  std::vector<std::string> inputs;  // NAME=FILE.npy
  bool check = false;
  int runs = 3;
  int top = 12;
  unsigned seed = 1;
};

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* what) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UserError(std::string("--") + what + " expects NAME=VALUE, got \"" + text + "\"");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// Every symbolic dim of the graph, with a default value (`pos` 0, others 8) unless given.
graph::DimValues choose_dims(const Graph& g, const std::vector<std::string>& given) {
  std::set<std::string> names;
  for (NodeId id = 0; id < g.size(); ++id) {
    for (const graph::Expr& d : g.node(id).shape) {
      for (const std::string& n : graph::free_dims(d)) names.insert(n);
    }
  }
  graph::DimValues dims;
  for (const std::string& n : names) dims[n] = n == "pos" ? 0 : 8;
  for (const std::string& text : given) {
    auto [name, value] = split_assignment(text, "dim");
    if (!names.count(name)) throw UserError("--dim " + name + ": the model has no such dim");
    try {
      dims[name] = std::stoll(value);
    } catch (const std::exception&) {
      throw UserError("--dim " + name + ": \"" + value + "\" is not an integer");
    }
    if (dims[name] < 0) throw UserError("--dim " + name + ": must not be negative");
  }
  return dims;
}

// The exclusive upper bound for values of integer input `id`: the row count of a table it
// indexes (Gather, Scatter), else 8.
std::int64_t index_bound(const Graph& g, NodeId id, const graph::DimValues& dims) {
  for (NodeId user : g.users(id)) {
    const graph::Node& n = g.node(user);
    if (n.op != Op::Gather && n.op != Op::Scatter) continue;
    std::vector<Graph::Input> ins = g.inputs(user);
    if (ins.size() > 1 && ins[1].producer == id) {
      return graph::evaluate(ins[0].edge->view.shape()[0], dims);
    }
  }
  return 8;
}

Tensor random_input(const Graph& g, NodeId id, const graph::DimValues& dims, std::mt19937& rng) {
  const graph::Node& n = g.node(id);
  Tensor t{n.dtype, {}, {}};
  for (const graph::Expr& d : n.shape) t.shape.push_back(graph::evaluate(d, dims));
  const auto count = static_cast<std::size_t>(graph::numel(t.shape));
  t.data.resize(count);
  if (graph::is_float(n.dtype)) {
    const double fan_in = t.shape.empty() ? 1.0 : static_cast<double>(std::max<std::int64_t>(1, t.shape.back()));
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (double& v : t.data) {
      do v = dist(rng) / std::sqrt(fan_in); while (v == 0.0);  // never zeros
      v = graph::round_to_dtype(v, n.dtype);
    }
  } else {
    std::uniform_int_distribution<std::int64_t> dist(0, std::max<std::int64_t>(1, index_bound(g, id, dims)) - 1);
    for (double& v : t.data) v = static_cast<double>(dist(rng));
  }
  return t;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string seconds_text(double s) {
  char buffer[32];
  if (s < 1e-3) std::snprintf(buffer, sizeof buffer, "%8.1f us", s * 1e6);
  else if (s < 1.0) std::snprintf(buffer, sizeof buffer, "%8.3f ms", s * 1e3);
  else std::snprintf(buffer, sizeof buffer, "%8.3f s ", s);
  return buffer;
}

int run(const RunOptions& o) {
  const examples::Example* example = examples::find_example(o.name);
  if (!example) {
    std::string known;
    for (const auto& e : examples::examples()) known += " " + std::string(e.name);
    throw UserError("unknown example \"" + o.name + "\"; known:" + known);
  }
  graph::GraphBuilder builder;
  example->build(builder);
  const Graph& g = builder.graph();
  const graph::DimValues dims = choose_dims(g, o.dims);

  std::map<std::string, std::string> files;
  for (const std::string& text : o.inputs) {
    auto [name, file] = split_assignment(text, "input");
    files[name] = file;
  }
  std::mt19937 rng(o.seed);
  std::map<std::string, Tensor> inputs, states;
  for (NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != Op::Input) continue;
    if (n.persistent) {
      Tensor zeros{n.dtype, {}, {}};
      for (const graph::Expr& d : n.shape) zeros.shape.push_back(graph::evaluate(d, dims));
      zeros.data.assign(static_cast<std::size_t>(graph::numel(zeros.shape)), 0.0);
      states[n.name] = zeros;
      continue;
    }
    auto file = files.find(n.name);
    if (file != files.end()) {
      inputs[n.name] = graph::read_npy(file->second);
      files.erase(file);
    } else {
      inputs[n.name] = random_input(g, id, dims, rng);
    }
  }
  if (!files.empty()) throw UserError("--input " + files.begin()->first + ": the model has no such input");

  std::cout << "model " << example->name << " (" << g.size() << " HLIR nodes), dims:";
  for (const auto& [name, value] : dims) std::cout << ' ' << name << '=' << value;
  std::cout << ", target " << o.target << "\n";

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const runtime::Llir llir = runtime::lower_one_op(g);
  std::unique_ptr<runtime::Target> target = targets::make_target(o.target);
  runtime::Executor executor(llir, *target);
  const double prepare = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << "prepared " << llir.num_steps() << " steps in " << seconds_text(prepare) << "\n";

  std::map<std::string, Tensor> outputs;
  runtime::RunProfile profile;
  std::vector<double> totals;
  for (int r = 0; r < std::max(1, o.runs); ++r) {
    for (const auto& [name, t] : states) executor.set_state(name, t);  // every run alike
    outputs = executor.run(dims, inputs, &profile);
    totals.push_back(profile.total_seconds);
  }
  std::sort(totals.begin(), totals.end());

  std::cout << "\noutputs:\n";
  for (const auto& [name, t] : outputs) {
    double sum = 0.0, l1 = 0.0;
    for (double v : t.data) {
      sum += v;
      l1 += std::fabs(v);
    }
    std::printf("  %-24s %-5s %-16s sum %.6e  mean|x| %.6e\n", name.c_str(),
                std::string(graph::dtype_name(t.dtype)).c_str(), shape_text(t.shape).c_str(),
                sum, t.data.empty() ? 0.0 : l1 / static_cast<double>(t.data.size()));
  }

  std::vector<runtime::StepTime> steps = profile.steps;
  double kernel_total = 0.0;
  for (const auto& s : steps) kernel_total += s.seconds;
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  std::cout << "\nkernels (last run, slowest first):\n";
  for (std::size_t i = 0; i < steps.size() && static_cast<int>(i) < o.top; ++i) {
    std::printf("  %s %5.1f%%  %s\n", seconds_text(steps[i].seconds).c_str(),
                kernel_total > 0 ? 100.0 * steps[i].seconds / kernel_total : 0.0,
                steps[i].label.c_str());
  }
  if (static_cast<int>(steps.size()) > o.top) {
    std::cout << "  ... " << steps.size() - static_cast<std::size_t>(o.top) << " more\n";
  }
  std::cout << "\n" << steps.size() << " kernels: " << seconds_text(kernel_total)
            << "; run (median of " << totals.size() << "): " << seconds_text(totals[totals.size() / 2])
            << "; planned arena " << profile.arena_bytes << " bytes\n";

  if (!o.check) return 0;
  std::map<std::string, Tensor> feeds = inputs;
  for (const auto& [name, t] : states) feeds[name] = t;
  const auto check_start = Clock::now();
  std::map<std::string, Tensor> expected = graph::interpret(g, dims, feeds);
  bool ok = true;
  std::cout << "\ncheck against the reference interpreter ("
            << seconds_text(std::chrono::duration<double>(Clock::now() - check_start).count())
            << "):\n";
  for (const auto& [name, want] : expected) {
    const Tensor& got = outputs.at(name);
    double max_abs = 0.0, scale = 0.0;
    bool finite = true;
    for (std::size_t i = 0; i < want.data.size(); ++i) {
      if (std::isnan(got.data[i]) != std::isnan(want.data[i])) finite = false;
      if (std::isfinite(want.data[i])) {
        max_abs = std::max(max_abs, std::fabs(got.data[i] - want.data[i]));
        scale = std::max(scale, std::fabs(want.data[i]));
      }
    }
    const double tolerance = (want.dtype == DType::F16 || want.dtype == DType::BF16 ? 2e-2 : 1e-4) *
                             std::max(1.0, scale);
    const bool good = finite && max_abs <= tolerance;
    ok = ok && good;
    std::printf("  %-24s %s  max |error| %.3e (tolerance %.1e)\n", name.c_str(),
                good ? "ok      " : "MISMATCH", max_abs, tolerance);
  }
  return ok ? 0 : 1;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Run an example model, one kernel per op, with a report");
  cmd->add_option("name", o->name, "mlp, attention, smollm2-135m or gemma3-4b")->required();
  cmd->add_option("--target", o->target, "cpu (default) or reference");
  cmd->add_option("--dim", o->dims, "A symbolic dim's value, NAME=VALUE (default 8; pos 0)");
  cmd->add_option("--input", o->inputs, "An input from a .npy file, NAME=FILE.npy");
  cmd->add_flag("--check", o->check, "Compare every output with the reference interpreter");
  cmd->add_option("--runs", o->runs, "Runs to time (default 3)");
  cmd->add_option("--top", o->top, "Kernels listed in the report (default 12)");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs");
  return {cmd, [o] { return run(*o); }};
}

}  // namespace kiln::tools
