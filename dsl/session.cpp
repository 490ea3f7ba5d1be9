#include "dsl/session.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "dsl/options.hpp"
#include "dsl/table_files.hpp"
#include "engine/container.hpp"
#include "engine/extract.hpp"
#include "engine/query_plan.hpp"
#include "engine/runner.hpp"
#include "support/diagnostic.hpp"

namespace kiln::dsl {

using engine::FunctionDecl;
using engine::FunctionKind;
using engine::MergeKind;
using engine::SortId;
using engine::Value;
using support::UserError;

namespace {

std::vector<const Sexp*> list_items(const Sexp& list, const char* what) {
  if (!list.is_list()) throw UserError(std::string("expected a list of ") + what, list.span);
  std::vector<const Sexp*> out;
  for (const Sexp& item : list.items) out.push_back(&item);
  return out;
}

std::int64_t expect_int(const Sexp& s, const char* what) {
  if (s.kind != SexpKind::Int) throw UserError(std::string("expected ") + what, s.span);
  return s.int_value;
}

std::uint64_t expect_count(const Sexp& s, const char* what) {
  std::int64_t n = expect_int(s, what);
  if (n < 0) throw UserError(std::string(what) + " must not be negative", s.span);
  return static_cast<std::uint64_t>(n);
}

const std::string& expect_symbol(const Sexp& s, const char* what) {
  if (!s.is_symbol()) throw UserError(std::string("expected ") + what, s.span);
  return s.text;
}

std::string source_text(const Sexp& s) {
  if (!s.span.known()) return s.to_string();
  return s.span.file->text().substr(s.span.begin, s.span.end - s.span.begin);
}

}  // namespace

Session::Session(std::ostream& out) : out_(out) { builtins_ = engine::add_builtins(state_.egraph); }

Scope Session::scope() const {
  return Scope{const_cast<engine::EGraph&>(state_.egraph), builtins_, state_.globals};
}

const Global* Session::global(const std::string& name) const {
  auto found = state_.globals.find(name);
  return found == state_.globals.end() ? nullptr : &found->second;
}

void Session::run_file(const std::string& path) {
  auto file = support::SourceFile::load(path);
  include_dirs_.push_back(std::filesystem::path(path).parent_path().string());
  try {
    run_sexps(read_sexps(file));
  } catch (...) {
    include_dirs_.pop_back();
    throw;
  }
  include_dirs_.pop_back();
}

void Session::run_text(const std::string& name, const std::string& text) {
  run_sexps(read_sexps(std::make_shared<const support::SourceFile>(name, text)));
}

void Session::run_sexps(const std::vector<Sexp>& commands) {
  for (const Sexp& command : commands) run_command(command);
}

void Session::run_command(const Sexp& c) {
  try {
    dispatch(c);
    state_.egraph.rebuild();
  } catch (const UserError& e) {
    support::rethrow_with_span(e, c.span);  // e.g. a merge conflict found by rebuild
  }
}

void Session::dispatch(const Sexp& c) {
  if (!c.is_list() || c.items.empty() || !c.items[0].is_symbol()) {
    throw UserError("expected a command such as (datatype ...), (rule ...) or (run ...)", c.span);
  }
  const std::string& head = c.items[0].text;
  if (head == "sort") declare_sort(c);
  else if (head == "datatype") declare_datatype(c);
  else if (head == "datatype*") declare_datatypes(c);
  else if (head == "constructor") declare_constructor(c);
  else if (head == "with-dynamic-cost") with_dynamic_cost(c);
  else if (head == "function") declare_function(c, FunctionKind::Function);
  else if (head == "relation") declare_function(c, FunctionKind::Relation);
  else if (head == "primitive") declare_primitive(c);
  else if (head == "ruleset") declare_ruleset(c);
  else if (head == "unstable-combined-ruleset") declare_combined_ruleset(c);
  else if (head == "rule") add_rule(c);
  else if (head == "rewrite") add_rewrite(c, false);
  else if (head == "birewrite") add_rewrite(c, true);
  else if (head == "let") let_global(c);
  else if (head == "run") run(c);
  else if (head == "run-schedule") run_schedule(c);
  else if (head == "check") check(c);
  else if (head == "fail") fail(c);
  else if (head == "extract") extract(c);
  else if (head == "multi-extract") multi_extract(c);
  else if (head == "push") push(c);
  else if (head == "pop") pop(c);
  else if (head == "print-size") print_size(c);
  else if (head == "print-function") print_function(c);
  else if (head == "input") input(c);
  else if (head == "output") output(c);
  else if (head == "print-stats") print_stats(c);
  else if (head == "include") include(c);
  else run_top_level_actions(c);
}

// ----- declarations --------------------------------------------------------------------------

void Session::check_new_name(const Sexp& name) const {
  const std::string& n = expect_symbol(name, "a name");
  if (state_.egraph.find_sort(n)) throw UserError("sort '" + n + "' is already declared", name.span);
  if (state_.egraph.find_function(n) || state_.egraph.has_primitive(n)) {
    throw UserError("function '" + n + "' is already declared", name.span);
  }
  if (state_.globals.count(n)) throw UserError("'" + n + "' is already a global", name.span);
}

SortId Session::lookup_sort(const Sexp& name) const {
  if (name.is_list()) {
    throw UserError("name the container sort first, e.g. (sort IntVec (Vec i64)), and use that name",
                    name.span);
  }
  const std::string& n = expect_symbol(name, "a sort name");
  std::optional<SortId> sort = state_.egraph.find_sort(n);
  if (!sort) throw UserError("unknown sort '" + n + "'", name.span);
  return *sort;
}

void Session::declare_sort(const Sexp& c) {
  if (c.items.size() == 3) {
    check_new_name(c.items[1]);
    declare_container_sort(c.items[1].text, c.items[2]);
    return;
  }
  if (c.items.size() != 2) throw UserError("expected (sort Name) or (sort Name (Vec sort))", c.span);
  check_new_name(c.items[1]);
  state_.egraph.add_sort(engine::Sort{c.items[1].text, true, nullptr});
}

// `(Vec T)`, `(Set T)`, `(MultiSet T)`, `(Map K V)`, `(Pair A B)` or `(Maybe T)` over declared
// sorts.
void Session::declare_container_sort(const std::string& name, const Sexp& spec) {
  if (spec.is_list() && spec.items.size() == 3 && spec.items[0].is_symbol("UnstableFn")) {
    std::vector<SortId> inputs;
    for (const Sexp* s : list_items(spec.items[1], "input sorts")) inputs.push_back(lookup_sort(*s));
    engine::add_function_value_sort(state_.egraph, builtins_, name, std::move(inputs),
                                    lookup_sort(spec.items[2]));
    return;
  }
  engine::ContainerKind kind{};
  std::size_t arity = 0;
  if (!spec.is_list() || spec.items.empty() || !spec.items[0].is_symbol() ||
      !engine::container_kind(spec.items[0].text, kind, arity)) {
    throw UserError("expected a container sort: (Vec T), (Set T), (MultiSet T), (Map K V), (Pair A B), "
                    "(Maybe T) or (UnstableFn (inputs...) output)",
                    spec.span);
  }
  if (spec.items.size() - 1 != arity) {
    throw UserError(spec.items[0].text + " takes " + std::to_string(arity) + " sort argument(s)",
                    spec.span);
  }
  std::vector<SortId> params;
  for (std::size_t i = 1; i < spec.items.size(); ++i) params.push_back(lookup_sort(spec.items[i]));
  engine::add_container_sort(state_.egraph, builtins_, name, kind, std::move(params));
}

void Session::add_constructor(const std::string& name, const std::vector<SortId>& inputs,
                              SortId output, std::uint64_t cost, bool unextractable,
                              const support::Span& span) {
  if (!state_.egraph.is_eq(output)) {
    throw UserError("a constructor must return a datatype or eq-sort, not " +
                        sort_name(state_.egraph, output),
                    span);
  }
  FunctionDecl decl;
  decl.name = name;
  decl.kind = FunctionKind::Constructor;
  decl.inputs = inputs;
  decl.output = output;
  decl.merge = MergeKind::Union;
  decl.cost = cost;
  decl.unextractable = unextractable;
  state_.egraph.add_function(std::move(decl));
}

void Session::declare_datatype(const Sexp& c) {
  if (c.items.size() < 2) throw UserError("expected (datatype Name (Variant sorts...) ...)", c.span);
  check_new_name(c.items[1]);
  SortId sort = state_.egraph.add_sort(engine::Sort{c.items[1].text, true, nullptr});
  declare_variants(sort, c, 2);
}

// Each item of `list` from `first` on is a variant `(Name sorts... [:cost N] [:unextractable])`.
void Session::declare_variants(SortId sort, const Sexp& list, std::size_t first) {
  for (std::size_t i = first; i < list.items.size(); ++i) {
    const Sexp& variant = list.items[i];
    if (!variant.is_list() || variant.items.empty()) {
      throw UserError("expected a variant (Name sorts... [:cost N])", variant.span);
    }
    check_new_name(variant.items[0]);
    CommandParts parts = split_options(variant, {":cost"}, {":unextractable"});
    std::vector<SortId> inputs;
    for (const Sexp* s : parts.positional) inputs.push_back(lookup_sort(*s));
    std::uint64_t cost = parts.has(":cost") ? expect_count(parts.value(":cost"), "a cost") : 1;
    add_constructor(variant.items[0].text, inputs, sort, cost, parts.has(":unextractable"),
                    variant.span);
  }
}

void Session::declare_datatypes(const Sexp& c) {
  // Declare every sort first so variants may refer to each other.
  for (std::size_t i = 1; i < c.items.size(); ++i) {
    const Sexp& group = c.items[i];
    if (!group.is_list() || group.items.empty()) {
      throw UserError("expected (Name (Variant sorts...) ...)", group.span);
    }
    if (group.items[0].is_symbol("sort")) continue;  // containers come once all names exist
    check_new_name(group.items[0]);
    state_.egraph.add_sort(engine::Sort{group.items[0].text, true, nullptr});
  }
  for (std::size_t i = 1; i < c.items.size(); ++i) {
    const Sexp& group = c.items[i];
    if (!group.items[0].is_symbol("sort")) continue;
    if (group.items.size() != 3) throw UserError("expected (sort Name (Vec sort))", group.span);
    check_new_name(group.items[1]);
    declare_container_sort(group.items[1].text, group.items[2]);
  }
  for (std::size_t i = 1; i < c.items.size(); ++i) {
    const Sexp& group = c.items[i];
    if (group.items[0].is_symbol("sort")) continue;
    declare_variants(*state_.egraph.find_sort(group.items[0].text), group, 1);
  }
}

void Session::declare_constructor(const Sexp& c) {
  CommandParts parts = split_options(c, {":cost"}, {":unextractable"});
  if (parts.positional.size() != 3) {
    throw UserError("expected (constructor Name (input sorts...) OutputSort)", c.span);
  }
  check_new_name(*parts.positional[0]);
  std::vector<SortId> inputs;
  for (const Sexp* s : list_items(*parts.positional[1], "input sorts")) inputs.push_back(lookup_sort(*s));
  SortId output = lookup_sort(*parts.positional[2]);
  std::uint64_t cost = parts.has(":cost") ? expect_count(parts.value(":cost"), "a cost") : 1;
  add_constructor(parts.positional[0]->text, inputs, output, cost, parts.has(":unextractable"),
                  c.span);
}

// (with-dynamic-cost DECL...): egglog's experimental dynamic costs. Every constructor the
// declarations add gets a cost table, the function cost_table_NAME (its inputs) -> i64
// :no-merge, that set-cost writes; extraction takes a row's cost from it before the declared
// :cost (engine/extract.cpp).
void Session::with_dynamic_cost(const Sexp& c) {
  for (std::size_t i = 1; i < c.items.size(); ++i) {
    const Sexp& d = c.items[i];
    if (!d.is_list() || d.items.empty() ||
        !(d.items[0].is_symbol("datatype") || d.items[0].is_symbol("datatype*") ||
          d.items[0].is_symbol("constructor"))) {
      throw UserError("with-dynamic-cost takes datatype, datatype* and constructor declarations", d.span);
    }
    std::size_t before = state_.egraph.num_functions();
    dispatch(d);
    for (engine::FunctionId f = static_cast<engine::FunctionId>(before); f < state_.egraph.num_functions(); ++f) {
      const FunctionDecl& ctor = state_.egraph.function(f);
      if (ctor.kind != FunctionKind::Constructor) continue;
      FunctionDecl table;
      table.name = engine::cost_table_name(ctor.name);
      if (state_.egraph.find_function(table.name)) {
        throw UserError("function '" + table.name + "' is already declared", d.span);
      }
      table.kind = FunctionKind::Function;
      table.inputs = ctor.inputs;
      table.output = builtins_.i64;
      table.merge = engine::MergeKind::NoMerge;
      table.unextractable = true;
      state_.egraph.add_function(std::move(table));
    }
  }
}

void Session::declare_function(const Sexp& c, FunctionKind kind) {
  bool relation = kind == FunctionKind::Relation;
  CommandParts parts = relation ? split_options(c, {})
                                : split_options(c, {":merge", ":cost"}, {":no-merge", ":unextractable"});
  std::size_t want = relation ? 2 : 3;
  if (parts.positional.size() != want) {
    throw UserError(relation ? "expected (relation Name (sorts...))"
                             : "expected (function Name (input sorts...) OutputSort :merge EXPR)",
                    c.span);
  }
  check_new_name(*parts.positional[0]);
  FunctionDecl decl;
  decl.name = parts.positional[0]->text;
  decl.kind = kind;
  for (const Sexp* s : list_items(*parts.positional[1], "input sorts")) {
    decl.inputs.push_back(lookup_sort(*s));
  }
  if (relation) {
    decl.output = builtins_.unit;
    decl.merge = MergeKind::NoMerge;  // all outputs are (), so rows never conflict
  } else {
    decl.output = lookup_sort(*parts.positional[2]);
    if (parts.has(":merge") == parts.has(":no-merge")) {
      throw UserError("a function needs exactly one of :merge EXPR or :no-merge", c.span);
    }
    if (parts.has(":merge")) {
      auto merge = std::make_shared<CompiledExpression>(
          compile_merge(scope(), parts.value(":merge"), decl.output));
      decl.merge = MergeKind::Custom;
      std::string name = decl.name;
      decl.merge_fn = [merge, name](engine::EGraph& egraph, Value old_value, Value new_value) {
        std::vector<Value> registers(std::max<std::uint32_t>(merge->program.num_registers, 2));
        registers[0] = old_value;
        registers[1] = new_value;
        try {
          engine::run_actions(egraph, merge->program, registers.data());
        } catch (const UserError& e) {
          throw support::RuntimeFailure("merge function of '" + name + "' failed: " + e.message(),
                                        e.span());
        }
        return registers[merge->result];
      };
    } else {
      decl.merge = MergeKind::NoMerge;
    }
    if (parts.has(":cost")) decl.cost = expect_count(parts.value(":cost"), "a cost");
    decl.unextractable = parts.has(":unextractable");
  }
  state_.egraph.add_function(std::move(decl));
}

// (primitive name (input sorts...) OutputSort body): a primitive whose value is `body`, an
// expression over its arguments `_0`, `_1`, ... (egglog's way to define a function value's
// code, as in `(unstable-fn "name")`). The body runs as an action, against the e-graph of the
// call: it may build terms, where the call may (see Primitive::in_queries).
void Session::declare_primitive(const Sexp& c) {
  if (c.items.size() != 5) {
    throw UserError("expected (primitive name (input sorts...) OutputSort body)", c.span);
  }
  check_new_name(c.items[1]);
  engine::Primitive p;
  p.name = c.items[1].text;
  std::vector<std::pair<std::string, SortId>> params;
  // One input sort may stand without parentheses, as egglog prints it.
  std::vector<const Sexp*> inputs =
      c.items[2].is_symbol() ? std::vector<const Sexp*>{&c.items[2]} : list_items(c.items[2], "input sorts");
  for (const Sexp* s : inputs) {
    p.inputs.push_back(lookup_sort(*s));
    params.emplace_back("_" + std::to_string(params.size()), p.inputs.back());
  }
  p.output = lookup_sort(c.items[3]);
  const Sexp& body_text = c.items[4];
  auto body = std::make_shared<CompiledExpression>(
      compile_with_params(scope(), body_text, params, p.output, ActionContext::TopLevel));
  try {
    compile_with_params(scope(), body_text, params, p.output, ActionContext::Rule);
  } catch (const UserError&) {
    p.in_rule_actions = false;  // it reads a function's value (the top-level body compiled)
  }
  p.in_queries = std::all_of(body->program.instrs.begin(), body->program.instrs.end(),
                             [](const engine::ActionInstr& instr) {
                               return instr.op == engine::ActionOp::Copy ||
                                      (instr.op == engine::ActionOp::Primitive && instr.primitive->in_queries);
                             });
  std::size_t arity = params.size();
  bool pure = p.in_queries;
  p.apply = [body, arity, pure](const Value* args, std::size_t, Value& result) {
    engine::PrimitiveContext outer = engine::primitive_context();
    if (!outer.egraph || (!pure && !outer.may_insert)) {
      // Reached through a function value (unstable-app) from a search, which only reads.
      engine::primitive_failure_reason() = "its body builds or reads terms, which a search may not";
      return false;
    }
    std::vector<Value> registers(std::max<std::size_t>(body->program.num_registers, arity));
    std::copy_n(args, arity, registers.begin());
    // run_actions makes the context an action's; a call from a search gets its own back.
    try {
      engine::run_actions(*outer.egraph, body->program, registers.data());
    } catch (const UserError& e) {
      engine::primitive_context() = outer;
      engine::primitive_failure_reason() = e.message();
      return false;
    }
    engine::primitive_context() = outer;
    result = registers[body->result];
    return true;
  };
  state_.egraph.declare_primitive(std::move(p));
}

void Session::declare_ruleset(const Sexp& c) {
  if (c.items.size() != 2) throw UserError("expected (ruleset name)", c.span);
  const std::string& name = expect_symbol(c.items[1], "a ruleset name");
  if (state_.rulesets.count(name)) {
    throw UserError("ruleset '" + name + "' is already declared", c.items[1].span);
  }
  state_.rulesets.insert(name);
}

void Session::declare_combined_ruleset(const Sexp& c) {
  if (c.items.size() < 2) throw UserError("expected (unstable-combined-ruleset name rulesets...)", c.span);
  const std::string& name = expect_symbol(c.items[1], "a ruleset name");
  if (state_.rulesets.count(name)) {
    throw UserError("ruleset '" + name + "' is already declared", c.items[1].span);
  }
  state_.rulesets.insert(name);
  std::vector<std::string>& members = state_.combined[name];
  for (std::size_t i = 2; i < c.items.size(); ++i) {
    // Members may be declared later (egglog checks them when the ruleset runs).
    members.push_back(expect_symbol(c.items[i], "a ruleset name"));
  }
}

std::map<std::string, std::set<std::string>> Session::combined_members() const {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [name, direct] : state_.combined) {
    std::set<std::string>& leaves = out[name];
    std::set<std::string> visited{name};
    std::vector<std::string> work(direct.begin(), direct.end());
    while (!work.empty()) {
      std::string r = work.back();
      work.pop_back();
      if (!visited.insert(r).second) continue;
      auto nested = state_.combined.find(r);
      if (nested == state_.combined.end()) {
        leaves.insert(r);
      } else {
        work.insert(work.end(), nested->second.begin(), nested->second.end());
      }
    }
  }
  return out;
}

