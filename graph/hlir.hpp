// HLIR: the high-level dataflow graph of about twenty tensor primops that models lower to and
// that the compiler loads into the e-graph (DESIGN §1). Each input edge carries the View
// through which the consumer reads its producer.
//
// Storage. A Boost.Graph bidirectional adjacency list: vertex i is the i-th node added (its
// NodeId), an edge runs from producer to consumer and records the consumer's input slot and
// View. The Graph keeps it acyclic: an edge that would close a cycle is a UserError.
//
// Shapes (the contract validate() checks; each edge's view shape is what the consumer sees):
//   Input, Constant, Iota     no inputs; shape as given. Constant fills it with `value`; Iota
//                             with the row-major linear index of each element.
//   Output                    one input; its view shape and dtype equal the node's.
//   Cast, Exp2 … Sqrt         one input; view shape = output shape. Cast changes the dtype,
//                             the others keep it.
//   Add, Mul, Mod, LessThan   two inputs of equal dtype; both view shapes = output shape
//                             (broadcasting is done by expanded views). LessThan gives Bool.
//   SumReduce, MaxReduce      one input; the output drops dim `axis` of the input view shape
//                             (view shape = output shape with the reduced dim inserted at axis).
//   Softmax                   one input, along `axis`; view shape = output shape.
//   Gather                    (data, indices): indices integer; output shape =
//                             indices shape ++ data shape[1:], dtype of data (rows of data).
//   Scatter                   (dest, indices, values): output = dest with rows `indices`
//                             replaced by values; values shape = indices shape ++ dest shape[1:].
//   CustomOp                  any inputs, named; shape and dtype as given, not checked.
// Shapes compare structurally on the canonical Expr form.
//
// Persistent state (a KV cache): an Input with `persistent` set is held by the runtime between
// runs instead of being passed in (zeros until set), and an Output whose name equals that
// Input's name is the state's value for the next run (runtime/lower_one_op.hpp).
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graph/dtype.hpp"
#include "graph/expr.hpp"
#include "graph/view.hpp"

namespace kiln::graph {

enum class Op : std::uint8_t {
  Input, Output, Constant, Iota, Cast, Exp2, Log2, Sin, Recip, Sqrt, Add, Mul, Mod, LessThan,
  SumReduce, MaxReduce, Softmax, Gather, Scatter, CustomOp,
};

// The op's name as it appears in both text forms (`Add`, `SumReduce`, ...).
std::string_view op_name(Op op);

// One HLIR node: what it computes and the tensor it produces.
struct Node {
  Op op = Op::Input;
  DType dtype = DType::F32;
  std::vector<Expr> shape;  // output shape
  std::string name;         // Input, Output and CustomOp: the tensor or op name
  double value = 0.0;       // Constant: the fill value
  std::size_t axis = 0;     // SumReduce, MaxReduce, Softmax: the dim reduced / normalized
  bool persistent = false;  // state that outlives one run (a KV cache, weights held on device)
};

// An input edge: the consumer's input slot and the view through which it reads the producer.
struct Edge {
  std::size_t slot = 0;
  View view = View::contiguous({});
};

using NodeId = std::size_t;

class Graph {
 public:
  using BoostGraph =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Node, Edge>;

  // Adds a node and returns its id (0, 1, 2, ... in order of addition).
  NodeId add_node(Node node);
  // `to` reads `from` as its input `slot` through `view`. A missing node, a slot already taken,
  // or an edge that would make a cycle (including from == to) is a UserError.
  void add_edge(NodeId from, NodeId to, std::size_t slot, View view);

  std::size_t size() const { return boost::num_vertices(g_); }
  const Node& node(NodeId id) const;
  Node& node(NodeId id);

  // One input of a node: its producer and the edge (slot, view).
  struct Input {
    NodeId producer;
    const Edge* edge;
  };
  // The inputs of `id`, ordered by slot.
  std::vector<Input> inputs(NodeId id) const;
  // The nodes reading `id`, sorted by id, each once.
  std::vector<NodeId> users(NodeId id) const;

  // Every node, producers before consumers. Deterministic: when ids are already a topological
  // order (nodes added after their inputs) it is 0, 1, 2, ...
  std::vector<NodeId> topological_order() const;
  // True if a path of edges leads from `from` to `to` (every node reaches itself).
  bool reaches(NodeId from, NodeId to) const;

  // Graph breaks split the graph into chunks (compiler/partition compiles identical chunks
  // once). add_break() starts a new chunk: nodes added afterwards belong to it.
  void add_break();
  // The chunk of node `id`: the number of breaks added before it.
  std::size_t chunk_of(NodeId id) const;
  std::size_t num_chunks() const { return breaks_.size() + 1; }

  const BoostGraph& boost_graph() const { return g_; }

 private:
  void check_id(NodeId id, const char* what) const;
  BoostGraph g_;
  std::vector<NodeId> breaks_;  // the first node id of chunks 1, 2, ...; non-decreasing
};

// Checks every node against the contract above (arity and slots, dtypes, view shapes, axes,
// names); the first violation is a UserError naming the node (`%3 (Add): ...`).
void validate(const Graph& g);

// One line per node in topological order, e.g.
//   %3 = Add f32 [seq, 32] (%2, %4 as View(shape=[seq, 32], strides=[0, 1], offset=0))
// An input read through the contiguous view of its producer's shape prints as just `%i`.
// Attributes follow the inputs: name="x", value=1.5, axis=1, persistent. A line
// `-- chunk N --` precedes the first node printed of each chunk after the first.
std::string to_text(const Graph& g);

// The graph as commands against rules/hlir.egg (the HLIR datatypes over kiln's Expr, Shape
// and View sorts), one `(let $tN (...))` per node in topological order, N the node id, then
// `(Persistent $tN)` for persistent nodes. Views, shapes and constants are literals:
// `(view "View(...)")`, `(shape "[seq, 64]")`, `0.5`. Deterministic (golden files). Load with
// `kiln egg --graph-sorts rules/hlir.egg graph.egg`. The declarations are a rule file, not
// C++: graph/ does not depend on the engine, and rule authors read what the compiler loads.
std::string to_egglog(const Graph& g);

}  // namespace kiln::graph
