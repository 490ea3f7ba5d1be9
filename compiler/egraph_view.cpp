// Reading a group's e-graph as HLIR; see egraph_view.hpp.
#include "compiler/egraph_view.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "engine/builtins.hpp"
#include "engine/extract.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

using engine::ENode;
using engine::FunctionId;
using engine::RowId;
using engine::Value;

EGraphView::EGraphView(const engine::EGraph& egraph, const GraphSorts& sorts)
    : egraph_(egraph), sorts_(sorts) {
  auto hlir = egraph.find_sort("HLIR");
  KILN_ASSERT(hlir.has_value(), "search: the e-graph has no HLIR sort (rules/hlir.egg)");
  hlir_sort_ = *hlir;
  const auto dtype_sort = egraph.find_sort("DType");
  for (FunctionId f = 0; f < egraph.num_functions(); ++f) {
    const engine::FunctionDecl& decl = egraph.function(f);
    functions_[decl.name] = f;
    if (decl.kind != engine::FunctionKind::Constructor) continue;
    const engine::Table& t = egraph.table(f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r) || t.subsumed(r)) continue;
      const Value out = find(t.output(r));
      if (decl.output == hlir_sort_) {
        nodes_[out].push_back(ENode{f, r});
      } else if (dtype_sort && decl.output == *dtype_sort && decl.inputs.empty()) {
        // (F32), (BF16), ...: the constructor's name is the dtype's, upper-cased.
        std::string lower = decl.name;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (auto d = graph::parse_dtype(lower)) dtypes_.emplace(out, *d);
      }
    }
  }
  for_rows("LCons", [&](RowId, const Value* row) {
    lists_.emplace(find(row[2]), std::make_pair(find(row[0]), find(row[1])));
  });
  for_rows("Operand", [&](RowId, const Value* row) {
    operands_.emplace(find(row[5]),
                      Operand{find(row[0]), engine::I64Sort::get(row[1]),
                              sorts_.expr_sort->get(row[2]), sorts_.expr_sort->get(row[3]),
                              sorts_.expr_sort->get(row[4])});
  });
}

std::optional<FunctionId> EGraphView::function(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) return std::nullopt;
  return it->second;
}

bool EGraphView::is(const ENode& node, const char* name) const {
  auto f = function(name);
  return f && *f == node.function;
}

const std::string& EGraphView::name(const ENode& node) const {
  return egraph_.function(node.function).name;
}

const Value* EGraphView::row(const ENode& node) const {
  return egraph_.table(node.function).row(node.row);
}

Value EGraphView::eclass(const ENode& node) const {
  return find(egraph_.table(node.function).output(node.row));
}

std::string EGraphView::origin(const ENode& node) const {
  return egraph_.row_origin(node.function, node.row).value_or("");
}

const std::vector<ENode>& EGraphView::nodes(Value eclass) const {
  static const std::vector<ENode> none;
  auto it = nodes_.find(find(eclass));
  return it == nodes_.end() ? none : it->second;
}

std::vector<Value> EGraphView::list(Value l) const {
  std::vector<Value> out;
  std::set<Value> seen;  // a list unioned with its own tail would loop
  while (seen.insert(find(l)).second) {
    auto it = lists_.find(find(l));
    if (it == lists_.end()) return out;
    out.push_back(it->second.first);
    l = it->second.second;
  }
  return out;
}

std::optional<graph::DType> EGraphView::dtype(Value eclass) const {
  auto it = dtypes_.find(find(eclass));
  if (it == dtypes_.end()) return std::nullopt;
  return it->second;
}

std::optional<EGraphView::Operand> EGraphView::operand(Value eclass) const {
  auto it = operands_.find(find(eclass));
  if (it == operands_.end()) return std::nullopt;
  return it->second;
}

std::size_t EGraphView::eclasses() const {
  std::set<Value> classes;
  for (FunctionId f = 0; f < egraph_.num_functions(); ++f) {
    if (egraph_.function(f).kind != engine::FunctionKind::Constructor) continue;
    const engine::Table& t = egraph_.table(f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (t.alive(r)) classes.insert(find(t.output(r)));
    }
  }
  return classes.size();
}

std::size_t EGraphView::enodes() const {
  std::size_t n = 0;
  for (FunctionId f = 0; f < egraph_.num_functions(); ++f) {
    if (egraph_.function(f).kind == engine::FunctionKind::Constructor) n += egraph_.table(f).size();
  }
  return n;
}

}  // namespace kiln::compiler