void Session::require_ruleset(const std::string& name, const support::Span& span) const {
  // egglog reports this when the run starts, so `(fail (run missing 1))` succeeds.
  if (!state_.rulesets.count(name)) {
    throw support::RuntimeFailure("no such ruleset '" + name + "'", span);
  }
  if (state_.combined.count(name)) {
    std::map<std::string, std::set<std::string>> members = combined_members();
    for (const std::string& member : members.at(name)) {
      if (!state_.rulesets.count(member)) {
        throw support::RuntimeFailure(
            "combined ruleset '" + name + "' names ruleset '" + member + "', which does not exist",
            span);
      }
    }
  }
}

// ----- rules ---------------------------------------------------------------------------------

void Session::require_rule_target(const std::string& ruleset, const support::Span& span) const {
  require_ruleset(ruleset, span);
  if (state_.combined.count(ruleset)) {
    throw UserError("a rule cannot be added to combined ruleset '" + ruleset +
                        "': a combined ruleset only names other rulesets",
                    span);
  }
}

namespace {

std::string option_string(const CommandParts& parts, const std::string& key) {
  if (!parts.has(key)) return "";
  const Sexp& v = parts.value(key);
  if (v.kind == SexpKind::String) return v.text;
  if (v.is_symbol()) return v.text;
  throw UserError("expected a name", v.span);
}

// egglog writes a rewrite's right-hand side, when its top constructor has no row for those
// children yet, with the matched e-class as its output, instead of a fresh class that the
// union merges away at once (the rows keep the order they are written in; a fresh class's row
// would be re-written at the end of its table by the rebuild). So the last two instructions of
// (union root rhs), Construct then Union, become one ConstructUnion.
void write_rhs_into_root(engine::ActionProgram& program, std::uint32_t root) {
  std::vector<engine::ActionInstr>& instrs = program.instrs;
  auto is_union = [](const engine::ActionInstr& i) { return i.op == engine::ActionOp::Union; };
  auto u = std::find_if(instrs.begin(), instrs.end(), is_union);
  if (u == instrs.end() || u == instrs.begin()) return;
  engine::ActionInstr& construct = *(u - 1);
  const engine::Operand& x = u->args[0];
  const engine::Operand& y = u->args[1];
  if (construct.op != engine::ActionOp::Construct || x.is_constant || x.reg != root || y.is_constant ||
      y.reg != construct.dst) {
    return;
  }
  for (const engine::ActionInstr& instr : instrs) {
    if (&instr == &*u) continue;
    for (const engine::Operand& o : instr.args) {
      if (!o.is_constant && o.reg == construct.dst) return;  // the class is read elsewhere
    }
  }
  construct.op = engine::ActionOp::ConstructUnion;
  construct.args.push_back(x);
  instrs.erase(u);
}

}  // namespace

