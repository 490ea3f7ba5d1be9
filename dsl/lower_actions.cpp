#include "dsl/lower.hpp"

#include <algorithm>

#include "dsl/typing.hpp"
#include "engine/container.hpp"
#include "engine/extract.hpp"
#include "support/diagnostic.hpp"

namespace kiln::dsl {

namespace {

// ---------------------------------------------------------------------------------------------
// Actions: expressions are typed bottom-up and compiled into register instructions.
class ActionBuilder {
 public:
  ActionBuilder(const Scope& scope, const CompiledQuery& query, ActionContext context)
      : scope_(scope), context_(context) {
    program_.num_registers = query.query.num_vars();
    for (const auto& [name, b] : query.names) {
      locals_[name] = Local{b.is_constant ? Operand::constant_of(b.constant) : Operand::reg_of(b.var),
                            b.sort};
    }
  }

  void bind(const std::string& name, Operand operand, SortId sort) { locals_[name] = {operand, sort}; }

  struct Typed {
    Operand operand;
    SortId sort;
  };

  Typed expr(const Sexp& e, std::optional<SortId> expected) {
    Typed t = expr_unchecked(e, expected);
    if (expected && *expected != t.sort) {
      throw UserError("type mismatch: expected " + sort_name(scope_.egraph, *expected) +
                          ", found " + sort_name(scope_.egraph, t.sort),
                      e.span);
    }
    return t;
  }

  void action(const Sexp& a) {
    if (!a.is_list() || a.items.empty()) throw UserError("expected an action", a.span);
    const std::string& head = head_name(a);
    if (head == "let") {
      expect_args(a, 2, "(let name expr)");
      const Sexp& name = a.items[1];
      if (!name.is_symbol()) throw UserError("expected a variable name", name.span);
      if (locals_.count(name.text) || scope_.globals.count(name.text)) {
        throw UserError("'" + name.text + "' is already defined (shadowing is not allowed)", name.span);
      }
      Typed value = expr(a.items[2], std::nullopt);
      std::uint32_t reg = materialize(value.operand, a.span);
      locals_[name.text] = Local{Operand::reg_of(reg), value.sort};
    } else if (head == "set") {
      expect_args(a, 2, "(set (f args...) value)");
      const Sexp& target = a.items[1];
      auto [f, args] = call_args(target);
      const FunctionDecl& decl = scope_.egraph.function(f);
      if (decl.kind == FunctionKind::Constructor) {
        throw UserError("cannot set constructor '" + decl.name +
                            "': use union, or declare it as a function",
                        target.span);
      }
      args.push_back(expr(a.items[2], decl.output).operand);
      emit(ActionOp::Set, f, std::move(args), a.span);
    } else if (head == "union") {
      expect_args(a, 2, "(union a b)");
      Typed x = expr(a.items[1], std::nullopt);
      Typed y = expr(a.items[2], x.sort);
      if (!scope_.egraph.is_eq(x.sort)) {
        throw UserError("union needs e-class values, not " + sort_name(scope_.egraph, x.sort),
                        a.items[1].span);
      }
      emit(ActionOp::Union, 0, {x.operand, y.operand}, a.span);
    } else if (head == "delete" || head == "subsume") {
      expect_args(a, 1, "(" + head + " (f args...))");
      auto [f, args] = call_args(a.items[1]);
      const FunctionDecl& decl = scope_.egraph.function(f);
      if (head == "subsume" && decl.kind == FunctionKind::Function) {
        throw UserError("cannot subsume rows of function '" + decl.name +
                            "': only constructors and relations",
                        a.items[1].span);
      }
      emit(head == "delete" ? ActionOp::Delete : ActionOp::Subsume, f, std::move(args), a.span);
    } else if (head == "set-cost") {
      // (set-cost (C args...) cost): creates the e-node, as egglog does, and writes its cost
      // into C's cost table (declared by with-dynamic-cost), which extraction reads.
      expect_args(a, 2, "(set-cost (Constructor args...) cost)");
      const Sexp& node = a.items[1];
      auto [f, args] = call_args(node);
      const FunctionDecl& decl = scope_.egraph.function(f);
      std::optional<engine::FunctionId> table = scope_.egraph.find_function(engine::cost_table_name(decl.name));
      if (decl.kind != FunctionKind::Constructor || !table) {
        throw UserError("set-cost needs a constructor declared inside with-dynamic-cost", node.span);
      }
      emit(ActionOp::Construct, f, args, node.span);
      args.push_back(expr(a.items[2], scope_.builtins.i64).operand);
      emit(ActionOp::Set, *table, std::move(args), a.span);
    } else if (head == "panic") {
      expect_args(a, 1, "(panic \"message\")");
      if (a.items[1].kind != SexpKind::String) throw UserError("expected a string", a.items[1].span);
      ActionInstr instr;
      instr.op = ActionOp::Panic;
      instr.message = a.items[1].text;
      instr.span = a.span;
      program_.instrs.push_back(std::move(instr));
    } else if (auto f = scope_.egraph.find_function(head);
               f && scope_.egraph.function(*f).kind == FunctionKind::Relation) {
      auto [id, args] = call_args(a);
      args.push_back(Operand::constant_of(0));
      emit(ActionOp::Set, id, std::move(args), a.span);
    } else {
      expr(a, std::nullopt);  // a constructor call, lookup or primitive for its effect
    }
  }

