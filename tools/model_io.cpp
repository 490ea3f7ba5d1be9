// Model inputs and outputs for the commands that run models (`kiln run`, `kiln compile`).
#include "tools/model_io.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <system_error>

#include "examples/graphs.hpp"
#include "graph/compare.hpp"
#include "graph/memory_estimate.hpp"
#include "graph/npy.hpp"
#include "graph/random_inputs.hpp"
#include "graph/views_in_bounds.hpp"
#include "runtime/buffer_plan.hpp"
#include "runtime/executor.hpp"
#include "support/diagnostic.hpp"

namespace kiln::tools {

using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::Op;
using graph::Tensor;
using support::UserError;

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
    // The whole text must be the number: "3abc" is a mistake, not 3.
    std::int64_t parsed = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (error != std::errc() || end != value.data() + value.size()) {
      throw UserError("--dim " + name + ": \"" + value + "\" is not an integer");
    }
    dims[name] = parsed;
    if (dims[name] < 0) throw UserError("--dim " + name + ": must not be negative");
  }
  return dims;
}

// `[2, 3]`.
static std::string shape_text(const std::vector<std::int64_t>& shape) {
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


namespace {

std::string example_names() {
  std::string names;
  for (const auto& e : examples::examples()) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

}  // namespace

const examples::Example& find_model(const std::string& name) {
  const examples::Example* example = examples::find_example(name);
  if (!example) throw UserError("unknown example \"" + name + "\"; known: " + example_names());
  return *example;
}

std::string example_names_help() { return "One of the examples: " + example_names(); }

ModelInputs make_inputs(const Graph& g, const graph::DimValues& dims,
                        const std::vector<std::string>& files_given, unsigned seed) {
  std::map<std::string, std::string> files;
  for (const std::string& text : files_given) {
    auto [name, file] = split_assignment(text, "input");
    files[name] = file;
  }
  // Each is made when asked for, but all are bound on the device together.
  graph::check_native_inputs_memory(g, dims);
  auto given = std::make_shared<std::map<std::string, Tensor>>();
  ModelInputs out;
  for (NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != Op::Input) continue;
    auto file = files.find(n.name);
    if (file != files.end()) {
      // Persistent state starts at zero, as the runtime's does, whatever a file says.
      if (!n.persistent) (*given)[n.name] = graph::read_npy(file->second);
      files.erase(file);
    }
    if (!n.persistent) out.inputs.push_back(id);
  }
  if (!files.empty()) {
    throw UserError("--input " + files.begin()->first + ": the model has no such input");
  }
  out.value = [&g, &dims, given, seed](NodeId id) {
    const graph::Node& n = g.node(id);
    if (n.persistent) {
      Tensor zeros{n.dtype, {}, {}};
      for (const graph::Expr& d : n.shape) zeros.shape.push_back(graph::evaluate(d, dims));
      zeros.data.assign(static_cast<std::size_t>(graph::numel(zeros.shape)), 0.0);
      return zeros;
    }
    auto file = given->find(n.name);
    return file != given->end() ? file->second : graph::random_input(g, id, dims, seed);
  };
  out.native = [&g, &dims, given, seed](NodeId id) {
    auto file = given->find(g.node(id).name);
    return file != given->end() ? graph::to_native(file->second)
                                : graph::random_native_input(g, id, dims, seed);
  };
  return out;
}

void print_outputs(const std::map<std::string, Tensor>& outputs) {
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
}

bool check_outputs(const Graph& g, const graph::DimValues& dims, const ModelInputs& in,
                   const std::map<std::string, Tensor>& outputs) {
  std::map<std::string, Tensor> expected = graph::interpret(g, dims, in.value);
  bool ok = true;
  std::cout << "\ncheck against the reference interpreter:\n";
  for (const auto& [name, want] : expected) {
    const Tensor& got = outputs.at(name);
    double max_abs = 0.0;
    for (std::size_t i = 0; i < want.data.size(); ++i) {
      if (std::isfinite(want.data[i])) {
        max_abs = std::max(max_abs, std::fabs(got.data[i] - want.data[i]));
      }
    }
    std::int64_t reduced = 1;
    for (graph::NodeId id = 0; id < g.size(); ++id) {
      if (g.node(id).op == graph::Op::Output && g.node(id).name == name) {
        reduced = graph::reduction_length(g, id, dims);
      }
    }
    const std::string why = graph::mismatch(got.data, want.data, want.dtype, reduced);
    ok = ok && why.empty();
    std::printf("  %-24s %s  max |error| %.3e%s%s\n", name.c_str(),
                why.empty() ? "ok      " : "MISMATCH", max_abs, why.empty() ? "" : ": ",
                why.c_str());
  }
  return ok;
}

std::int64_t check_peak_bytes(const Graph& g, const runtime::Llir& llir,
                              const graph::DimValues& dims) {
  std::int64_t inputs = 0, outputs_native = 0, outputs_held = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != Op::Input && n.op != Op::Output) continue;
    const std::int64_t count = graph::checked_numel(n.shape, dims, "'" + n.name + "'");
    const auto native = count * static_cast<std::int64_t>(graph::dtype_size(n.dtype));
    if (n.op == Op::Input) {
      inputs += native;
    } else {
      outputs_native += native;
      outputs_held += count * graph::kBytesPerHeldElement;
    }
  }
  const auto arena = static_cast<std::int64_t>(runtime::plan_buffers(llir, dims).arena_bytes);
  return std::max(inputs + arena + outputs_native + outputs_held,
                  graph::interpreter_peak_bytes(g, dims) + outputs_held);
}

