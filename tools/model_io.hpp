// Model inputs and outputs for the commands that run models (`kiln run`, `kiln compile`):
// dims from `--dim NAME=VALUE`, inputs random or from .npy files, output checksums, and the
// check against the reference interpreter.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "examples/graphs.hpp"
#include "graph/interpret.hpp"

namespace kiln::tools {

// `NAME=VALUE` split in two; a UserError naming `--what` otherwise.
std::pair<std::string, std::string> split_assignment(const std::string& text, const char* what);

// The example called `name`; a UserError listing the known ones otherwise.
const examples::Example& find_model(const std::string& name);
// "One of the examples: mlp, chain, ...": the help text of a command's model argument.
std::string example_names_help();

// Every symbolic dim of the graph with a value: `given` (NAME=VALUE), else `pos` 0, others 8.
graph::DimValues choose_dims(const graph::Graph& g, const std::vector<std::string>& given);

struct ModelInputs {
  std::map<std::string, graph::Tensor> inputs;  // every non-persistent Input
  std::map<std::string, graph::Tensor> states;  // every persistent Input, zeros
};

// Inputs from .npy files (`NAME=FILE.npy`) or random: floats uniform in [-1, 1] (never 0)
// scaled by 1/sqrt(last dim), index inputs inside the table they index.
ModelInputs make_inputs(const graph::Graph& g, const graph::DimValues& dims,
                        const std::vector<std::string>& files, unsigned seed);

// One line per output: name, dtype, shape, sum and mean |x|.
void print_outputs(const std::map<std::string, graph::Tensor>& outputs);

// Compares `outputs` with the interpreter on the same inputs, printing a line per output;
// true when all agree.
bool check_outputs(const graph::Graph& g, const graph::DimValues& dims, const ModelInputs& in,
                   const std::map<std::string, graph::Tensor>& outputs);

// `  1.234 ms`, fixed width.
std::string seconds_text(double seconds);

}  // namespace kiln::tools