  engine::ActionProgram take() { return std::move(program_); }

  std::uint32_t materialize(Operand operand, const support::Span& span) {
    if (!operand.is_constant) return operand.reg;
    std::uint32_t reg = program_.num_registers++;
    ActionInstr instr;
    instr.op = ActionOp::Copy;
    instr.args = {operand};
    instr.dst = reg;
    instr.span = span;
    program_.instrs.push_back(std::move(instr));
    return reg;
  }

 private:
  struct Local {
    Operand operand;
    SortId sort;
  };

  void expect_args(const Sexp& a, std::size_t n, const std::string& form) {
    if (a.items.size() != n + 1) throw UserError("expected " + form, a.span);
  }

  std::pair<engine::FunctionId, std::vector<Operand>> call_args(const Sexp& call) {
    if (!call.is_list() || call.items.empty()) throw UserError("expected a function call", call.span);
    const std::string& name = head_name(call);
    std::optional<engine::FunctionId> f = scope_.egraph.find_function(name);
    if (!f) throw UserError("unknown function '" + name + "'", call.items[0].span);
    const FunctionDecl& decl = scope_.egraph.function(*f);
    check_arity(decl, call);
    std::vector<Operand> args;
    for (std::size_t i = 1; i < call.items.size(); ++i) {
      args.push_back(expr(call.items[i], decl.inputs[i - 1]).operand);
    }
    return {*f, std::move(args)};
  }

  std::uint32_t emit(ActionOp op, engine::FunctionId f, std::vector<Operand> args,
                     const support::Span& span, const Primitive* prim = nullptr) {
    ActionInstr instr;
    instr.op = op;
    instr.function = f;
    instr.primitive = prim;
    instr.args = std::move(args);
    instr.span = span;
    bool writes = op == ActionOp::Construct || op == ActionOp::Lookup || op == ActionOp::Primitive;
    if (writes) instr.dst = program_.num_registers++;
    program_.instrs.push_back(std::move(instr));
    return program_.instrs.back().dst;
  }

