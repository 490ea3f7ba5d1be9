// Type checking and lowering of rule-language expressions: facts become an engine Query,
// actions become an engine ActionProgram. All user mistakes are reported with the span of the
// offending expression.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsl/sexp.hpp"
#include "engine/action.hpp"
#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "engine/query.hpp"

namespace kiln::dsl {

struct Global {
  engine::SortId sort = 0;
  engine::Value value = 0;
};

// What names in expressions can refer to, besides local variables.
struct Scope {
  engine::EGraph& egraph;
  const engine::Builtins& builtins;
  const std::map<std::string, Global>& globals;
};

// A pattern variable after type checking: a query variable, or a constant it was equated to.
struct Binding {
  engine::SortId sort = 0;
  bool is_constant = false;
  std::uint32_t var = 0;
  engine::Value constant = 0;
};

struct CompiledQuery {
  engine::Query query;
  std::map<std::string, Binding> names;  // named pattern variables
  bool never_matches = false;            // two different constants were equated
};

// Compiles facts (`(= a b)` or calls). Unknown symbols that are not globals are pattern variables.
CompiledQuery compile_query(const Scope& scope, const std::vector<const Sexp*>& facts);

// Where actions run: in a rule (function lookups are not allowed) or at top level.
enum class ActionContext { Rule, TopLevel };

// Primitives that change a function's rows (unstable-multiset-fill-index, -clear-index): egglog
// has them in top-level actions only, so rules and queries reject them.
bool top_level_only(const std::string& primitive);

// Compiles actions. Registers 0..query.num_vars()-1 hold a match of `query` when run.
engine::ActionProgram compile_actions(const Scope& scope, const CompiledQuery& query,
                                      const std::vector<const Sexp*>& actions,
                                      ActionContext context);

// Compiles one expression evaluated at top level (let, extract). The value ends up in
// register `result`.
struct CompiledExpression {
  engine::ActionProgram program;
  std::uint32_t result = 0;
  engine::SortId sort = 0;
};
CompiledExpression compile_expression(const Scope& scope, const Sexp& expr,
                                      std::optional<engine::SortId> expected = std::nullopt);

// An expression over named parameters, which hold registers 0, 1, ... when it runs; its value
// must have sort `expected`.
CompiledExpression compile_with_params(const Scope& scope, const Sexp& expr,
                                       const std::vector<std::pair<std::string, engine::SortId>>& params,
                                       engine::SortId expected, ActionContext context);

// A merge expression over the variables `old` and `new` of `sort`.
CompiledExpression compile_merge(const Scope& scope, const Sexp& expr, engine::SortId sort);

// The name of a sort, for messages.
std::string sort_name(const engine::EGraph& egraph, engine::SortId sort);

}  // namespace kiln::dsl