void Session::add_rule(const Sexp& c) {
  CommandParts parts = split_options(c, {":ruleset", ":name"}, {":naive", ":unsafe-seminaive"});
  if (parts.positional.size() != 2) throw UserError("expected (rule (facts...) (actions...))", c.span);
  engine::Rule rule;
  rule.ruleset = option_string(parts, ":ruleset");
  if (parts.has(":ruleset")) require_rule_target(rule.ruleset, parts.value(":ruleset").span);
  // :unsafe-seminaive is egglog's default evaluation (semi-naive), so it changes nothing here.
  rule.naive = parts.has(":naive");
  rule.name = parts.has(":name") ? option_string(parts, ":name") : source_text(c);
  for (const engine::Rule& other : state_.rules) {
    if (other.name == rule.name && parts.has(":name")) {
      throw UserError("a rule named '" + rule.name + "' already exists", parts.value(":name").span);
    }
  }
  CompiledQuery query = compile_query(scope(), list_items(*parts.positional[0], "facts"));
  rule.actions = compile_actions(scope(), query, list_items(*parts.positional[1], "actions"),
                                 ActionContext::Rule);
  if (query.never_matches) return;
  rule.query = std::move(query.query);
  rule.span = c.span;
  state_.rules.push_back(std::move(rule));
}

