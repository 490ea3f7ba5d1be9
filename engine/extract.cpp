#include "engine/extract.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "engine/container.hpp"
#include "support/diagnostic.hpp"

namespace kiln::engine {
namespace {

bool extractable(const EGraph& egraph, FunctionId f) {
  const FunctionDecl& decl = egraph.function(f);
  return decl.kind == FunctionKind::Constructor && !decl.unextractable;
}

std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = a + b;
  return sum < a ? std::numeric_limits<std::uint64_t>::max() : sum;
}

// Calls visit(node) for every live, unsubsumed (or, with `subsumed_too`, every live) row of every
// extractable table, in a fixed order.
template <class Visit>
void for_each_enode(const EGraph& egraph, Visit&& visit, bool subsumed_too = false) {
  for (FunctionId f = 0; f < egraph.num_functions(); ++f) {
    if (!extractable(egraph, f)) continue;
    const Table& t = egraph.table(f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (t.alive(r) && (subsumed_too || !t.subsumed(r))) visit(ENode{f, r});
    }
  }
}

}  // namespace

TreeExtractor::TreeExtractor(const EGraph& egraph) : egraph_(egraph) {
  for (FunctionId f = 0; f < egraph_.num_functions(); ++f) {
    const FunctionDecl& decl = egraph_.function(f);
    cost_tables_.push_back(decl.kind == FunctionKind::Constructor
                               ? egraph_.find_function(cost_table_name(decl.name))
                               : std::nullopt);
  }
  // Bellman-Ford style: relax every e-node until no class gets cheaper. Strict improvement only,
  // so ties keep the earlier (older) e-node and results are deterministic.
  bool changed = true;
  while (changed) {
    changed = false;
    for_each_enode(egraph_, [&](const ENode& node) {
      std::optional<std::uint64_t> c = node_cost(node);
      if (!c) return;
      Value eclass = egraph_.find_const(egraph_.table(node.function).output(node.row));
      auto found = best_.find(eclass);
      if (found == best_.end() || *c < found->second.cost) {
        best_[eclass] = Best{*c, node};
        changed = true;
      }
    });
  }
}

std::optional<std::uint64_t> TreeExtractor::node_cost(const ENode& node) const {
  const FunctionDecl& decl = egraph_.function(node.function);
  const Value* row = egraph_.table(node.function).row(node.row);
  std::uint64_t total = decl.cost;
  if (const std::optional<FunctionId>& table = cost_tables_[node.function]) {
    const Table& costs = egraph_.table(*table);
    RowId r = costs.find(row);
    // A negative dynamic cost counts as 0 (costs are unsigned here).
    if (r != kNoRow && costs.alive(r)) total = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(costs.output(r))));
  }
  for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
    std::optional<std::uint64_t> c = cost(decl.inputs[i], row[i]);
    if (!c) return std::nullopt;
    total = add_saturating(total, *c);
  }
  return total;
}

std::optional<std::uint64_t> TreeExtractor::cost(SortId sort, Value value) const {
  const Sort& s = egraph_.sort(sort);
  if (s.container) {
    // A container costs the sum of its elements' costs.
    const std::vector<Value>& items = s.container->items(value);
    std::uint64_t total = 0;
    // A function value's first item names its target and costs nothing.
    for (std::size_t i = s.container->kind() == ContainerKind::Fn ? 1 : 0; i < items.size(); ++i) {
      std::optional<std::uint64_t> c = cost(s.container->item_sort(items, i), items[i]);
      if (!c) return std::nullopt;
      total = add_saturating(total, *c);
    }
    return total;
  }
  if (!s.is_eq) return s.primitive->literal_cost();
  auto found = best_.find(egraph_.find_const(value));
  if (found == best_.end()) return std::nullopt;
  return found->second.cost;
}

void TreeExtractor::print_value(SortId sort, Value value, std::string& out) const {
  const Sort& s = egraph_.sort(sort);
  if (s.container) {
    print_container(*s.container, value, out);
    return;
  }
  if (!s.is_eq) {
    out += s.primitive->print(value);
    return;
  }
  auto found = best_.find(egraph_.find_const(value));
  if (found == best_.end()) {
    throw support::RuntimeFailure("no extractable term for an e-class of sort " + s.name);
  }
  print_node(found->second.node, out);
}

