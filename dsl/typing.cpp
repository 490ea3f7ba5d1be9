#include "dsl/typing.hpp"

#include "support/diagnostic.hpp"

namespace kiln::dsl {

std::string sort_name(const engine::EGraph& egraph, SortId sort) {
  return sort == kAnySort ? std::string("any sort") : egraph.sort(sort).name;
}

bool arity_ok(const Primitive& p, std::size_t n) {
  if (!p.variadic) return n == p.inputs.size();
  return n + 1 >= p.inputs.size();
}

SortId input_sort(const Primitive& p, std::size_t i) {
  return i < p.inputs.size() ? p.inputs[i] : p.inputs.back();
}

// Resolves a primitive overload from partially known argument and result sorts. Returns the
// candidates that remain possible.
std::vector<const Primitive*> matching_overloads(const engine::EGraph& egraph,
                                                 const std::vector<const Primitive*>& overloads,
                                                 const std::vector<std::optional<SortId>>& args,
                                                 std::optional<SortId> result) {
  std::vector<const Primitive*> out;
  for (const Primitive* p : overloads) {
    if (!arity_ok(*p, args.size()) || !egraph.is_live(*p)) continue;
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

std::vector<std::pair<SortId, engine::Callable>> function_value_sorts(
    const engine::EGraph& g, const std::string& target, const std::vector<SortId>& partial,
    std::optional<SortId> expected) {
  std::vector<std::pair<SortId, engine::Callable>> found;
  for (SortId s = 0; s < g.num_sorts(); ++s) {
    const engine::ContainerSort* fn = g.sort(s).container;
    if (!fn || fn->kind() != engine::ContainerKind::Fn || (expected && *expected != s)) continue;
    std::vector<SortId> inputs = partial;
    inputs.insert(inputs.end(), fn->params().begin(), fn->params().end() - 1);
    SortId output = fn->params().back();
    if (std::optional<engine::FunctionId> f = g.find_function(target)) {
      const FunctionDecl& decl = g.function(*f);
      if (decl.inputs == inputs && decl.output == output) {
        found.push_back({s, engine::Callable{target, nullptr, inputs, output}});
      }
      continue;
    }
    std::vector<std::optional<SortId>> wanted(inputs.begin(), inputs.end());
    auto prims = matching_overloads(g, g.primitives().overloads(target), wanted, output);
    if (!prims.empty()) found.push_back({s, engine::Callable{target, prims[0], inputs, output}});
  }
  return found;
}

}  // namespace kiln::dsl
