// Rule actions and top-level commands, compiled to a flat register program: each instruction
// reads operands (registers or constants) and writes at most one register.
#pragma once

#include <string>
#include <vector>

#include "engine/egraph.hpp"
#include "support/source_file.hpp"

namespace kiln::engine {

struct Operand {
  bool is_constant = false;
  std::uint32_t reg = 0;
  Value constant = 0;

  static Operand reg_of(std::uint32_t r) { return {false, r, 0}; }
  static Operand constant_of(Value v) { return {true, 0, v}; }
};

enum class ActionOp {
  Construct,  // dst = constructor(args): existing output or a fresh e-class
  Lookup,     // dst = function(args): an error if the row is absent
  Primitive,  // dst = primitive(args): an error if it fails
  Copy,       // dst = args[0]
  Set,        // function(args[0..n-1]) := args[n]
  Union,      // union args[0] args[1]
  Delete,     // remove function(args)
  Subsume,    // subsume function(args)
  Panic,      // stop with `message`
};

struct ActionInstr {
  ActionOp op = ActionOp::Copy;
  FunctionId function = 0;
  const Primitive* primitive = nullptr;
  std::vector<Operand> args;
  std::uint32_t dst = 0;
  std::string message;
  // Primitive: the argument sorts, when some hold e-classes and must be canonical (else empty).
  std::vector<SortId> arg_sorts;
  support::Span span;  // for errors
};

struct ActionProgram {
  std::uint32_t num_registers = 0;
  std::vector<ActionInstr> instrs;
};

// Runs the program with `registers` (at least num_registers long; the first ones usually hold a
// query match). Throws support::UserError on panic, a failed primitive or a missing lookup.
// Starts at instruction `first`: the ones before it already ran (their registers are set).
void run_actions(EGraph& egraph, const ActionProgram& program, Value* registers,
                 std::size_t first = 0);

}  // namespace kiln::engine