void Session::add_rewrite(const Sexp& c, bool both_ways) {
  CommandParts parts = split_options(c, {":ruleset", ":name"}, {":subsume"}, {":when"});
  if (parts.positional.size() != 2) throw UserError("expected (rewrite lhs rhs)", c.span);
  std::string ruleset = option_string(parts, ":ruleset");
  if (parts.has(":ruleset")) require_rule_target(ruleset, parts.value(":ruleset").span);
  std::vector<const Sexp*> conditions;
  if (parts.has(":when")) {
    for (const Sexp* group : parts.options.at(":when")) {
      for (const Sexp* fact : list_items(*group, "facts")) conditions.push_back(fact);
    }
  }
  std::string base = parts.has(":name") ? option_string(parts, ":name") : source_text(c);
  for (int direction = 0; direction < (both_ways ? 2 : 1); ++direction) {
    const Sexp& lhs = *parts.positional[direction];
    const Sexp& rhs = *parts.positional[1 - direction];
    if (!lhs.is_list() || lhs.items.empty() ||
        (lhs.items[0].is_symbol() && !state_.egraph.find_function(lhs.items[0].text) &&
         state_.egraph.has_primitive(lhs.items[0].text))) {
      // A primitive call would leave the hidden root variable ungrounded.
      throw UserError("the left side of a rewrite must be a constructor call", lhs.span);
    }
    // (rule ((= root lhs) conditions...) ((union root rhs)))
    Sexp root;
    root.kind = SexpKind::Symbol;
    root.text = " rewrite-root";  // a name no user can write
    root.span = lhs.span;
    Sexp eq;
    eq.kind = SexpKind::List;
    eq.span = lhs.span;
    Sexp eq_head;
    eq_head.kind = SexpKind::Symbol;
    eq_head.text = "=";
    eq.items = {eq_head, root, lhs};
    std::vector<const Sexp*> facts{&eq};
    facts.insert(facts.end(), conditions.begin(), conditions.end());
    CompiledQuery query = compile_query(scope(), facts);
    const Binding& root_binding = query.names.at(root.text);
    if (!state_.egraph.is_eq(root_binding.sort)) {
      throw UserError("the left side of a rewrite must be an e-class (a constructor call, or a call "
                      "of a function returning a datatype), not " +
                          sort_name(state_.egraph, root_binding.sort) + ": its value cannot be unioned",
                      lhs.span);
    }
    Sexp union_action;
    union_action.kind = SexpKind::List;
    union_action.span = rhs.span;
    Sexp union_head;
    union_head.kind = SexpKind::Symbol;
    union_head.text = "union";
    union_action.items = {union_head, root, rhs};
    std::vector<const Sexp*> actions{&union_action};
    Sexp subsume_action;
    if (parts.has(":subsume")) {
      subsume_action.kind = SexpKind::List;
      subsume_action.span = lhs.span;
      Sexp head;
      head.kind = SexpKind::Symbol;
      head.text = "subsume";
      subsume_action.items = {head, lhs};
      actions.push_back(&subsume_action);
    }
    engine::Rule rule;
    rule.name = direction == 0 ? base : base + " (reversed)";
    rule.ruleset = ruleset;
    rule.actions = compile_actions(scope(), query, actions, ActionContext::Rule);
    if (!root_binding.is_constant) write_rhs_into_root(rule.actions, root_binding.var);
    if (query.never_matches) continue;
    rule.query = std::move(query.query);
    rule.span = c.span;
    state_.rules.push_back(std::move(rule));
  }
}

