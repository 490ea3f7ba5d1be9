// The search for one group; see search.hpp for the steps.
#include "compiler/search.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <iostream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "compiler/lower_program.hpp"
#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/builtins.hpp"
#include "engine/extract.hpp"
#include "graph/body_lower.hpp"
#include "graph/compare.hpp"
#include "graph/interpret.hpp"
#include "graph/random_inputs.hpp"
#include "runtime/executor.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

namespace {

using engine::ENode;
using engine::FunctionId;
using engine::RowId;
using engine::Value;
using graph::DType;
using graph::Graph;
using graph::NodeId;
using graph::Op;
using graph::Tensor;
using support::UserError;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ---- reference values --------------------------------------------------------------------

// ---- reading the e-graph -----------------------------------------------------------------

class EGraphView {
 public:
  EGraphView(const engine::EGraph& egraph, const GraphSorts& sorts)
      : egraph_(egraph), sorts_(sorts) {
    for (const char* name : {"Kernel", "Gemm", "Input", "Output", "ConsumedBuffer", "LCons",
                             "LNil", "Operand", "PCons", "PNil"}) {
      if (auto f = egraph.find_function(name)) functions_[name] = *f;
    }
    // Lists: e-class -> (head, tail) of its first LCons row.
    if (functions_.count("LCons")) {
      for_rows("LCons", [&](RowId, const Value* row) {
        lists_.emplace(find(row[2]), std::make_pair(find(row[0]), find(row[1])));
      });
    }
  }

  Value find(Value v) const { return egraph_.find_const(v); }
  std::optional<FunctionId> function(const std::string& name) const {
    auto it = functions_.find(name);
    if (it == functions_.end()) return std::nullopt;
    return it->second;
  }
  bool is(const ENode& node, const char* name) const {
    auto f = function(name);
    return f && *f == node.function;
  }
  const Value* row(const ENode& node) const { return egraph_.table(node.function).row(node.row); }

  template <class Visit>
  void for_rows(const std::string& name, Visit&& visit) const {
    auto f = function(name);
    if (!f) return;
    const engine::Table& t = egraph_.table(*f);
    for (RowId r = 0; r < t.end(); ++r) {
      if (t.alive(r) && !t.subsumed(r)) visit(r, t.row(r));
    }
  }

  // The HLIR e-classes of an HLIRList e-class, in order.
  std::vector<Value> list(Value l) const {
    std::vector<Value> out;
    for (std::size_t guard = 0; guard < 4096; ++guard) {
      auto it = lists_.find(find(l));
      if (it == lists_.end()) return out;
      out.push_back(it->second.first);
      l = it->second.second;
    }
    return out;
  }

  // An Operand e-class: buffer, trans, leading dim, offset, batch stride.
  struct Operand {
    Value buffer;
    std::int64_t trans;
    graph::Expr ld, offset, stride;
  };
  std::optional<Operand> operand(Value eclass) const {
    std::optional<Operand> out;
    for_rows("Operand", [&](RowId, const Value* row) {
      if (out || find(row[5]) != find(eclass)) return;
      out = Operand{find(row[0]), engine::I64Sort::get(row[1]), sorts_.expr_sort->get(row[2]),
                    sorts_.expr_sort->get(row[3]), sorts_.expr_sort->get(row[4])};
    });
    return out;
  }

  std::size_t eclasses() const {
    std::set<Value> classes;
    for (FunctionId f = 0; f < egraph_.num_functions(); ++f) {
      const engine::FunctionDecl& decl = egraph_.function(f);
      if (decl.kind != engine::FunctionKind::Constructor) continue;
      const engine::Table& t = egraph_.table(f);
      for (RowId r = 0; r < t.end(); ++r) {
        if (t.alive(r)) classes.insert(find(t.output(r)));
      }
    }
    return classes.size();
  }
  std::size_t enodes() const {
    std::size_t n = 0;
    for (FunctionId f = 0; f < egraph_.num_functions(); ++f) {
      if (egraph_.function(f).kind == engine::FunctionKind::Constructor) n += egraph_.table(f).size();
    }
    return n;
  }