  Typed expr_unchecked(const Sexp& e, std::optional<SortId> expected) {
    if (std::optional<SortId> sort = literal_sort(scope_, e)) {
      return {Operand::constant_of(literal_value(scope_, e)), *sort};
    }
    if (e.is_symbol()) {
      auto local = locals_.find(e.text);
      if (local != locals_.end()) return {local->second.operand, local->second.sort};
      auto global = scope_.globals.find(e.text);
      if (global != scope_.globals.end()) {
        return {Operand::constant_of(global->second.value), global->second.sort};
      }
      throw UserError("unbound variable '" + e.text + "'", e.span);
    }
    const std::string& name = head_name(e);
    if (std::optional<engine::FunctionId> f = scope_.egraph.find_function(name)) {
      const FunctionDecl& decl = scope_.egraph.function(*f);
      if (decl.kind == FunctionKind::Relation) {
        throw UserError("relation '" + name + "' has no value to use here", e.span);
      }
      if (decl.kind == FunctionKind::Function && context_ == ActionContext::Rule) {
        throw UserError("looking up the value of function '" + name +
                            "' is not allowed in rule actions (only constructors create values)",
                        e.span);
      }
      auto [id, args] = call_args(e);
      ActionOp op = decl.kind == FunctionKind::Constructor ? ActionOp::Construct : ActionOp::Lookup;
      return {Operand::reg_of(emit(op, id, std::move(args), e.span)), decl.output};
    }
    if (name == "unstable-fn") return function_value(e, expected);
    if (context_ != ActionContext::TopLevel && top_level_only(name)) {
      throw UserError("'" + name + "' may only be called in a top-level action (as in egglog)", e.span);
    }
    if (scope_.egraph.has_primitive(name)) {
      std::vector<Typed> args(e.items.size() - 1);
      std::vector<std::optional<SortId>> sorts(args.size());
      // A function value `(unstable-fn ...)` or an empty container such as `(set-of)` as an
      // argument takes its sort from the call, so the other arguments are typed first (egglog
      // infers them the same way).
      auto is_function_value = [&](const Sexp& a) {
        if (!a.is_list() || a.items.empty() || !a.items[0].is_symbol()) return false;
        return a.items[0].text == "unstable-fn" ||
               (a.items.size() == 1 && scope_.egraph.has_primitive(a.items[0].text));
      };
      for (int pass = 0; pass < 2; ++pass) {
        for (std::size_t i = 0; i < args.size(); ++i) {
          const Sexp& a = e.items[i + 1];
          if (is_function_value(a) != (pass == 1)) continue;
          std::optional<SortId> want;
          if (pass == 1) {
            auto fits = matching_overloads(scope_.egraph, scope_.egraph.primitives().overloads(name),
                                           sorts, expected);
            if (!fits.empty() && std::all_of(fits.begin(), fits.end(), [&](const Primitive* p) {
                  return input_sort(*p, i) == input_sort(*fits[0], i);
                })) {
              want = input_sort(*fits[0], i);
            }
          }
          args[i] = expr(a, want);
          sorts[i] = args[i].sort;
        }
      }
      auto candidates =
          matching_overloads(scope_.egraph, scope_.egraph.primitives().overloads(name), sorts, std::nullopt);
      if (candidates.size() > 1 && expected) {
        candidates = matching_overloads(scope_.egraph, scope_.egraph.primitives().overloads(name), sorts, expected);
      }
      if (candidates.empty()) {
        std::string list;
        for (const auto& s : sorts) list += (list.empty() ? "" : " ") + sort_name(scope_.egraph, *s);
        throw UserError("no primitive '" + name + "' takes (" + list + ")", e.span);
      }
      if (candidates.size() > 1 && candidates[0]->output != candidates[1]->output) {
        // e.g. (vec-empty) with two Vec sorts declared: nothing says which one is meant.
        throw UserError("cannot infer the sort of this '" + name + "': it could be " +
                            sort_name(scope_.egraph, candidates[0]->output) + " or " +
                            sort_name(scope_.egraph, candidates[1]->output),
                        e.span);
      }
      const Primitive* p = candidates[0];
      if (context_ == ActionContext::Rule && !p->in_rule_actions) {
        throw UserError("primitive '" + name +
                            "' looks up the value of a function, which is not allowed in rule actions",
                        e.span);
      }
      SortId out = p->output;
      if (out == kAnySort) {
        for (std::size_t i = 0; i < sorts.size(); ++i) {
          if (input_sort(*p, i) == kAnySort) out = *sorts[i];
        }
      }
      std::vector<Operand> operands;
      for (const Typed& t : args) operands.push_back(t.operand);
      std::uint32_t dst = emit(ActionOp::Primitive, 0, std::move(operands), e.span, p);
      // Arguments holding e-classes (a global's value, a class merged earlier in the same
      // actions) are canonicalized before the call, so containers compare by canonical members.
      bool holds_classes = false;
      for (const auto& s : sorts) {
        holds_classes |= scope_.egraph.is_eq(*s) || scope_.egraph.sort(*s).holds_eclasses;
      }
      if (holds_classes) {
        for (const auto& s : sorts) program_.instrs.back().arg_sorts.push_back(*s);
      }
      return {Operand::reg_of(dst), out};
    }
    throw UserError("unknown function '" + name + "'", e.items[0].span);
  }