void TreeExtractor::print_node(const ENode& root, std::string& out) const {
  // Work on an explicit stack, not by recursion: a term is as deep as the e-graph lets it be (a
  // rule can build a chain of 100k constructors), far deeper than the call stack.
  struct Pending {
    std::optional<ENode> node;  // a node to open, else text to write
    SortId sort = 0;            // an argument to print (when `node` and `text` are empty)
    Value value = 0;
    char text = 0;
  };
  std::vector<Pending> stack;
  stack.push_back({root, 0, 0, 0});
  while (!stack.empty()) {
    Pending item = stack.back();
    stack.pop_back();
    if (item.text != 0) {
      out += item.text;
      continue;
    }
    if (!item.node) {
      const Sort& s = egraph_.sort(item.sort);
      if (!s.is_eq) {
        print_value(item.sort, item.value, out);
        continue;
      }
      auto found = best_.find(egraph_.find_const(item.value));
      if (found == best_.end()) {
        throw support::RuntimeFailure("no extractable term for an e-class of sort " + s.name);
      }
      item.node = found->second.node;
    }
    const FunctionDecl& decl = egraph_.function(item.node->function);
    const Value* row = egraph_.table(item.node->function).row(item.node->row);
    out += "(" + decl.name;
    if (decl.inputs.empty()) {
      out += ')';
      continue;
    }
    // Pushed in reverse: " arg0 arg1 ... )" comes off the stack in order.
    stack.push_back({std::nullopt, 0, 0, ')'});
    for (std::size_t i = decl.inputs.size(); i-- > 0;) {
      stack.push_back({std::nullopt, decl.inputs[i], row[i], 0});
      stack.push_back({std::nullopt, 0, 0, ' '});
    }
  }
}

void TreeExtractor::print_container(const ContainerSort& sort, Value value, std::string& out) const {
  static constexpr std::size_t kMaxContainerDepth = 2000;
  if (container_depth_ >= kMaxContainerDepth) {
    throw support::RuntimeFailure("the term nests containers more than " +
                                  std::to_string(kMaxContainerDepth) + " deep: too deep to print");
  }
  struct Depth {
    std::size_t& d;
    explicit Depth(std::size_t& depth) : d(++depth) {}
    ~Depth() { --d; }
  } depth(container_depth_);
  const std::vector<Value>& items = sort.items(value);
  // Elements (a map's key-value entries) print in term order, except a Vec's and a Pair's.
  std::size_t width = sort.kind() == ContainerKind::Map ? 2 : 1;
  bool function_value = sort.kind() == ContainerKind::Fn;
  std::vector<std::size_t> order;
  for (std::size_t i = function_value ? 1 : 0; i < items.size(); i += width) order.push_back(i);
  if (sort.kind() == ContainerKind::Set || sort.kind() == ContainerKind::MultiSet ||
      sort.kind() == ContainerKind::Map) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      for (std::size_t k = 0; k < width; ++k) {
        int c = compare_terms(sort.item_sort(items, a + k), items[a + k], items[b + k]);
        if (c != 0) return c < 0;
      }
      return false;
    });
  }
  out += '(';
  out += sort.head(value);
  if (function_value) out += " \"" + sort.callable(items[0]).name + "\"";
  for (std::size_t i : order) {
    for (std::size_t k = 0; k < width; ++k) {
      out += ' ';
      print_value(sort.item_sort(items, i + k), items[i + k], out);
    }
  }
  out += ')';
}

int TreeExtractor::compare_terms(SortId sort, Value a, Value b, std::size_t depth) const {
  static constexpr std::size_t kMaxCompareDepth = 10000;
  if (depth > kMaxCompareDepth) return 0;
  const Sort& s = egraph_.sort(sort);
  if (s.container) {
    const ContainerSort& c = *s.container;
    if (int h = std::string(c.head(a)).compare(c.head(b)); h != 0) return h;
    // Same kind: the shorter container first (as egglog orders them), then element by element.
    const std::vector<Value>& xa = c.items(a);
    const std::vector<Value>& xb = c.items(b);
    if (xa.size() != xb.size()) return xa.size() < xb.size() ? -1 : 1;
    if (c.kind() == ContainerKind::Fn) {
      if (int e = c.callable(xa[0]).name.compare(c.callable(xb[0]).name); e != 0) return e;
      if (xa[0] != xb[0]) return xa[0] < xb[0] ? -1 : 1;  // same name, other signature
    }
    for (std::size_t i = c.kind() == ContainerKind::Fn ? 1 : 0; i < xa.size() && i < xb.size(); ++i) {
      if (int e = compare_terms(c.item_sort(xa, i), xa[i], xb[i], depth + 1); e != 0) return e;
    }
    return xa.size() < xb.size() ? -1 : (xa.size() > xb.size() ? 1 : 0);
  }
  if (!s.is_eq) return s.primitive->compare(a, b);
  auto na = best_.find(egraph_.find_const(a));
  auto nb = best_.find(egraph_.find_const(b));
  if (na == best_.end() || nb == best_.end()) {
    throw support::RuntimeFailure("no extractable term for an e-class of sort " + s.name);
  }
  if (na == nb) return 0;
  const FunctionDecl& da = egraph_.function(na->second.node.function);
  const FunctionDecl& db = egraph_.function(nb->second.node.function);
  if (int h = da.name.compare(db.name); h != 0) return h;
  const Value* ra = egraph_.table(na->second.node.function).row(na->second.node.row);
  const Value* rb = egraph_.table(nb->second.node.function).row(nb->second.node.row);
  for (std::size_t i = 0; i < da.inputs.size(); ++i) {
    if (int e = compare_terms(da.inputs[i], ra[i], rb[i], depth + 1); e != 0) return e;
  }
  return 0;
}

