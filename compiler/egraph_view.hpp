// Reading a group's saturated e-graph as HLIR: the e-nodes of each e-class, Kernel and Gemm rows,
// input lists, Gemm operands, DType terms. The search phases read the e-graph only through it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/sorts.hpp"
#include "engine/egraph.hpp"
#include "engine/extract.hpp"
#include "graph/dtype.hpp"
#include "graph/expr.hpp"

namespace kiln::compiler {

class EGraphView {
 public:
  EGraphView(const engine::EGraph& egraph, const GraphSorts& sorts);

  const engine::EGraph& egraph() const { return egraph_; }
  const GraphSorts& sorts() const { return sorts_; }
  engine::SortId hlir_sort() const { return hlir_sort_; }

  engine::Value find(engine::Value v) const { return egraph_.find_const(v); }
  std::optional<engine::FunctionId> function(const std::string& name) const;
  // True if `node` is a row of the function named `name`.
  bool is(const engine::ENode& node, const char* name) const;
  const std::string& name(const engine::ENode& node) const;
  const engine::Value* row(const engine::ENode& node) const;
  // The canonical e-class a node computes.
  engine::Value eclass(const engine::ENode& node) const;
  // The rule that created the row (empty: the encoded graph or a top-level command).
  std::string origin(const engine::ENode& node) const;

  // Live rows of a function, in row order; subsumed ones skipped (extraction cannot pick them)
  // unless asked for (a rule's check judges every row it made).
  template <class Visit>
  void for_rows(const std::string& name, Visit&& visit, bool subsumed_too = false) const {
    auto f = function(name);
    if (!f) return;
    const engine::Table& t = egraph_.table(*f);
    for (engine::RowId r = 0; r < t.end(); ++r) {
      if (t.alive(r) && (subsumed_too || !t.subsumed(r))) visit(r, t.row(r));
    }
  }

  // The live, unsubsumed e-nodes of an HLIR e-class, in (function, row) order.
  const std::vector<engine::ENode>& nodes(engine::Value eclass) const;
  // The HLIR e-classes of an HLIRList e-class, in order.
  std::vector<engine::Value> list(engine::Value l) const;
  // A DType e-class as a dtype (nullopt: not a DType constructor term).
  std::optional<graph::DType> dtype(engine::Value eclass) const;

  // A GemmOperand e-class: buffer, trans, leading dim, offset, batch stride.
  struct Operand {
    engine::Value buffer;
    std::int64_t trans;
    graph::Expr ld, offset, stride;
  };
  std::optional<Operand> operand(engine::Value eclass) const;

  std::size_t eclasses() const;
  std::size_t enodes() const;

 private:
  const engine::EGraph& egraph_;
  const GraphSorts& sorts_;
  engine::SortId hlir_sort_ = 0;
  std::map<std::string, engine::FunctionId> functions_;
  std::map<engine::Value, std::pair<engine::Value, engine::Value>> lists_;
  std::map<engine::Value, std::vector<engine::ENode>> nodes_;
  std::map<engine::Value, graph::DType> dtypes_;
  std::map<engine::Value, Operand> operands_;
};

}  // namespace kiln::compiler
