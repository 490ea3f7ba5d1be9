// A running rule-language program: the e-graph, its rules, rulesets and globals, and the
// command interpreter that `kiln egg` drives. Output goes to the given stream, in egglog's text.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dsl/lower.hpp"
#include "dsl/sexp.hpp"
#include "engine/builtins.hpp"
#include "engine/egraph.hpp"
#include "engine/rule.hpp"
#include "engine/run_report.hpp"
#include "engine/schedule.hpp"

namespace kiln::dsl {

class Session {
 public:
  explicit Session(std::ostream& out);

  // Reads a whole file first (so a syntax error runs nothing), then runs its commands in order.
  // Throws support::UserError at the first failing command.
  void run_file(const std::string& path);
  void run_text(const std::string& name, const std::string& text);
  void run_command(const Sexp& command);

  engine::EGraph& egraph() { return state_.egraph; }
  const engine::EGraph& egraph() const { return state_.egraph; }
  const engine::Builtins& builtins() const { return builtins_; }
  // All run reports of the program so far, folded together (for --stats).
  const engine::RunReport& total_report() const { return total_report_; }
  // Opt-in limits applied to every run (default: none, which is egglog's behaviour).
  void set_limits(const engine::RunLimits& limits) { limits_ = limits; }
  // The rules declared so far, in order (with their rulesets).
  const std::vector<engine::Rule>& rules() const { return state_.rules; }
  // The value and sort of a global, if defined.
  const Global* global(const std::string& name) const;

 private:
  struct State {
    engine::EGraph egraph;
    std::vector<engine::Rule> rules;
    std::set<std::string> rulesets{""};
    // unstable-combined-ruleset: name -> the rulesets it names (plain or combined).
    std::map<std::string, std::vector<std::string>> combined;
    std::map<std::string, Global> globals;
  };

  Scope scope() const;
  void run_sexps(const std::vector<Sexp>& commands);
  void dispatch(const Sexp& command);

  void declare_sort(const Sexp& c);
  void declare_container_sort(const std::string& name, const Sexp& spec);
  void declare_datatype(const Sexp& c);
  void declare_datatypes(const Sexp& c);
  void declare_variants(engine::SortId sort, const Sexp& list, std::size_t first);
  void declare_constructor(const Sexp& c);
  void declare_function(const Sexp& c, engine::FunctionKind kind);
  void declare_primitive(const Sexp& c);
  void declare_ruleset(const Sexp& c);
  void declare_combined_ruleset(const Sexp& c);
  // Every combined ruleset with the plain rulesets it reaches.
  std::map<std::string, std::set<std::string>> combined_members() const;
  void add_rule(const Sexp& c);
  void add_rewrite(const Sexp& c, bool both_ways);
  void run_top_level_actions(const Sexp& c);
  void let_global(const Sexp& c);
  void run(const Sexp& c);
  void run_schedule(const Sexp& c);
  void check(const Sexp& c);
  void fail(const Sexp& c);
  void extract(const Sexp& c);
  void with_dynamic_cost(const Sexp& c);
  void multi_extract(const Sexp& c);
  void push(const Sexp& c);
  void pop(const Sexp& c);
  void print_size(const Sexp& c);
  void print_function(const Sexp& c);
  void write_rows(const std::string& name, const support::Span& span, std::uint64_t limit,
                  bool csv, std::ostream& out);
  void input(const Sexp& c);
  void output(const Sexp& c);
  void print_stats(const Sexp& c);
  void include(const Sexp& c);

  engine::SortId lookup_sort(const Sexp& name) const;
  void add_constructor(const std::string& name, const std::vector<engine::SortId>& inputs,
                       engine::SortId output, std::uint64_t cost, bool unextractable,
                       const support::Span& span);
  void check_new_name(const Sexp& name) const;
  engine::Schedule parse_schedule(const Sexp& s);
  void require_ruleset(const std::string& name, const support::Span& span) const;
  void require_rule_target(const std::string& ruleset, const support::Span& span) const;
  void execute_schedule(const engine::Schedule& schedule);

  std::ostream& out_;
  engine::Builtins builtins_;
  State state_;
  // `(push N)` saves one copy of the state standing for N levels, so a large N costs nothing.
  struct Saved {
    State state;
    std::uint64_t levels = 0;
  };
  std::vector<Saved> stack_;
  engine::RunLimits limits_;
  engine::RunReport total_report_;
  std::vector<std::string> include_dirs_;
};

}  // namespace kiln::dsl
