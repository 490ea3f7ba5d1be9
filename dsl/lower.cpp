#include "dsl/lower.hpp"

#include <algorithm>

#include "support/diagnostic.hpp"

namespace kiln::dsl {

using engine::ActionInstr;
using engine::ActionOp;
using engine::FunctionDecl;
using engine::FunctionKind;
using engine::kAnySort;
using engine::Operand;
using engine::Primitive;
using engine::SortId;
using engine::Value;
using support::UserError;

std::string sort_name(const engine::EGraph& egraph, SortId sort) {
  return sort == kAnySort ? std::string("any sort") : egraph.sort(sort).name;
}

namespace {

bool arity_ok(const Primitive& p, std::size_t n) {
  if (!p.variadic) return n == p.inputs.size();
  return n + 1 >= p.inputs.size();
}

SortId input_sort(const Primitive& p, std::size_t i) {
  return i < p.inputs.size() ? p.inputs[i] : p.inputs.back();
}

// Resolves a primitive overload from partially known argument and result sorts. Returns the
// candidates that remain possible.
std::vector<const Primitive*> matching_overloads(const std::vector<const Primitive*>& overloads,
                                                 const std::vector<std::optional<SortId>>& args,
                                                 std::optional<SortId> result) {
  std::vector<const Primitive*> out;
  for (const Primitive* p : overloads) {
    if (!arity_ok(*p, args.size())) continue;
    std::optional<SortId> any;
    bool ok = true;
    for (std::size_t i = 0; i < args.size() && ok; ++i) {
      SortId want = input_sort(*p, i);
      if (!args[i]) continue;
      if (want == kAnySort) {
        if (any && *any != *args[i]) ok = false;
        any = args[i];
      } else if (want != *args[i]) {
        ok = false;
      }
    }
    if (ok && result) {
      if (p->output == kAnySort) {
        if (any && *any != *result) ok = false;
      } else if (p->output != *result) {
        ok = false;
      }
    }
    if (ok) out.push_back(p);
  }
  return out;
}

std::optional<SortId> literal_sort(const Scope& scope, const Sexp& e) {
  switch (e.kind) {
    case SexpKind::Int: return scope.builtins.i64;
    case SexpKind::Float: return scope.builtins.f64;
    case SexpKind::Bool: return scope.builtins.boolean;
    case SexpKind::String: return scope.builtins.string;
    case SexpKind::List:
      if (e.items.empty()) return scope.builtins.unit;
      return std::nullopt;
    case SexpKind::Symbol: return std::nullopt;
  }
  return std::nullopt;
}

Value literal_value(const Scope& scope, const Sexp& e) {
  switch (e.kind) {
    case SexpKind::Int: return engine::I64Sort::make(e.int_value);
    case SexpKind::Float: return scope.builtins.f64_sort->make(e.float_value);
    case SexpKind::Bool: return engine::BoolSort::make(e.bool_value);
    case SexpKind::String: return scope.builtins.string_sort->make(e.text);
    default: return 0;  // Unit
  }
}

const std::string& head_name(const Sexp& call) {
  if (call.items.empty() || !call.items[0].is_symbol()) {
    throw UserError("expected a function name at the head of this expression", call.span);
  }
  return call.items[0].text;
}

void check_arity(const FunctionDecl& f, const Sexp& call) {
  if (call.items.size() - 1 != f.inputs.size()) {
    throw UserError("'" + f.name + "' takes " + std::to_string(f.inputs.size()) +
                        " argument(s) but is given " + std::to_string(call.items.size() - 1),
                    call.span);
  }
}

// ---------------------------------------------------------------------------------------------
// Queries: every sub-expression gets a slot; slots are unified by `=` and by shared names, and
// sorts flow from function signatures, literals and resolved primitive overloads.
class QueryBuilder {
 public:
  explicit QueryBuilder(const Scope& scope) : scope_(scope) {}

  void add_fact(const Sexp& fact) {
    if (fact.is_list() && !fact.items.empty() && fact.items[0].is_symbol("=")) {
      if (fact.items.size() < 3) throw UserError("'=' needs at least two expressions", fact.span);
      std::uint32_t first = visit(fact.items[1]);
      for (std::size_t i = 2; i < fact.items.size(); ++i) unify(first, visit(fact.items[i]), fact.items[i].span);
      return;
    }
    if (!fact.is_list() || fact.items.empty()) {
      throw UserError("a fact must be a call or an equality (= a b)", fact.span);
    }
    visit(fact);
  }

