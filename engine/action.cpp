#include "engine/action.hpp"

#include "engine/primitive.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {

void run_action(EGraph& egraph, const ActionInstr& instr, Value* registers) {
  Value stack_args[kMaxColumns + 1];
  std::vector<Value> heap_args;
  Value* args = stack_args;
  const Operand* operands = instr.args.data();
  std::size_t count = instr.args.size();
  if (count > std::size(stack_args)) {  // only variadic primitives get here
    heap_args.resize(count);
    args = heap_args.data();
  }
  for (std::size_t i = 0; i < count; ++i) {
    args[i] = operands[i].is_constant ? operands[i].constant : registers[operands[i].reg];
  }
  switch (instr.op) {
    case ActionOp::Construct:
      registers[instr.dst] = egraph.lookup_or_insert(instr.function, args);
      break;
    case ActionOp::Lookup: {
      auto found = egraph.lookup(instr.function, args);
      if (!found) {
        throw support::RuntimeFailure(
            "lookup of '" + egraph.function(instr.function).name + "' found no row", instr.span);
      }
      registers[instr.dst] = *found;
      break;
    }
    case ActionOp::Primitive: {
      Value result = 0;
      for (std::size_t i = 0; i < instr.arg_sorts.size(); ++i) {
        args[i] = egraph.canonical(instr.arg_sorts[i], args[i]);
      }
      std::string& reason = primitive_failure_reason();
      reason.clear();
      if (!instr.primitive->apply(args, count, result)) {
        throw support::RuntimeFailure("primitive '" + instr.primitive->name + "' failed" +
                                          (reason.empty() ? "" : ": " + reason),
                                      instr.span);
      }
      registers[instr.dst] = result;
      break;
    }
    case ActionOp::Copy:  // one operand, read where it is
      registers[instr.dst] = operands[0].is_constant ? operands[0].constant : registers[operands[0].reg];
      break;
    case ActionOp::Set:
      try {
        egraph.set(instr.function, args, args[count - 1]);
      } catch (const support::UserError& e) {
        support::rethrow_with_span(e, instr.span);  // merge conflicts point at the set
      }
      break;
    case ActionOp::Union:
      egraph.unite(args[0], args[1]);
      break;
    case ActionOp::ConstructUnion:
      egraph.construct_into(instr.function, args, args[count - 1]);
      break;
    case ActionOp::Delete:
      egraph.remove(instr.function, args);
      break;
    case ActionOp::Subsume:
      egraph.subsume(instr.function, args);
      break;
    case ActionOp::Panic:
      throw support::RuntimeFailure("panic: " + instr.message, instr.span);
  }
}

void run_actions(EGraph& egraph, const ActionProgram& program, Value* registers) {
  // Left set afterwards: every primitive call comes from here or from a search, which sets
  // (and restores) its own.
  PrimitiveContext& context = current_primitive_context;
  if (context.egraph != &egraph || !context.may_insert) context = PrimitiveContext{&egraph, true};
  for (const ActionInstr& instr : program.instrs) run_action(egraph, instr, registers);
}

}  // namespace kiln::engine
