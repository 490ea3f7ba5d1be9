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
  // union args[n] with constructor(args[0..n-1]); a row that is not there yet is written with
  // args[n]'s class as its output (a rewrite's right-hand side, as egglog does: no fresh
  // class that the union would merge away at once, no row for rebuild to re-write)
  ConstructUnion,
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

// Runs one instruction against `registers`. Throws support::UserError on panic, a failed
// primitive or a missing lookup. The caller has set current_primitive_context (run_actions
// does).
void run_action(EGraph& egraph, const ActionInstr& instr, Value* registers);

// Runs the program with `registers` (at least num_registers long; the first ones usually hold a
// query match).
void run_actions(EGraph& egraph, const ActionProgram& program, Value* registers);

}  // namespace kiln::engine
