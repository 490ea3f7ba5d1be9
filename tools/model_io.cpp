// Model inputs and outputs for the commands that run models (`kiln run`, `kiln compile`).
#include "tools/model_io.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>
#include <system_error>

#include "examples/graphs.hpp"
#include "graph/compare.hpp"
#include "graph/npy.hpp"
#include "graph/random_inputs.hpp"
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

// The exclusive upper bound for values of integer input `id`: the row count of a table it
// indexes (Gather, Scatter), else 8.
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
  ModelInputs out;
  for (auto& [name, t] : graph::random_inputs(g, dims, seed)) {
    auto file = files.find(name);
    if (file != files.end()) {
      out.inputs[name] = graph::read_npy(file->second);
      files.erase(file);
    } else {
      out.inputs[name] = std::move(t);
    }
  }
  // Persistent state starts at zero, as the runtime's does.
  for (NodeId id = 0; id < g.size(); ++id) {
    const graph::Node& n = g.node(id);
    if (n.op != Op::Input || !n.persistent) continue;
    graph::Tensor zeros = out.inputs.at(n.name);
    std::fill(zeros.data.begin(), zeros.data.end(), 0.0);
    out.states[n.name] = std::move(zeros);
    out.inputs.erase(n.name);
  }
  if (!files.empty()) {
    throw UserError("--input " + files.begin()->first + ": the model has no such input");
  }
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
  std::map<std::string, Tensor> feeds = in.inputs;
  for (const auto& [name, t] : in.states) feeds[name] = t;
  std::map<std::string, Tensor> expected = graph::interpret(g, dims, feeds);
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

}  // namespace kiln::tools