std::string TreeExtractor::term(SortId sort, Value value) const {
  std::string out;
  print_value(sort, value, out);
  return out;
}

std::vector<std::string> TreeExtractor::variants(SortId sort, Value eclass,
                                                 std::size_t limit) const {
  std::vector<std::pair<std::uint64_t, ENode>> nodes;
  if (!egraph_.sort(sort).is_eq) return {term(sort, eclass)};
  Value root = egraph_.find_const(eclass);
  for_each_enode(egraph_, [&](const ENode& node) {
    if (egraph_.find_const(egraph_.table(node.function).output(node.row)) != root) return;
    if (std::optional<std::uint64_t> c = node_cost(node)) nodes.emplace_back(*c, node);
  });
  // egglog's order: cost, then constructor name, then argument values (e-classes by id).
  auto key = [&](const ENode& node) {
    const FunctionDecl& decl = egraph_.function(node.function);
    const Value* row = egraph_.table(node.function).row(node.row);
    std::vector<Value> args;
    for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
      args.push_back(egraph_.sort(decl.inputs[i]).is_eq ? egraph_.find_const(row[i]) : row[i]);
    }
    return std::make_pair(decl.name, args);
  };
  std::stable_sort(nodes.begin(), nodes.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return key(a.second) < key(b.second);
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < nodes.size() && i < limit; ++i) {
    std::string text;
    print_node(nodes[i].second, text);
    out.push_back(std::move(text));
  }
  return out;
}

DagExtractor::DagExtractor(const EGraph& egraph, ENodeCost cost, bool subsumed_too)
    : egraph_(egraph) {
  bool changed = true;
  while (changed) {
    changed = false;
    for_each_enode(egraph_, [&](const ENode& node) {
      const FunctionDecl& decl = egraph_.function(node.function);
      const Value* row = egraph_.table(node.function).row(node.row);
      Value eclass = egraph_.find_const(row[decl.inputs.size()]);
      std::map<Value, double> classes;
      bool complete = true;
      for (std::size_t i = 0; i < decl.inputs.size() && complete; ++i) {
        // Children are the e-classes of the arguments, also those inside containers.
        for_each_eclass(egraph_, decl.inputs[i], row[i], [&](Value child_class) {
          auto child = best_.find(egraph_.find_const(child_class));
          if (child == best_.end()) {
            complete = false;
            return;
          }
          // Each class at the cost of its *current* choice: a child's map may hold an older,
          // dearer cost for a class another child already sees improved.
          for (const auto& [id, old_cost] : child->second.classes) {
            classes.emplace(id, best_.at(id).classes.at(id));
          }
        });
      }
      if (!complete || classes.count(eclass)) return;  // a child without a term, or a cycle
      classes[eclass] = cost(egraph_, node);
      double total = 0;
      for (const auto& [id, c] : classes) total += c;
      auto found = best_.find(eclass);
      if (found == best_.end() || total < found->second.total) {
        best_[eclass] = Best{total, node, std::move(classes)};
        changed = true;
      }
    }, subsumed_too);
  }
}

std::optional<DagExtractor::Result> DagExtractor::extract(Value root) const {
  auto found = best_.find(egraph_.find_const(root));
  if (found == best_.end()) return std::nullopt;
  Result result;
  // Follow the chosen e-node of each class from the root (a class's choice is global).
  std::vector<Value> work{found->first};
  while (!work.empty()) {
    Value eclass = work.back();
    work.pop_back();
    if (result.choice.count(eclass)) continue;
    const Best& best = best_.at(eclass);
    result.choice[eclass] = best.node;
    const FunctionDecl& decl = egraph_.function(best.node.function);
    const Value* row = egraph_.table(best.node.function).row(best.node.row);
    for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
      for_each_eclass(egraph_, decl.inputs[i], row[i],
                      [&](Value child) { work.push_back(egraph_.find_const(child)); });
    }
  }
  for (const auto& [eclass, node] : result.choice) result.cost += best_.at(eclass).classes.at(eclass);
  return result;
}

}  // namespace kiln::engine
