#include "engine/dump.hpp"

#include "engine/container.hpp"

#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace kiln::engine {
namespace {

struct DumpNode {
  std::string label;
  std::size_t eclass;
  std::vector<std::size_t> children;  // numbered e-classes
  std::vector<std::string> literals;  // printed primitive arguments
};

struct Numbered {
  std::vector<std::string> class_sorts;
  std::vector<DumpNode> nodes;
};

std::string escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// The canonical e-classes reachable from `root` through constructor rows.
std::set<Value> reachable(const EGraph& egraph, Value root) {
  std::map<Value, std::vector<std::pair<FunctionId, RowId>>> nodes_of;
  for (FunctionId f = 0; f < egraph.num_functions(); ++f) {
    const FunctionDecl& decl = egraph.function(f);
    if (decl.kind != FunctionKind::Constructor) continue;
    const Table& t = egraph.table(f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (t.alive(r)) nodes_of[egraph.find_const(t.output(r))].emplace_back(f, r);
    }
  }
  std::set<Value> seen;
  std::vector<Value> work{egraph.find_const(root)};
  while (!work.empty()) {
    Value c = work.back();
    work.pop_back();
    if (!seen.insert(c).second) continue;
    for (auto [f, r] : nodes_of[c]) {
      const FunctionDecl& decl = egraph.function(f);
      const Value* row = egraph.table(f).row(r);
      for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
        for_each_eclass(egraph, decl.inputs[i], row[i],
                        [&](Value child) { work.push_back(egraph.find_const(child)); });
      }
    }
  }
  return seen;
}

// A container value as a literal whose e-classes print as e<N>, numbered by `id_of(class, sort)`.
template <class IdOf>
std::string print_container(const EGraph& egraph, SortId sort, Value value, IdOf&& id_of) {
  const Sort& s = egraph.sort(sort);
  if (s.is_eq) return "e" + std::to_string(id_of(value, sort));
  if (!s.holds_eclasses || !s.container) return s.primitive->print(value);
  const ContainerSort& c = *s.container;
  const std::vector<Value>& items = c.items(value);
  std::string out = std::string("(") + c.head(value);
  std::size_t first = 0;
  if (c.kind() == ContainerKind::Fn) {
    out += " \"" + c.callable(items[0]).name + "\"";
    first = 1;
  }
  for (std::size_t i = first; i < items.size(); ++i) {
    out += " " + print_container(egraph, c.item_sort(items, i), items[i], id_of);
  }
  return out + ")";
}

// Numbers e-classes by first appearance over constructor rows in table order.
Numbered number(const EGraph& egraph, std::optional<Value> root) {
  std::optional<std::set<Value>> keep;
  if (root) keep = reachable(egraph, *root);
  Numbered out;
  std::map<Value, std::size_t> ids;
  auto id_of = [&](Value eclass, SortId sort) {
    auto [it, fresh] = ids.emplace(egraph.find_const(eclass), ids.size());
    if (fresh) out.class_sorts.push_back(egraph.sort(sort).name);
    return it->second;
  };
  for (FunctionId f = 0; f < egraph.num_functions(); ++f) {
    const FunctionDecl& decl = egraph.function(f);
    if (decl.kind != FunctionKind::Constructor) continue;
    const Table& t = egraph.table(f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (!t.alive(r)) continue;
      const Value* row = t.row(r);
      if (keep && !keep->count(egraph.find_const(row[decl.inputs.size()]))) continue;
      DumpNode node{decl.name, id_of(row[decl.inputs.size()], decl.output), {}, {}};
      for (std::size_t i = 0; i < decl.inputs.size(); ++i) {
        const Sort& s = egraph.sort(decl.inputs[i]);
        if (s.is_eq) {
          node.children.push_back(id_of(row[i], decl.inputs[i]));
        } else if (s.holds_eclasses) {
          // A container of e-classes: its classes are children, and its literal names them.
          node.literals.push_back(print_container(egraph, decl.inputs[i], row[i], [&](Value c, SortId sort) {
            node.children.push_back(id_of(c, sort));
            return node.children.back();
          }));
        } else {
          node.literals.push_back(s.primitive->print(row[i]));
        }
      }
      out.nodes.push_back(std::move(node));
    }
  }
  return out;
}

}  // namespace

std::string to_dot(const EGraph& egraph, std::optional<Value> root) {
  Numbered n = number(egraph, root);
  std::ostringstream out;
  out << "digraph egraph {\n  compound=true;\n  node [shape=box];\n";
  std::vector<std::vector<std::size_t>> members(n.class_sorts.size());
  for (std::size_t i = 0; i < n.nodes.size(); ++i) members[n.nodes[i].eclass].push_back(i);
  for (std::size_t c = 0; c < members.size(); ++c) {
    out << "  subgraph cluster_" << c << " {\n    label=\"e" << c << " : "
        << escape(n.class_sorts[c]) << "\";\n";
    for (std::size_t i : members[c]) {
      std::string label = n.nodes[i].label;
      for (const std::string& lit : n.nodes[i].literals) label += " " + lit;
      out << "    n" << i << " [label=\"" << escape(label) << "\"];\n";
    }
    out << "  }\n";
  }
  for (std::size_t i = 0; i < n.nodes.size(); ++i) {
    for (std::size_t child : n.nodes[i].children) {
      if (members[child].empty()) continue;
      out << "  n" << i << " -> n" << members[child][0] << " [lhead=cluster_" << child << "];\n";
    }
  }
  out << "}\n";
  return out.str();
}

std::string to_json(const EGraph& egraph, std::optional<Value> root) {
  Numbered n = number(egraph, root);
  std::vector<std::vector<std::size_t>> members(n.class_sorts.size());
  for (std::size_t i = 0; i < n.nodes.size(); ++i) members[n.nodes[i].eclass].push_back(i);
  std::ostringstream out;
  out << "{\"classes\": [";
  for (std::size_t c = 0; c < members.size(); ++c) {
    out << (c ? ",\n  " : "\n  ") << "{\"id\": " << c << ", \"sort\": \"" << escape(n.class_sorts[c])
        << "\", \"nodes\": [";
    for (std::size_t k = 0; k < members[c].size(); ++k) {
      const DumpNode& node = n.nodes[members[c][k]];
      out << (k ? ", " : "") << "{\"op\": \"" << escape(node.label) << "\", \"children\": [";
      for (std::size_t j = 0; j < node.children.size(); ++j) out << (j ? ", " : "") << node.children[j];
      out << "], \"literals\": [";
      for (std::size_t j = 0; j < node.literals.size(); ++j) {
        out << (j ? ", " : "") << "\"" << escape(node.literals[j]) << "\"";
      }
      out << "]}";
    }
    out << "]}";
  }
  out << "\n]}\n";
  return out.str();
}

}  // namespace kiln::engine
