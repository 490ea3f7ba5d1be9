// Model inputs and outputs for the commands that run models (`kiln run`, `kiln compile`):
// dims from `--dim NAME=VALUE`, inputs random or from .npy files, a program's run with its
// report, output checksums, and the check against the reference interpreter.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "examples/graphs.hpp"
#include "graph/interpret.hpp"
#include "graph/native.hpp"
#include "runtime/llir.hpp"
#include "runtime/target.hpp"

namespace kiln::tools {

// `NAME=VALUE` split in two; a UserError naming `--what` otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& text, const char* what);

// The example called `name`; a UserError listing the known ones otherwise.
const examples::Example& find_model(const std::string& name);
// "One of the examples: mlp, chain, ...": the help text of a command's model argument.
std::string example_names_help();

// Every symbolic dim of the graph with a value: `given` (NAME=VALUE), else `pos` 0, others 8.
graph::DimValues choose_dims(const graph::Graph& g, const std::vector<std::string>& given);

// A model's inputs, made one at a time when asked for: all of a model's weights at once, as
// doubles, would not fit (31 GiB for Gemma-3-4B). Each is the same whoever asks, so the program
// and the interpreter see the same values.
struct ModelInputs {
  std::vector<graph::NodeId> inputs;  // every non-persistent Input, in graph order
  // Input `id`'s value as doubles (the interpreter's InputSource); persistent state is zeros.
  graph::InputSource value;
  // Non-persistent input `id` in its own layout, for binding on a device.
  std::function<graph::NativeTensor(graph::NodeId)> native;
};

// Inputs from .npy files (`NAME=FILE.npy`, read now) or random (graph::random_input: floats
// uniform in [-1, 1] (never 0) scaled by 1/sqrt(last dim), index inputs inside the table they
// index; seeded by `seed` and the input's name). Keeps references to `g` and `dims`.
ModelInputs make_inputs(const graph::Graph& g, const graph::DimValues& dims,
                        const std::vector<std::string>& files, unsigned seed);

// One line per output: name, dtype, shape, sum and mean |x|.
void print_outputs(const std::map<std::string, graph::Tensor>& outputs);

// Compares `outputs` with the interpreter on the same inputs, printing a line per output;
// true when all agree. The interpreter asks for each input once, when first read.
bool check_outputs(const graph::Graph& g, const graph::DimValues& dims, const ModelInputs& in,
                   const std::map<std::string, graph::Tensor>& outputs);

// The most bytes run_and_report holds at once with `check`, predicted (an upper bound): while
// the program runs, every input in its own dtype, the plan's arena and the outputs, on the
// device and fetched as doubles; then, the program freed, the interpreter's peak
// (graph::interpreter_peak_bytes) and the fetched outputs.
std::int64_t check_peak_bytes(const graph::Graph& g, const runtime::Llir& llir,
                              const graph::DimValues& dims);

// Runs a program `runs` times with every input bound once (made and bound one at a time) and
// prints its outputs and per-step report; with `check`, then frees the program's buffers and
// compares with the interpreter. Returns the exit status.
int run_and_report(const graph::Graph& g, const runtime::Llir& llir, runtime::Target& target,
                   const graph::DimValues& dims, const ModelInputs& in, int runs, int top,
                   bool check);

// `  1.234 ms`, fixed width.
std::string seconds_text(double seconds);

}  // namespace kiln::tools