 private:
  const engine::EGraph& egraph_;
  const GraphSorts& sorts_;
  std::map<std::string, FunctionId> functions_;
  std::map<Value, std::pair<Value, Value>> lists_;
};

// ---- candidates --------------------------------------------------------------------------

struct CandidateInfo {
  ENode node;
  Candidate candidate;
  std::vector<Value> inputs;  // HLIR e-classes, by slot
  Value output;               // the e-class it computes
  std::string what;           // for reports
  std::string how;            // "kernel" / "gemm"
  bool rejected = false;
  double cost = kInfinity;
  bool measured = false;
};

runtime::LibraryCall gemm_call(const std::string& dtype, const EGraphView::Operand& a,
                               const EGraphView::Operand& b, const graph::Expr& batch,
                               const graph::Expr& m, const graph::Expr& n, const graph::Expr& k) {
  runtime::LibraryCall call;
  call.op = "gemm";
  std::optional<DType> parsed = graph::parse_dtype(dtype);
  if (!parsed) throw UserError("compile: a Gemm e-node has the unknown dtype \"" + dtype + "\"");
  call.dtype = *parsed;
  call.params = {{"batch", batch},          {"m", m},
                 {"n", n},                  {"k", k},
                 {"trans_a", graph::Expr(a.trans)}, {"trans_b", graph::Expr(b.trans)},
                 {"lda", a.ld},             {"ldb", b.ld},
                 {"offset_a", a.offset},    {"offset_b", b.offset},
                 {"stride_a", a.stride},    {"stride_b", b.stride},
                 {"ldc", n},                {"stride_c", m * n}};
  return call;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

// ---- encoding ----------------------------------------------------------------------------

GraphSorts encode_group(dsl::Session& session, const ChunkGraph& chunk,
                        const SearchOptions& options, bool saturate) {
  const Graph& g = chunk.graph;
  const GraphSorts sorts = register_graph_sorts(session.egraph());
  session.set_limits(options.limits);
  for (const auto& file : options.rule_files) session.run_file(file.string());
  std::string program = "(PNil)";
  for (NodeId id = g.size(); id-- > 0;) {
    if (g.node(id).op == Op::Output) program = "(PCons $t" + std::to_string(id) + " " + program + ")";
  }
  session.run_text("graph.egg", graph::to_egglog(g) + "(let $program " + program + ")\n");
  if (saturate && !options.pipeline.empty()) session.run_file(options.pipeline.string());
  return sorts;
}

// ---- the one-op program ------------------------------------------------------------------

GroupProgram one_op_program(const ChunkGraph& chunk) {
  const Graph& g = chunk.graph;
  GroupProgram p;
  std::map<NodeId, Ref> ref;
  for (NodeId id : g.topological_order()) {
    const graph::Node& n = g.node(id);
    if (n.op == Op::Input) {
      ref[id] = Ref{Ref::Kind::Input, id};
      continue;
    }
    std::vector<Graph::Input> ins = g.inputs(id);
    if (n.op == Op::Output && ins[0].edge->view == graph::View::contiguous(g.node(ins[0].producer).shape)) {
      ref[id] = ref.at(ins[0].producer);  // a contiguous output is its producer's buffer
      p.outputs[id] = ref[id];
      continue;
    }
    GroupStep s;
    s.op = graph::one_op_body(g, id);
    for (const Graph::Input& in : ins) s.inputs.push_back(ref.at(in.producer));
    s.dtype = n.dtype;
    s.shape = n.shape;
    s.node = id;
    s.how = std::string(graph::op_name(n.op));
    p.steps.push_back(std::move(s));
    ref[id] = Ref{Ref::Kind::Step, p.steps.size() - 1};
    if (n.op == Op::Output) p.outputs[id] = ref[id];
  }
  return p;
}

// ---- the search --------------------------------------------------------------------------

GroupProgram search_group(const ChunkGraph& chunk, runtime::Target& target, Measurer& measurer,
                          const SearchOptions& options) {
  const Graph& g = chunk.graph;
  const graph::DimValues& dims = options.dims;
  GroupReport report;

  // 1-2. Encode and saturate.
  auto start = Clock::now();
  std::ostringstream printed;
  dsl::Session session(printed);
  const GraphSorts sorts = encode_group(session, chunk, options, /*saturate=*/true);
  std::vector<NodeId> outputs;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (g.node(id).op == Op::Output) outputs.push_back(id);
  }
  report.saturation_seconds = since(start);
  report.rule_stats = session.total_report().summary();
  const engine::EGraph& egraph = session.egraph();
  EGraphView view(egraph, sorts);
  const engine::SortId hlir_sort = *egraph.find_sort("HLIR");
  auto rules_of = [&](Value c) { return egraph.rules_in_eclass(hlir_sort, c); };
  report.eclasses = view.eclasses();
  report.enodes = view.enodes();

  // Original nodes by e-class, and their reference values.
  const std::map<std::string, Tensor> inputs = graph::random_inputs(g, dims, options.seed);
  const std::vector<std::vector<double>> reference = graph::interpret_all(g, dims, inputs);
  std::map<Value, NodeId> node_of_class;
  std::vector<Value> class_of_node(g.size());
  for (NodeId id = 0; id < g.size(); ++id) {
    const dsl::Global* global = session.global("$t" + std::to_string(id));
    KILN_ASSERT(global != nullptr, "search: node %" + std::to_string(id) + " has no term");
    class_of_node[id] = view.find(global->value);
    node_of_class.emplace(class_of_node[id], id);
  }
  auto reference_of = [&](Value c) -> const std::vector<double>* {
    auto it = node_of_class.find(view.find(c));
    return it == node_of_class.end() ? nullptr : &reference[it->second];
  };

  // 3. Candidates.
  std::vector<CandidateInfo> candidates;
  std::map<Value, std::int64_t> class_elements;
  for (NodeId id = 0; id < g.size(); ++id) {
    class_elements[class_of_node[id]] = static_cast<std::int64_t>(reference[id].size());
  }
  auto elements_of = [&](Value c) -> std::int64_t {
    auto it = class_elements.find(view.find(c));
    return it == class_elements.end() ? -1 : it->second;
  };
  view.for_rows("Kernel", [&](RowId r, const Value* row) {
    CandidateInfo info;
    info.node = ENode{*view.function("Kernel"), r};
    graph::Body body = sorts.body_sort->get(row[0]);
    info.inputs = view.list(row[1]);
    info.output = view.find(row[2]);
    info.how = "kernel";
    std::vector<std::int64_t> sizes;
    for (Value c : info.inputs) sizes.push_back(elements_of(c));
    if (sizes.size() != body.inputs().size() ||
        std::find(sizes.begin(), sizes.end(), -1) != sizes.end()) {
      return;  // inputs of unknown size: an intermediate no original node pins down (skipped)
    }
    info.candidate = body_candidate(std::move(body), sizes, dims);
    class_elements.emplace(info.output, info.candidate.output_elements);
    candidates.push_back(std::move(info));
  });
  view.for_rows("Gemm", [&](RowId r, const Value* row) {
    auto a = view.operand(row[1]);
    auto b = view.operand(row[2]);
    if (!a || !b) return;
    CandidateInfo info;
    info.node = ENode{*view.function("Gemm"), r};
    info.inputs = {a->buffer, b->buffer};
    info.output = view.find(row[7]);
    info.how = "gemm";
    runtime::LibraryCall call =
        gemm_call(sorts.string_sort->get(row[0]), *a, *b, sorts.expr_sort->get(row[3]),
                  sorts.expr_sort->get(row[4]), sorts.expr_sort->get(row[5]),
                  sorts.expr_sort->get(row[6]));
    info.candidate = gemm_candidate(std::move(call), dims);
    // The operands are whole buffers; the call may read only part of each.
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t have = elements_of(info.inputs[i]);
      if (have < info.candidate.input_elements[i]) return;  // unknown, or reads past the end
      info.candidate.input_elements[i] = have;
    }
    candidates.push_back(std::move(info));
  });
  report.candidates = candidates.size();
  for (CandidateInfo& c : candidates) {
    std::ostringstream what;
    auto it = node_of_class.find(c.output);
    if (it != node_of_class.end()) {
      what << "%" << it->second << " (" << graph::op_name(g.node(it->second).op) << ") as ";
    }
    if (const graph::Body* body = std::get_if<graph::Body>(&c.candidate.op)) {
      what << "kernel " << sorts.body_sort->print(sorts.body_sort->make(*body));
    } else {
      what << "gemm";
    }
    c.what = what.str();
  }