int run_and_report(const graph::Graph& g, const runtime::Llir& llir, runtime::Target& target,
                   const graph::DimValues& dims, const ModelInputs& in, int runs, int top,
                   bool check) {
  graph::check_views_in_bounds(g, dims);
  std::map<std::string, graph::Tensor> outputs;
  runtime::RunProfile profile;
  std::vector<double> totals;
  {
    const auto start = std::chrono::steady_clock::now();
    runtime::Executor executor(llir, target);
    std::cout << "prepared " << llir.num_steps() << " steps in "
              << seconds_text(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())
              << "\n";
    // Inputs and weights are made and uploaded once, one at a time; state starts at zero for
    // the timed runs (a step at fixed positions writes the same cache rows every run) and again
    // for the last, which fetches every output.
    for (graph::NodeId id : in.inputs) executor.bind(g.node(id).name, in.native(id));
    for (int r = 0; r < std::max(1, runs); ++r) {
      executor.run(dims, {}, &profile, runtime::Executor::Fetch::Nothing);
      totals.push_back(profile.total_seconds);
    }
    executor.reset_state();
    outputs = executor.run(dims, {});
  }  // the program's buffers are freed before the interpreter needs the memory
  std::sort(totals.begin(), totals.end());
  print_outputs(outputs);

  std::vector<runtime::StepTime> steps = profile.steps;
  double kernel_total = 0.0;
  for (const auto& s : steps) kernel_total += s.seconds;
  std::stable_sort(steps.begin(), steps.end(),
                   [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  std::cout << "\nkernels (last run, slowest first):\n";
  for (std::size_t i = 0; i < steps.size() && static_cast<int>(i) < top; ++i) {
    std::printf("  %s %5.1f%%  %s\n", seconds_text(steps[i].seconds).c_str(),
                kernel_total > 0 ? 100.0 * steps[i].seconds / kernel_total : 0.0,
                steps[i].label.c_str());
  }
  if (static_cast<int>(steps.size()) > top) {
    std::cout << "  ... " << steps.size() - static_cast<std::size_t>(top) << " more\n";
  }
  std::cout << "\n" << steps.size() << " steps: " << seconds_text(kernel_total)
            << "; run (median of " << totals.size()
            << "): " << seconds_text(totals[totals.size() / 2]) << "; planned arena "
            << profile.arena_bytes << " bytes\n";
  if (!check) return 0;
  return check_outputs(g, dims, in, outputs) ? 0 : 1;
}

}  // namespace kiln::tools