// ----- actions and globals -------------------------------------------------------------------

void Session::run_top_level_actions(const Sexp& c) {
  const std::string& head = c.items[0].text;
  static const std::set<std::string> actions{"set", "union", "delete", "subsume", "panic", "set-cost"};
  bool is_call = state_.egraph.find_function(head) || state_.egraph.has_primitive(head);
  if (!actions.count(head) && !is_call) {
    throw UserError("unknown command or function '" + head + "'", c.items[0].span);
  }
  CompiledQuery empty;
  engine::ActionProgram program = compile_actions(scope(), empty, {&c}, ActionContext::TopLevel);
  std::vector<Value> registers(program.num_registers);
  engine::run_actions(state_.egraph, program, registers.data());
}

void Session::let_global(const Sexp& c) {
  if (c.items.size() != 3) throw UserError("expected (let name expr)", c.span);
  check_new_name(c.items[1]);
  CompiledExpression expr = compile_expression(scope(), c.items[2]);
  std::vector<Value> registers(expr.program.num_registers);
  engine::run_actions(state_.egraph, expr.program, registers.data());
  state_.globals[c.items[1].text] = Global{expr.sort, registers[expr.result]};
}

// ----- running -------------------------------------------------------------------------------

void Session::execute_schedule(const engine::Schedule& schedule) {
  engine::Runner runner(state_.egraph, state_.rules, limits_, combined_members());
  engine::RunReport report = runner.run(schedule);
  total_report_.absorb(report);
}