  // Prepare (compile) what will be checked or measured, in one batch.
  start = Clock::now();
  const Measurer::Stats before = measurer.stats();
  std::vector<Candidate> batch;
  for (const CandidateInfo& c : candidates) batch.push_back(c.candidate);
  std::vector<std::string> errors = measurer.prepare(batch, dims);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    CandidateInfo& c = candidates[i];
    if (!errors[i].empty()) {
      c.rejected = true;
      report.rejected.push_back({c.what, "the target rejected it: " + errors[i],
                                 rules_of(c.output)});
      continue;
    }
    // The numerical check against the interpreter's values of the original nodes.
    const std::vector<double>* want = reference_of(c.output);
    std::vector<std::vector<double>> in;
    bool known = want != nullptr;
    for (Value v : c.inputs) {
      const std::vector<double>* r = reference_of(v);
      if (!r) known = false; else in.push_back(*r);
    }
    if (!known) continue;
    std::vector<double> got = measurer.run(c.candidate, in, dims);
    got.resize(want->size());
    ++report.checked;
    std::string why = graph::mismatch(got, *want, c.candidate.output_dtype,
                                      reduction_length(c.candidate, dims));
    if (!why.empty()) {
      c.rejected = true;
      report.rejected.push_back({c.what, why, rules_of(c.output)});
      if (options.verbose) {
        std::cerr << "  rejected " << c.what << ": " << why << " (rules: "
                  << join(report.rejected.back().rules) << ")\n";
      }
    }
  }

  // 4. Costs.
  std::map<std::pair<FunctionId, RowId>, double> cost;
  std::size_t budget = options.max_measurements;
  for (CandidateInfo& c : candidates) {
    if (c.rejected) continue;
    if (budget > 0) {
      const bool hit = measurer.cached(c.candidate, dims).has_value();
      c.cost = measurer.time(c.candidate, dims);
      c.measured = true;
      if (!hit) --budget;
    } else {
      // Roofline estimate: bytes at 10 GB/s.
      double bytes = static_cast<double>(c.candidate.output_elements);
      for (std::int64_t e : c.candidate.input_elements) bytes += static_cast<double>(e);
      c.cost = bytes * 4.0 / 10e9;
    }
    cost[{c.node.function, c.node.row}] = c.cost;
  }
  report.measured = measurer.stats().measured - before.measured;
  report.cache_hits = measurer.stats().cache_hits - before.cache_hits;
  report.measure_seconds = since(start);

  // 5. Extract.
  start = Clock::now();
  std::map<Value, bool> contiguous_output;  // Output e-nodes that can alias their input
  const auto output_fn = view.function("Output");
  engine::DagExtractor extractor(egraph, [&](const engine::EGraph&, const ENode& node) {
    auto it = cost.find({node.function, node.row});
    if (it != cost.end()) return it->second;
    if (view.is(node, "Kernel") || view.is(node, "Gemm")) return kInfinity;  // rejected
    // Terms of other sorts (DType, lists, operands, the program) cost nothing; of the HLIR
    // sort only inputs, consumed buffers and contiguous outputs run without a kernel.
    if (egraph.function(node.function).output != hlir_sort || view.is(node, "Input") ||
        view.is(node, "ConsumedBuffer")) {
      return 0.0;
    }
    if (output_fn && node.function == *output_fn) {
      const Value* row = view.row(node);
      const graph::View& v = sorts.view_sort->get(row[1]);
      auto producer = node_of_class.find(view.find(row[0]));
      if (producer != node_of_class.end() &&
          v == graph::View::contiguous(g.node(producer->second).shape)) {
        return 0.0;
      }
    }
    return kInfinity;
  });
  const dsl::Global* root = session.global("$program");
  auto result = extractor.extract(root->value);
  report.extract_seconds = since(start);
  if (!result || !std::isfinite(result->cost)) {
    // Name the original nodes whose e-class has no accepted candidate.
    std::set<Value> covered;
    for (const CandidateInfo& c : candidates) {
      if (!c.rejected) covered.insert(c.output);
    }
    std::string missing;
    for (NodeId id = 0; id < g.size(); ++id) {
      const Op op = g.node(id).op;
      if (op == Op::Input || op == Op::Output || covered.count(class_of_node[id])) continue;
      missing += " %" + std::to_string(id) + " (" + std::string(graph::op_name(op)) + ")";
    }
    throw UserError("compile: no executable program for this chunk: no accepted kernel for" +
                    (missing.empty() ? std::string(" (an output)") : missing) + "; " +
                    std::to_string(report.rejected.size()) + " candidate(s) rejected");
  }

  // The chosen DAG as steps, inputs first.
  GroupProgram chosen;
  std::map<Value, Ref> done;
  std::map<std::pair<FunctionId, RowId>, const CandidateInfo*> info_of;
  for (const CandidateInfo& c : candidates) info_of[{c.node.function, c.node.row}] = &c;
  std::function<Ref(Value)> lower = [&](Value eclass) -> Ref {
    eclass = view.find(eclass);
    if (auto it = done.find(eclass); it != done.end()) return it->second;
    const ENode& node = result->choice.at(eclass);
    const Value* row = view.row(node);
    Ref ref;
    if (view.is(node, "Input")) {
      ref = Ref{Ref::Kind::Input, node_of_class.at(eclass)};
    } else if (view.is(node, "Output") || view.is(node, "ConsumedBuffer")) {
      ref = lower(row[0]);
    } else {
      const CandidateInfo& c = *info_of.at({node.function, node.row});
      GroupStep s;
      s.op = c.candidate.op;
      for (Value in : c.inputs) s.inputs.push_back(lower(in));
      s.dtype = c.candidate.output_dtype;
      auto original = node_of_class.find(eclass);
      if (original != node_of_class.end()) {
        s.node = original->second;
        s.shape = g.node(original->second).shape;
      } else {
        s.shape = {graph::Expr(c.candidate.output_elements)};
      }
      s.how = c.how;
      s.rules = rules_of(eclass);
      s.seconds = c.cost;
      s.measured = c.measured;
      chosen.steps.push_back(std::move(s));
      ref = Ref{Ref::Kind::Step, chosen.steps.size() - 1};
    }
    done[eclass] = ref;
    return ref;
  };
  for (NodeId id : outputs) chosen.outputs[id] = lower(class_of_node[id]);

  // 6. End to end: check, then time against the one-op program.
  std::map<std::string, Tensor> feeds, state;
  for (const auto& [name, t] : inputs) {
    bool persistent = false;
    for (NodeId id = 0; id < g.size(); ++id) {
      if (g.node(id).op == Op::Input && g.node(id).name == name) persistent = g.node(id).persistent;
    }
    (persistent ? state : feeds)[name] = t;
  }
  auto run_program = [&](const GroupProgram& p, double* seconds) {
    runtime::Llir llir = standalone_llir(p, g);
    runtime::Executor executor(llir, target);
    for (const auto& [name, t] : feeds) executor.bind(name, t);  // weights stay on the device
    for (const auto& [name, t] : state) executor.set_state(name, t);
    auto result_outputs = executor.run(dims, {});
    if (seconds) {
      // Weights and state stay on the device; caches are not fetched (see Executor::run).
      *seconds = measurer.time_program(runtime::to_text(llir, true), dims, [&] {
        return runtime::measure([&](int) { executor.run(dims, {}, nullptr, false); },
                                [&] { target.device().synchronize(); })
            .median_seconds;
      });
    }
    return result_outputs;
  };
  std::map<std::string, Tensor> got = run_program(chosen, &report.program_seconds);
  for (NodeId id : outputs) {
    const std::string& name = g.node(id).name;
    std::string why = graph::mismatch(got.at(name).data, reference[id], g.node(id).dtype,
                                      graph::reduction_length(g, id, dims));
    if (!why.empty()) {
      std::set<std::string> suspects;
      for (const GroupStep& s : chosen.steps) suspects.insert(s.rules.begin(), s.rules.end());
      throw UserError("compile: the chosen program's output " + name + " disagrees with the "
                      "interpreter: " + why + "; rules that shaped it: " +
                      join(std::vector<std::string>(suspects.begin(), suspects.end())));
    }
  }
  GroupProgram baseline = one_op_program(chunk);
  run_program(baseline, &report.one_op_seconds);
  // The one-op program replaces the searched one only when clearly faster: end-to-end times
  // on a busy machine are noisy, and the per-kernel measurements already chose.
  if (report.one_op_seconds < 0.7 * report.program_seconds) {
    report.kept_one_op = true;
    baseline.report = report;
    return baseline;
  }
  chosen.report = report;
  return chosen;
}

}  // namespace kiln::compiler
