// Turning a group's program into LLIR steps, once per member chunk (DESIGN §1: a result
// computed once for a group applies to each member).
#pragma once

#include <functional>
#include <map>
#include <string>

#include "compiler/search.hpp"
#include "runtime/llir.hpp"

namespace kiln::compiler {

// Adds `program`'s steps to `llir`. `input_value` gives the LLIR value of each chunk-graph
// Input node; `label` names each step (reports, errors). Returns the LLIR value of each
// chunk-graph Output node.
std::map<graph::NodeId, runtime::ValueId> instantiate(
    const GroupProgram& program, runtime::Llir& llir,
    const std::function<runtime::ValueId(graph::NodeId)>& input_value,
    const std::function<std::string(const GroupStep&)>& label);

// The program alone: the chunk graph's Input nodes as LLIR inputs (persistent ones as state),
// its Output nodes as outputs of the same names. For checking and timing one group.
runtime::Llir standalone_llir(const GroupProgram& program, const graph::Graph& chunk_graph);

}  // namespace kiln::compiler