  CompiledQuery finish() {
    add_constant_checks();
    infer_sorts();
    check_grounded();
    return emit();
  }

 private:
  struct Slot {
    std::optional<SortId> sort;
    std::optional<Value> constant;
    bool grounded = false;
    std::string name;  // for named variables
    support::Span span;
  };
  struct Atom {
    engine::FunctionId function;
    std::vector<std::uint32_t> columns;
  };
  struct ConstantCheck {
    SortId sort;
    Value a, b;
    support::Span span;
  };
  struct Prim {
    std::string name;
    std::vector<std::uint32_t> args;
    std::uint32_t result;
    const Primitive* resolved = nullptr;
    support::Span span;
  };

  std::uint32_t new_slot(const support::Span& span) {
    parent_.push_back(static_cast<std::uint32_t>(slots_.size()));
    slots_.push_back(Slot{});
    slots_.back().span = span;
    return parent_.back();
  }

  std::uint32_t find(std::uint32_t s) {
    while (parent_[s] != s) s = parent_[s] = parent_[parent_[s]];
    return s;
  }

  std::string describe(std::uint32_t s) {
    const Slot& slot = slots_[s];
    return slot.name.empty() ? std::string("expression") : "variable '" + slot.name + "'";
  }

  void set_sort(std::uint32_t s, SortId sort, const support::Span& span) {
    Slot& slot = slots_[find(s)];
    if (slot.sort && *slot.sort != sort) {
      throw UserError("type mismatch: expected " + sort_name(scope_.egraph, sort) + ", found " +
                          sort_name(scope_.egraph, *slot.sort),
                      span);
    }
    if (!slot.sort) {
      slot.sort = sort;
      progress_ = true;
    }
  }

  void unify(std::uint32_t a, std::uint32_t b, const support::Span& span) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    Slot& keep = slots_[a];
    Slot& gone = slots_[b];
    if (gone.sort) set_sort(a, *gone.sort, span);
    if (gone.constant) {
      if (keep.constant && *keep.constant != *gone.constant) {
        // Two e-classes (globals) may be merged later, so compare them when the query runs.
        if (scope_.egraph.is_eq(*keep.sort)) {
          constant_checks_.push_back({*keep.sort, *keep.constant, *gone.constant, span});
        } else {
          never_matches_ = true;
        }
      }
      keep.constant = gone.constant;
    }
    keep.grounded |= gone.grounded;
    if (keep.name.empty()) keep.name = gone.name;
    parent_[b] = a;
  }

  std::uint32_t visit(const Sexp& e) {
    if (std::optional<SortId> sort = literal_sort(scope_, e)) {
      std::uint32_t s = new_slot(e.span);
      slots_[s].sort = sort;
      slots_[s].constant = literal_value(scope_, e);
      slots_[s].grounded = true;
      return s;
    }
    if (e.is_symbol()) {
      auto named = named_.find(e.text);
      if (named != named_.end()) return named->second;
      std::uint32_t s = new_slot(e.span);
      auto global = scope_.globals.find(e.text);
      if (global != scope_.globals.end()) {
        slots_[s].sort = global->second.sort;
        slots_[s].constant = scope_.egraph.canonical(global->second.sort, global->second.value);
        slots_[s].grounded = true;
        return s;
      }
      slots_[s].name = e.text;
      named_[e.text] = s;
      return s;
    }
    const std::string& name = head_name(e);
    if (name == "=") throw UserError("'=' can only be used as a fact, not inside an expression", e.span);
    if (std::optional<engine::FunctionId> f = scope_.egraph.find_function(name)) {
      const FunctionDecl& decl = scope_.egraph.function(*f);
      check_arity(decl, e);
      Atom atom{*f, {}};
      for (std::size_t i = 1; i < e.items.size(); ++i) {
        std::uint32_t arg = visit(e.items[i]);
        set_sort(arg, decl.inputs[i - 1], e.items[i].span);
        atom.columns.push_back(arg);
      }
      std::uint32_t out = new_slot(e.span);
      slots_[out].sort = decl.output;
      atom.columns.push_back(out);
      for (std::uint32_t c : atom.columns) slots_[find(c)].grounded = true;
      atoms_.push_back(std::move(atom));
      return out;
    }
    if (scope_.egraph.primitives().contains(name)) {
      Prim prim{name, {}, 0, nullptr, e.span};
      for (std::size_t i = 1; i < e.items.size(); ++i) prim.args.push_back(visit(e.items[i]));
      prim.result = new_slot(e.span);
      prims_.push_back(std::move(prim));
      return prims_.back().result;
    }
    throw UserError("unknown function '" + name + "'", e.items[0].span);
  }

