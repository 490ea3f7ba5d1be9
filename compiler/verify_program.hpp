// The search's verify phase (DESIGN §7): a whole group program, run on the target at the check
// dims from the inputs the reference values were computed from, must reproduce every output of
// the interpreter; and the timing of a checked program at the real dims, end to end.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/chunk_graph.hpp"
#include "compiler/group_program.hpp"
#include "compiler/measure.hpp"
#include "compiler/sandbox.hpp"
#include "graph/interpret.hpp"
#include "runtime/target.hpp"

namespace kiln::compiler {

// The chunk graph run by the interpreter at the check dims: what programs are checked against.
struct GroupReference {
  graph::DimValues dims;                          // the check dims
  std::map<std::string, graph::Tensor> inputs;    // random, seeded
  std::vector<std::vector<double>> values;        // every node's value
  // Every node's graph::rounding_spread: how far its own roundings move each element.
  std::vector<std::vector<double>> spread;
};

// "" when `program` reproduces every output of `reference`, else why not (a mismatch naming
// the output, or the error that stopped the run: an in-place step the buffer plan refuses).
// The program runs in a worker process (compiler/sandbox): a crash or hang is a failed check.
std::string verify_program(const GroupProgram& program, const ChunkGraph& chunk,
                           runtime::Target& target, const GroupReference& reference,
                           const SandboxOptions& sandbox = {});

// The program's median time at `dims` on random inputs (cached by the program's text), measured
// in a worker process as the Measurer's candidates are; a failure there is a UserError.
double time_program(const GroupProgram& program, const ChunkGraph& chunk, runtime::Target& target,
                    Measurer& measurer, const graph::DimValues& dims, unsigned seed);

}  // namespace kiln::compiler
