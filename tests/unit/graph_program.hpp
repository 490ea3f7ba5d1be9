// A rule-language program whose e-graph also has the graph sorts (Expr, Shape, View, Body), for
// the compiler's tests.
#pragma once

#include <string>

#include "compiler/sorts.hpp"
#include "tests/unit/test_program.hpp"

namespace kiln::testing {

class GraphProgram : public TestProgram {
 public:
  GraphProgram() { sorts_ = compiler::register_graph_sorts(egraph()); }
  const compiler::GraphSorts& sorts() const { return sorts_; }

  // The value of global `name` (a Body, a View, ...).
  engine::Value value_of(const std::string& name) { return global(name).value; }

 private:
  compiler::GraphSorts sorts_;
};

}  // namespace kiln::testing