  // `(value-eq a b)` for every pair of e-class constants that `=` equated.
  void add_constant_checks() {
    if (constant_checks_.empty()) return;
    const std::vector<const Primitive*>& value_eq = scope_.egraph.primitives().overloads("value-eq");
    KILN_ASSERT(value_eq.size() == 1, "value-eq is a builtin with one overload");
    for (const ConstantCheck& check : constant_checks_) {
      Prim prim{"value-eq", {}, 0, value_eq[0], check.span};
      for (Value constant : {check.a, check.b}) {
        std::uint32_t arg = new_slot(check.span);
        slots_[arg].sort = check.sort;
        slots_[arg].constant = constant;
        slots_[arg].grounded = true;
        prim.args.push_back(arg);
      }
      prim.result = new_slot(check.span);
      slots_[prim.result].sort = scope_.builtins.unit;
      prims_.push_back(std::move(prim));
    }
  }

  void infer_sorts() {
    // Atoms already fixed their column sorts; primitives resolve as their sorts become known.
    progress_ = true;
    while (progress_) {
      progress_ = false;
      for (Prim& prim : prims_) {
        if (prim.resolved) continue;
        std::vector<std::optional<SortId>> args;
        for (std::uint32_t a : prim.args) args.push_back(slots_[find(a)].sort);
        auto candidates = matching_overloads(scope_.egraph.primitives().overloads(prim.name),
                                             args, slots_[find(prim.result)].sort);
        if (candidates.empty()) throw no_overload(prim, args);
        if (candidates.size() > 1) continue;
        const Primitive* p = candidates[0];
        std::optional<SortId> any;
        for (std::size_t i = 0; i < args.size(); ++i) {
          if (input_sort(*p, i) == kAnySort && args[i]) any = args[i];
        }
        bool complete = true;
        for (std::size_t i = 0; i < args.size(); ++i) {
          SortId want = input_sort(*p, i);
          if (want == kAnySort) want = any.value_or(kAnySort);
          if (want == kAnySort) {
            complete = false;
            continue;
          }
          set_sort(prim.args[i], want, prim.span);
        }
        SortId out = p->output == kAnySort ? any.value_or(kAnySort) : p->output;
        if (out != kAnySort) set_sort(prim.result, out, prim.span);
        if (complete && out != kAnySort) {
          prim.resolved = p;
          progress_ = true;
        }
      }
    }
    for (const Prim& prim : prims_) {
      if (!prim.resolved) {
        throw UserError("cannot infer the argument sorts of primitive '" + prim.name + "'",
                        prim.span);
      }
    }
    for (std::uint32_t s = 0; s < slots_.size(); ++s) {
      if (find(s) == s && !slots_[s].sort) {
        throw UserError("cannot infer a sort for " + describe(s), slots_[s].span);
      }
    }
  }

  UserError no_overload(const Prim& prim, const std::vector<std::optional<SortId>>& args) {
    std::string sorts;
    for (const auto& a : args) {
      sorts += sorts.empty() ? "" : " ";
      sorts += a ? sort_name(scope_.egraph, *a) : "?";
    }
    return UserError("no primitive '" + prim.name + "' takes (" + sorts + ")", prim.span);
  }