void Session::run(const Sexp& c) {
  CommandParts parts = split_options(c, {}, {}, {":until"});
  std::string ruleset;
  std::uint64_t times = 0;
  if (parts.positional.size() == 1) {
    times = expect_count(*parts.positional[0], "an iteration count");
  } else if (parts.positional.size() == 2) {
    ruleset = expect_symbol(*parts.positional[0], "a ruleset name");
    require_ruleset(ruleset, parts.positional[0]->span);
    times = expect_count(*parts.positional[1], "an iteration count");
  } else {
    throw UserError("expected (run N) or (run ruleset N)", c.span);
  }
  std::optional<engine::Query> until;
  if (parts.has(":until")) until = compile_query(scope(), parts.options.at(":until")).query;
  execute_schedule(engine::Schedule::repeat(times, engine::Schedule::run(ruleset, until)));
}

engine::Schedule Session::parse_schedule(const Sexp& s) {
  if (s.is_symbol()) {
    require_ruleset(s.text, s.span);
    return engine::Schedule::run(s.text);
  }
  if (!s.is_list() || s.items.empty() || !s.items[0].is_symbol()) {
    throw UserError("expected a schedule: (run ...), (repeat N ...), (saturate ...) or (seq ...)", s.span);
  }
  const std::string& head = s.items[0].text;
  auto children = [&](std::size_t from) {
    std::vector<engine::Schedule> out;
    for (std::size_t i = from; i < s.items.size(); ++i) out.push_back(parse_schedule(s.items[i]));
    return out;
  };
  if (head == "run") {
    CommandParts parts = split_options(s, {}, {}, {":until"});
    std::string ruleset;
    if (parts.positional.size() > 1 || (parts.positional.size() == 1 && !parts.positional[0]->is_symbol())) {
      throw UserError("a schedule's run takes a ruleset name only, e.g. (repeat 3 (run name))", s.span);
    }
    if (parts.positional.size() == 1) {
      ruleset = parts.positional[0]->text;
      require_ruleset(ruleset, parts.positional[0]->span);
    }
    std::optional<engine::Query> until;
    if (parts.has(":until")) until = compile_query(scope(), parts.options.at(":until")).query;
    return engine::Schedule::run(ruleset, until);
  }
  if (head == "repeat") {
    if (s.items.size() < 2) throw UserError("expected (repeat N schedule...)", s.span);
    std::uint64_t times = expect_count(s.items[1], "a repeat count");
    return engine::Schedule::repeat(times, engine::Schedule::seq(children(2)));
  }
  if (head == "saturate") return engine::Schedule::saturate(engine::Schedule::seq(children(1)));
  if (head == "seq") return engine::Schedule::seq(children(1));
  throw UserError("unknown schedule '" + head + "'", s.items[0].span);
}

void Session::run_schedule(const Sexp& c) {
  std::vector<engine::Schedule> steps;
  for (std::size_t i = 1; i < c.items.size(); ++i) steps.push_back(parse_schedule(c.items[i]));
  execute_schedule(engine::Schedule::seq(std::move(steps)));
}

// ----- queries and output --------------------------------------------------------------------

void Session::check(const Sexp& c) {
  std::vector<const Sexp*> facts;
  for (std::size_t i = 1; i < c.items.size(); ++i) facts.push_back(&c.items[i]);
  CompiledQuery query = compile_query(scope(), facts);
  state_.egraph.rebuild();
  if (query.never_matches || !engine::has_match(state_.egraph, query.query)) {
    throw support::RuntimeFailure("check failed", c.span);
  }
}

void Session::fail(const Sexp& c) {
  if (c.items.size() != 2) throw UserError("expected (fail command)", c.span);
  if (c.items[1].is_list() && !c.items[1].items.empty() && c.items[1].items[0].is_symbol("include")) {
    throw UserError("include is not allowed inside (fail ...)", c.items[1].span);
  }
  try {
    run_command(c.items[1]);
  } catch (const support::RuntimeFailure&) {
    return;  // only run-time failures count; syntax and type errors still stop the program
  }
  throw support::RuntimeFailure("command should have failed", c.span);
}

void Session::extract(const Sexp& c) {
  CommandParts parts = split_options(c, {":extractor"});
  if (parts.positional.size() != 1 && parts.positional.size() != 2) {
    throw UserError("expected (extract expr [N] [:extractor name])", c.span);
  }
  if (parts.has(":extractor")) {
    // egglog's only named extractor; its tie-breaking is not specified, so kiln does not guess.
    const Sexp& name = parts.value(":extractor");
    throw UserError(name.text == "greedy-dag"
                        ? "kiln does not implement the greedy-dag extractor; omit :extractor to use the tree extractor"
                        : "unknown extractor '" + name.text + "'; omit :extractor to use the tree extractor",
                    name.span);
  }
  CompiledExpression expr = compile_expression(scope(), *parts.positional[0]);
  std::uint64_t variants =
      parts.positional.size() == 2 ? expect_count(*parts.positional[1], "a number of variants") : 0;
  std::vector<Value> registers(expr.program.num_registers);
  engine::run_actions(state_.egraph, expr.program, registers.data());
  state_.egraph.rebuild();
  Value value = state_.egraph.canonical(expr.sort, registers[expr.result]);
  engine::TreeExtractor extractor(state_.egraph);
  try {
    if (variants == 0) {
      out_ << extractor.term(expr.sort, value) << "\n";
      return;
    }
    // No extractable e-node prints an empty list, as in egglog (a single extract fails).
    std::vector<std::string> terms = extractor.variants(expr.sort, value, variants);
    out_ << "(\n";
    for (const std::string& t : terms) out_ << "   " << t << "\n";
    out_ << ")\n";
  } catch (const UserError& e) {
    throw support::RuntimeFailure("extraction failed: " + e.message(), c.span);
  }
}

