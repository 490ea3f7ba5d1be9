// Typing helpers shared by query and action lowering: literal sorts and values, call shapes,
// and primitive overload resolution from partially known sorts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dsl/lower.hpp"
#include "engine/container.hpp"
#include "support/diagnostic.hpp"

namespace kiln::dsl {

// The engine and support names every lowering file uses.
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

// True if a primitive accepts `n` arguments (a variadic one repeats its last input sort).
bool arity_ok(const engine::Primitive& p, std::size_t n);
// The sort the primitive expects for argument i.
engine::SortId input_sort(const engine::Primitive& p, std::size_t i);
// The overloads still possible given the argument and result sorts known so far.
std::vector<const engine::Primitive*> matching_overloads(
    const engine::EGraph& egraph, const std::vector<const engine::Primitive*>& overloads,
    const std::vector<std::optional<engine::SortId>>& args, std::optional<engine::SortId> result);

// The UnstableFn sorts (only `expected`, when given) whose values can call `target` (a
// constructor, function or primitive) with `partial` arguments first, each with its Callable.
std::vector<std::pair<engine::SortId, engine::Callable>> function_value_sorts(
    const engine::EGraph& egraph, const std::string& target, const std::vector<engine::SortId>& partial,
    std::optional<engine::SortId> expected);

// The sort of a literal (Int, Float, Bool, String, the empty list as Unit), or nullopt.
std::optional<engine::SortId> literal_sort(const Scope& scope, const Sexp& e);
// The engine value of a literal (interning strings and floats).
engine::Value literal_value(const Scope& scope, const Sexp& e);
// The function name at the head of a call; a user error if there is none.
const std::string& head_name(const Sexp& call);
// A user error unless the call passes exactly as many arguments as `f` takes.
void check_arity(const engine::FunctionDecl& f, const Sexp& call);

}  // namespace kiln::dsl
