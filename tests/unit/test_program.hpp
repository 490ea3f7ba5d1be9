// A rule-language program under test: a dsl::Session that prints into a buffer, with the
// look-ups unit tests make of it.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "dsl/session.hpp"
#include "engine/egraph.hpp"
#include "engine/extract.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/test_util.hpp"

namespace kiln::testing {

class TestProgram {
 public:
  TestProgram() = default;
  TestProgram(const TestProgram&) = delete;
  TestProgram& operator=(const TestProgram&) = delete;

  dsl::Session& session() { return session_; }
  engine::EGraph& egraph() { return session_.egraph(); }

  // Runs program text as the file "t.egg"; throws support::UserError like the session does.
  void run(const std::string& text) { session_.run_text("t.egg", text); }

  // Runs a command and returns what it printed.
  std::string print(const std::string& command) {
    out_.str("");
    run(command);
    return out_.str();
  }

  // The full diagnostic of the UserError that running `text` raises; empty if it raises none.
  std::string error(const std::string& text) {
    try {
      run(text);
    } catch (const support::UserError& e) {
      return e.what();
    }
    return "";
  }

  // Whether `(check facts)` passes.
  bool holds(const std::string& facts) { return error("(check " + facts + ")").empty(); }

  engine::FunctionId function(const std::string& name) {
    std::optional<engine::FunctionId> id = egraph().find_function(name);
    REQUIRE(id.has_value());
    return *id;
  }

  // Live rows of a function's table.
  std::size_t rows(const std::string& function_name) {
    return egraph().table(function(function_name)).size();
  }

  const dsl::Global& global(const std::string& name) {
    const dsl::Global* g = session_.global(name);
    REQUIRE(g != nullptr);
    return *g;
  }

  // The tree cost of a global's e-class; nullopt when nothing in it is extractable.
  std::optional<std::uint64_t> tree_cost(const std::string& global_name) {
    engine::TreeExtractor tree(egraph());
    return tree.cost(global(global_name).sort, global(global_name).value);
  }

 private:
  std::ostringstream out_;
  dsl::Session session_{out_};
};

}  // namespace kiln::testing