// (multi-extract N e...): up to N variants of each expression (egglog's experimental command;
// a container or primitive value has one).
void Session::multi_extract(const Sexp& c) {
  if (c.items.size() < 3) throw UserError("expected (multi-extract N expr...)", c.span);
  std::uint64_t variants = expect_count(c.items[1], "a number of variants");
  if (variants == 0) throw UserError("multi-extract needs a positive number of variants", c.items[1].span);
  std::vector<std::pair<SortId, Value>> roots;
  for (std::size_t i = 2; i < c.items.size(); ++i) {
    CompiledExpression expr = compile_expression(scope(), c.items[i]);
    std::vector<Value> registers(expr.program.num_registers);
    engine::run_actions(state_.egraph, expr.program, registers.data());
    roots.emplace_back(expr.sort, registers[expr.result]);
  }
  state_.egraph.rebuild();
  engine::TreeExtractor extractor(state_.egraph);
  std::string text = "(\n";
  try {
    for (auto [sort, value] : roots) {
      std::vector<std::string> terms = extractor.variants(sort, state_.egraph.canonical(sort, value), variants);
      text += "   (\n";
      for (const std::string& t : terms) text += "      " + t + "\n";
      text += "   )\n";
    }
  } catch (const UserError& e) {
    throw support::RuntimeFailure("extraction failed: " + e.message(), c.span);
  }
  out_ << text << ")\n";
}

void Session::push(const Sexp& c) {
  std::uint64_t n = c.items.size() > 1 ? expect_count(c.items[1], "a count") : 1;
  if (n > 0) stack_.push_back(Saved{state_, n});
}

void Session::pop(const Sexp& c) {
  std::uint64_t n = c.items.size() > 1 ? expect_count(c.items[1], "a count") : 1;
  std::uint64_t depth = 0;  // counted only up to n, so it cannot overflow
  for (auto s = stack_.rbegin(); s != stack_.rend() && depth < n; ++s) {
    depth += std::min(s->levels, n - depth);
  }
  if (depth < n) throw support::RuntimeFailure("pop without a matching push", c.span);
  while (n > 0) {
    Saved& top = stack_.back();
    std::uint64_t levels = std::min(top.levels, n);
    top.levels -= levels;
    n -= levels;
    if (n > 0) {
      stack_.pop_back();
    } else if (top.levels > 0) {
      state_ = top.state;  // lower levels of the same push still need it
    } else {
      state_ = std::move(top.state);
      stack_.pop_back();
    }
  }
}

void Session::print_size(const Sexp& c) {
  const engine::EGraph& g = state_.egraph;
  if (c.items.size() == 2) {
    const std::string& name = expect_symbol(c.items[1], "a function name");
    std::optional<engine::FunctionId> f = g.find_function(name);
    if (!f) throw UserError("unknown function '" + name + "'", c.items[1].span);
    out_ << g.table(*f).size() << "\n";
    return;
  }
  if (c.items.size() != 1) throw UserError("expected (print-size [function])", c.span);
  std::vector<std::pair<std::string, std::size_t>> sizes;
  for (engine::FunctionId f = 0; f < g.num_functions(); ++f) {
    sizes.emplace_back(g.function(f).name, g.table(f).size());
  }
  std::sort(sizes.begin(), sizes.end());
  out_ << "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out_ << (i ? "\n " : "") << "(" << sizes[i].first << " " << sizes[i].second << ")";
  }
  out_ << ")\n";
}

void Session::print_function(const Sexp& c) {
  CommandParts parts = split_options(c, {":mode", ":file"});
  if (parts.positional.empty() || parts.positional.size() > 2) {
    throw UserError("expected (print-function name [N] [:mode default|csv] [:file \"path\"])", c.span);
  }
  bool csv = false;
  if (parts.has(":mode")) {
    const Sexp& mode = parts.value(":mode");
    if (!mode.is_symbol("default") && !mode.is_symbol("csv")) {
      throw UserError("print-function's :mode is default or csv, not " + mode.to_string(), mode.span);
    }
    csv = mode.is_symbol("csv");
  }
  const std::string& name = expect_symbol(*parts.positional[0], "a function name");
  std::uint64_t limit = parts.positional.size() == 2
                            ? expect_count(*parts.positional[1], "a row count")
                            : UINT64_MAX;
  std::ostringstream text;
  write_rows(name, parts.positional[0]->span, limit, csv, text);
  if (!parts.has(":file")) {
    out_ << text.str();
    return;
  }
  const Sexp& file = parts.value(":file");
  if (file.kind != SexpKind::String) throw UserError("expected a file name in quotes", file.span);
  std::ofstream to(file.text, std::ios::binary | std::ios::trunc);
  if (!to || !(to << text.str()) || !to.flush()) {
    throw support::RuntimeFailure("cannot write file '" + file.text + "'", file.span);
  }
}