  // (unstable-fn "name" partial-args...): a value of the UnstableFn sort whose signature, after
  // the partial arguments, `name` (a constructor, function or primitive) has.
  Typed function_value(const Sexp& e, std::optional<SortId> expected) {
    if (e.items.size() < 2 || e.items[1].kind != SexpKind::String) {
      throw UserError("expected (unstable-fn \"name\" arguments...)", e.span);
    }
    const std::string& target = e.items[1].text;
    std::vector<Typed> args;
    std::vector<SortId> partial;
    for (std::size_t i = 2; i < e.items.size(); ++i) {
      args.push_back(expr(e.items[i], std::nullopt));
      partial.push_back(args.back().sort);
    }
    engine::EGraph& g = scope_.egraph;
    std::vector<std::pair<SortId, engine::Callable>> found = function_value_sorts(g, target, partial, expected);
    if (found.size() != 1) {
      std::string sorts;
      for (SortId s : partial) sorts += " " + sort_name(g, s);
      throw UserError(found.empty()
                          ? "no UnstableFn sort fits '" + target + "' applied first to (" +
                                (sorts.empty() ? "" : sorts.substr(1)) + ")"
                          : "cannot infer the sort of this function value: it could be " +
                                sort_name(g, found[0].first) + " or " + sort_name(g, found[1].first),
                      e.span);
    }
    const Primitive& builder = engine::function_value_builder(g, found[0].first, found[0].second);
    std::vector<Operand> operands;
    for (const Typed& t : args) operands.push_back(t.operand);
    std::uint32_t dst = emit(ActionOp::Primitive, 0, std::move(operands), e.span, &builder);
    return {Operand::reg_of(dst), found[0].first};
  }

  const Scope& scope_;
  ActionContext context_;
  engine::ActionProgram program_;
  std::map<std::string, Local> locals_;
};

}  // namespace

bool top_level_only(const std::string& primitive) {
  return primitive == "unstable-multiset-fill-index" || primitive == "unstable-multiset-clear-index";
}

engine::ActionProgram compile_actions(const Scope& scope, const CompiledQuery& query,
                                      const std::vector<const Sexp*>& actions,
                                      ActionContext context) {
  ActionBuilder builder(scope, query, context);
  for (const Sexp* action : actions) builder.action(*action);
  return builder.take();
}

CompiledExpression compile_expression(const Scope& scope, const Sexp& expr,
                                      std::optional<SortId> expected) {
  CompiledQuery empty;
  ActionBuilder builder(scope, empty, ActionContext::TopLevel);
  auto typed = builder.expr(expr, expected);
  std::uint32_t reg = builder.materialize(typed.operand, expr.span);
  return CompiledExpression{builder.take(), reg, typed.sort};
}

CompiledExpression compile_with_params(const Scope& scope, const Sexp& expr,
                                       const std::vector<std::pair<std::string, SortId>>& params,
                                       SortId expected, ActionContext context) {
  CompiledQuery bound;
  for (std::uint32_t i = 0; i < params.size(); ++i) {
    bound.query.var_sorts.push_back(params[i].second);
    bound.names[params[i].first] = Binding{params[i].second, false, i, 0};
  }
  ActionBuilder builder(scope, bound, context);
  auto typed = builder.expr(expr, expected);
  std::uint32_t reg = builder.materialize(typed.operand, expr.span);
  return CompiledExpression{builder.take(), reg, typed.sort};
}

CompiledExpression compile_merge(const Scope& scope, const Sexp& expr, SortId sort) {
  return compile_with_params(scope, expr, {{"old", sort}, {"new", sort}}, sort, ActionContext::Rule);
}

}  // namespace kiln::dsl
