#include "dsl/lower.hpp"

#include <algorithm>

#include "dsl/typing.hpp"
#include "support/diagnostic.hpp"

namespace kiln::dsl {

namespace {

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
    std::string fn_target;  // (unstable-fn "fn_target" args...): a function value's builder
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
    if (top_level_only(name)) {
      throw UserError("'" + name + "' may only be called in a top-level action (as in egglog)", e.span);
    }
    if (name == "unstable-fn") {
      if (e.items.size() < 2 || e.items[1].kind != SexpKind::String) {
        throw UserError("expected (unstable-fn \"name\" arguments...)", e.span);
      }
      Prim prim{name, {}, 0, nullptr, e.span, e.items[1].text};
      for (std::size_t i = 2; i < e.items.size(); ++i) prim.args.push_back(visit(e.items[i]));
      prim.result = new_slot(e.span);
      prims_.push_back(std::move(prim));
      return prims_.back().result;
    }
    if (scope_.egraph.has_primitive(name)) {
      Prim prim{name, {}, 0, nullptr, e.span, {}};
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
      Prim prim{"value-eq", {}, 0, value_eq[0], check.span, {}};
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
        if (!prim.fn_target.empty()) {
          resolve_function_value(prim, args);
          continue;
        }
        auto candidates = matching_overloads(scope_.egraph, scope_.egraph.primitives().overloads(prim.name),
                                             args, slots_[find(prim.result)].sort);
        if (candidates.empty()) throw no_overload(prim, args);
        if (candidates.size() > 1) {
          // Arguments on whose sort every remaining overload agrees take that sort (a function
          // value passed to unstable-multiset-map learns its sort from the call).
          for (std::size_t i = 0; i < args.size(); ++i) {
            SortId want = input_sort(*candidates[0], i);
            if (args[i] || want == kAnySort) continue;
            if (std::all_of(candidates.begin(), candidates.end(),
                            [&](const Primitive* p) { return input_sort(*p, i) == want; })) {
              set_sort(prim.args[i], want, prim.span);
            }
          }
          continue;
        }
        const Primitive* p = candidates[0];
        if (!p->in_queries) {
          throw UserError("primitive '" + prim.name +
                              "' reads or changes the e-graph, so only actions may call it (a query only matches)",
                          prim.span);
        }
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
      if (!prim.resolved && !prim.fn_target.empty()) {
        throw UserError("cannot infer the sort of this function value", prim.span);
      }
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

  // Resolves (unstable-fn "target" args...) once its partial arguments' sorts are known and one
  // UnstableFn sort (the expected one, when known) fits.
  void resolve_function_value(Prim& prim, const std::vector<std::optional<SortId>>& args) {
    std::vector<SortId> partial;
    for (const auto& a : args) {
      if (!a) return;
      partial.push_back(*a);
    }
    auto found = function_value_sorts(scope_.egraph, prim.fn_target, partial, slots_[find(prim.result)].sort);
    if (found.empty()) {
      std::string sorts;
      for (SortId s : partial) sorts += (sorts.empty() ? "" : " ") + sort_name(scope_.egraph, s);
      throw UserError("no UnstableFn sort fits '" + prim.fn_target + "' applied first to (" + sorts + ")",
                      prim.span);
    }
    if (found.size() > 1) return;
    set_sort(prim.result, found[0].first, prim.span);
    prim.resolved = &engine::function_value_builder(scope_.egraph, found[0].first, found[0].second);
    progress_ = true;
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
        const engine::Sort& sort = scope_.egraph.sort(*slot.sort);
        return engine::QueryTerm::literal(
            *slot.constant, sort.is_eq,
            sort.holds_eclasses ? std::optional<SortId>(*slot.sort) : std::nullopt);
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

}  // namespace

CompiledQuery compile_query(const Scope& scope, const std::vector<const Sexp*>& facts) {
  QueryBuilder builder(scope);
  for (const Sexp* fact : facts) builder.add_fact(*fact);
  return builder.finish();
}

}  // namespace kiln::dsl