// The rows of function (or global) `name`, as print-function shows them: egglog's default
// block, or one CSV line per row (name, arguments, output; a relation's output is its row).
void Session::write_rows(const std::string& name, const support::Span& span, std::uint64_t limit,
                         bool csv, std::ostream& out) {
  engine::EGraph& g = state_.egraph;
  engine::TreeExtractor extractor(g);
  auto show = [&](SortId sort, Value v) {
    try {
      return extractor.term(sort, v);
    } catch (const UserError&) {
      return std::string("Unextractable");
    }
  };
  auto line = [&](const std::string& head, const std::vector<std::string>& args,
                  const std::optional<std::string>& output) {
    if (csv) {
      out << csv_field(head);
      for (const std::string& a : args) out << "," << csv_field(a);
      if (output) out << "," << csv_field(*output);
      out << "\n";
      return;
    }
    out << "   (" << head;
    for (const std::string& a : args) out << " " << a;
    out << ")";
    if (output) out << " -> " << *output;
    out << "\n";
  };
  if (!csv) out << "(\n";
  if (const Global* global = this->global(name)) {
    if (limit > 0) line(name, {}, show(global->sort, g.canonical(global->sort, global->value)));
    if (!csv) out << ")\n";
    return;
  }
  std::optional<engine::FunctionId> f = g.find_function(name);
  if (!f) throw UserError("unknown function '" + name + "'", span);
  const FunctionDecl& decl = g.function(*f);
  const engine::Table& t = g.table(*f);
  std::uint64_t shown = 0;
  for (engine::RowId r = 0; r < t.end() && shown < limit; ++r) {
    if (!t.alive(r)) continue;
    ++shown;
    const Value* row = t.row(r);
    std::vector<std::string> args;
    for (std::size_t i = 0; i < decl.inputs.size(); ++i) args.push_back(show(decl.inputs[i], row[i]));
    std::optional<std::string> output;
    if (decl.kind == FunctionKind::Relation) {
      // A relation row is its own term; subsumed rows are not extractable.
      std::string term = "(" + decl.name;
      for (const std::string& a : args) term += " " + a;
      output = t.subsumed(r) ? std::string("Unextractable") : term + ")";
    } else if (decl.output != builtins_.unit) {
      output = show(decl.output, row[decl.inputs.size()]);
    }
    line(decl.name, args, output);
  }
  if (!csv) out << ")\n";
}

// (input f "file"): adds the rows of a tab-separated file to function or relation f.
void Session::input(const Sexp& c) {
  if (c.items.size() != 3 || c.items[2].kind != SexpKind::String) {
    throw UserError("expected (input function \"file\")", c.span);
  }
  const std::string& name = expect_symbol(c.items[1], "a function name");
  engine::EGraph& g = state_.egraph;
  std::optional<engine::FunctionId> f = g.find_function(name);
  if (!f) throw UserError("unknown function '" + name + "'", c.items[1].span);
  const FunctionDecl& decl = g.function(*f);
  std::vector<SortId> sorts = decl.inputs;
  if (decl.kind != FunctionKind::Relation) sorts.push_back(decl.output);
  for (std::size_t i = 0; i < sorts.size(); ++i) {
    bool output_column = i == decl.inputs.size();
    if (!readable_from_file(builtins_, sorts[i], output_column)) {
      throw UserError(std::string("input reads only ") +
                          (output_column ? "i64 and String outputs" : "i64, f64 and String keys") +
                          ", not " + sort_name(g, sorts[i]),
                      c.items[1].span);
    }
  }
  std::vector<std::vector<Value>> rows;
  try {
    rows = read_tsv_rows(c.items[2].text, sorts, builtins_);
  } catch (const UserError& e) {
    support::rethrow_with_span(e, c.items[2].span);
  }
  for (const std::vector<Value>& row : rows) {
    g.set(*f, row.data(), decl.kind == FunctionKind::Relation ? Value{0} : row.back());
  }
}

// (output "file" exprs...): appends each expression's extracted term to the file, one per line.
void Session::output(const Sexp& c) {
  if (c.items.size() < 2 || c.items[1].kind != SexpKind::String) {
    throw UserError("expected (output \"file\" expressions...)", c.span);
  }
  std::string text;
  for (std::size_t i = 2; i < c.items.size(); ++i) {
    CompiledExpression expr = compile_expression(scope(), c.items[i]);
    std::vector<Value> registers(expr.program.num_registers);
    engine::run_actions(state_.egraph, expr.program, registers.data());
    state_.egraph.rebuild();
    engine::TreeExtractor extractor(state_.egraph);
    try {
      text += extractor.term(expr.sort, state_.egraph.canonical(expr.sort, registers[expr.result]));
    } catch (const UserError& e) {
      throw support::RuntimeFailure("extraction failed: " + e.message(), c.items[i].span);
    }
    text += "\n";
  }
  std::ofstream to(c.items[1].text, std::ios::binary | std::ios::app);
  if (!to || !(to << text) || !to.flush()) {
    throw support::RuntimeFailure("cannot write file '" + c.items[1].text + "'", c.items[1].span);
  }
}

void Session::print_stats(const Sexp&) { out_ << total_report_.summary(); }

void Session::include(const Sexp& c) {
  if (c.items.size() != 2 || c.items[1].kind != SexpKind::String) {
    throw UserError("expected (include \"path\")", c.span);
  }
  std::string path = c.items[1].text;
  if (!std::filesystem::exists(path) && !include_dirs_.empty()) {
    std::filesystem::path beside = std::filesystem::path(include_dirs_.back()) / path;
    if (std::filesystem::exists(beside)) path = beside.string();
  }
  if (!std::filesystem::exists(path)) {
    throw UserError("cannot read included file '" + c.items[1].text + "'", c.items[1].span);
  }
  run_file(path);
}

}  // namespace kiln::dsl