  void check_grounded() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (const Prim& prim : prims_) {
        bool inputs = std::all_of(prim.args.begin(), prim.args.end(),
                                  [&](std::uint32_t a) { return slots_[find(a)].grounded; });
        Slot& result = slots_[find(prim.result)];
        if (inputs && !result.grounded) {
          result.grounded = true;
          progress = true;
        }
      }
    }
    for (const auto& [name, s] : named_) {
      if (!slots_[find(s)].grounded) {
        // A run-time failure in egglog (its grounding check runs late), so (fail ...) catches it.
        throw support::RuntimeFailure("variable '" + name +
                            "' is ungrounded: it must appear as an argument or result of a "
                            "function in the query",
                        slots_[s].span);
      }
    }
    for (const Prim& prim : prims_) {
      for (std::uint32_t a : prim.args) {
        if (!slots_[find(a)].grounded) {
          throw UserError("this argument of '" + prim.name + "' is ungrounded", slots_[a].span);
        }
      }
    }
  }

  CompiledQuery emit() {
    CompiledQuery out;
    out.never_matches = never_matches_;
    std::vector<std::int64_t> var_of(slots_.size(), -1);
    auto term = [&](std::uint32_t s) {
      std::uint32_t root = find(s);
      const Slot& slot = slots_[root];
      if (slot.constant) {
        return engine::QueryTerm::literal(*slot.constant, scope_.egraph.is_eq(*slot.sort));
      }
      if (var_of[root] < 0) {
        var_of[root] = out.query.num_vars();
        out.query.var_sorts.push_back(*slot.sort);
      }
      return engine::QueryTerm::variable(static_cast<std::uint32_t>(var_of[root]));
    };
    // Named variables first, in order of appearance, so registers are predictable.
    std::vector<std::pair<std::uint32_t, std::string>> names;
    for (const auto& [name, s] : named_) names.emplace_back(s, name);
    std::sort(names.begin(), names.end());
    for (const auto& [s, name] : names) {
      engine::QueryTerm t = term(s);
      Binding b;
      b.sort = *slots_[find(s)].sort;
      b.is_constant = !t.is_var;
      b.var = t.var;
      b.constant = t.constant;
      out.names[name] = b;
    }
    for (const Atom& atom : atoms_) {
      engine::QueryAtom q{atom.function, {}};
      for (std::uint32_t c : atom.columns) q.columns.push_back(term(c));
      out.query.atoms.push_back(std::move(q));
    }
    for (const Prim& prim : prims_) {
      engine::QueryPrimitive q;
      q.primitive = prim.resolved;
      for (std::uint32_t a : prim.args) q.args.push_back(term(a));
      q.result = term(prim.result);
      out.query.primitives.push_back(std::move(q));
    }
    // Two constants in one slot can only be equal if they are the same value.
    return out;
  }

  const Scope& scope_;
  std::vector<std::uint32_t> parent_;
  std::vector<Slot> slots_;
  std::map<std::string, std::uint32_t> named_;
  std::vector<Atom> atoms_;
  std::vector<Prim> prims_;
  std::vector<ConstantCheck> constant_checks_;
  bool progress_ = false;
  bool never_matches_ = false;
};

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
    if (scope_.egraph.primitives().contains(name)) {
      std::vector<Typed> args;
      std::vector<std::optional<SortId>> sorts;
      for (std::size_t i = 1; i < e.items.size(); ++i) {
        args.push_back(expr(e.items[i], std::nullopt));
        sorts.push_back(args.back().sort);
      }
      auto candidates =
          matching_overloads(scope_.egraph.primitives().overloads(name), sorts, std::nullopt);
      if (candidates.size() > 1 && expected) {
        candidates = matching_overloads(scope_.egraph.primitives().overloads(name), sorts, expected);
      }
      if (candidates.empty()) {
        std::string list;
        for (const auto& s : sorts) list += (list.empty() ? "" : " ") + sort_name(scope_.egraph, *s);
        throw UserError("no primitive '" + name + "' takes (" + list + ")", e.span);
      }
      const Primitive* p = candidates[0];
      SortId out = p->output;
      if (out == kAnySort) {
        for (std::size_t i = 0; i < sorts.size(); ++i) {
          if (input_sort(*p, i) == kAnySort) out = *sorts[i];
        }
      }
      std::vector<Operand> operands;
      for (const Typed& t : args) operands.push_back(t.operand);
      return {Operand::reg_of(emit(ActionOp::Primitive, 0, std::move(operands), e.span, p)), out};
    }
    throw UserError("unknown function '" + name + "'", e.items[0].span);
  }

  const Scope& scope_;
  ActionContext context_;
  engine::ActionProgram program_;
  std::map<std::string, Local> locals_;
};

}  // namespace

CompiledQuery compile_query(const Scope& scope, const std::vector<const Sexp*>& facts) {
  QueryBuilder builder(scope);
  for (const Sexp* fact : facts) builder.add_fact(*fact);
  return builder.finish();
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

CompiledExpression compile_merge(const Scope& scope, const Sexp& expr, SortId sort) {
  CompiledQuery params;
  params.query.var_sorts = {sort, sort};
  params.names["old"] = Binding{sort, false, 0, 0};
  params.names["new"] = Binding{sort, false, 1, 0};
  ActionBuilder builder(scope, params, ActionContext::Rule);
  auto typed = builder.expr(expr, sort);
  std::uint32_t reg = builder.materialize(typed.operand, expr.span);
  return CompiledExpression{builder.take(), reg, typed.sort};
}

}  // namespace kiln::dsl
