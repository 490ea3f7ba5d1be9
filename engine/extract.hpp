// Extraction: choosing one e-node per needed e-class. TreeExtractor is egglog's tree cost
// (`:cost` per constructor, literals cost 1); DagExtractor pays each shared e-class once and
// takes the cost of an e-node from a C++ callback (measured kernel times plug in here).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/egraph.hpp"

namespace kiln::engine {

// An e-node: a row of a constructor table.
struct ENode {
  FunctionId function = 0;
  RowId row = kNoRow;
};

// The cost table of a constructor declared inside `with-dynamic-cost` (egglog's experimental
// dynamic costs): a function of the constructor's inputs to i64 whose row, when present,
// replaces the constructor's declared :cost for that e-node.
inline std::string cost_table_name(const std::string& constructor) { return "cost_table_" + constructor; }

class TreeExtractor {
 public:
  explicit TreeExtractor(const EGraph& egraph);

  // Cost of the best term for a value of `sort` (literals cost their sort's literal cost);
  // nullopt if the e-class has no extractable term.
  std::optional<std::uint64_t> cost(SortId sort, Value value) const;
  // The best term, printed as egglog prints it. Throws support::UserError if there is none.
  std::string term(SortId sort, Value value) const;
  // Up to `limit` terms of the e-class, one per e-node, cheapest first.
  std::vector<std::string> variants(SortId sort, Value eclass, std::size_t limit) const;

 private:
  struct Best {
    std::uint64_t cost;
    ENode node;
  };
  std::optional<std::uint64_t> node_cost(const ENode& node) const;
  void print_node(const ENode& node, std::string& out) const;
  void print_value(SortId sort, Value value, std::string& out) const;
  void print_container(const ContainerSort& sort, Value value, std::string& out) const;
  // egglog's order of printed terms (by head name, then arguments; literals by their sort's
  // order): the order in which set, multiset and map elements print.
  // Past `kMaxCompareDepth` levels two terms count as equal (the stack stays bounded).
  int compare_terms(SortId sort, Value a, Value b, std::size_t depth = 0) const;

  const EGraph& egraph_;
  std::vector<std::optional<FunctionId>> cost_tables_;  // by constructor
  std::map<Value, Best> best_;  // by canonical e-class id
  // Containers print recursively (a term nests through them as deep as the e-graph lets it),
  // so their nesting is bounded to keep the call stack safe.
  mutable std::size_t container_depth_ = 0;
};

using ENodeCost = std::function<double(const EGraph&, const ENode&)>;

class DagExtractor {
 public:
  // `subsumed_too`: subsumed rows are offered as well, and `cost` decides whether they can be
  // chosen (a fallback that a rule subsumed for being slower, not for being wrong).
  DagExtractor(const EGraph& egraph, ENodeCost cost, bool subsumed_too = false);

  // The chosen e-node for each e-class reachable from the root, and their total cost
  // (each e-class counted once). nullopt if the root has no extractable term.
  struct Result {
    double cost = 0;
    std::map<Value, ENode> choice;
  };
  std::optional<Result> extract(Value root) const;

 private:
  struct Best {
    double total;
    ENode node;
    std::map<Value, double> classes;  // every e-class in the chosen sub-DAG -> its node cost
  };
  const EGraph& egraph_;
  std::map<Value, Best> best_;
};

}  // namespace kiln::engine
