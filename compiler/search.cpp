// The search for one group: the phases of search.hpp, in order.
#include "compiler/search.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>

#include "compiler/candidates.hpp"
#include "compiler/check_candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/cost_model.hpp"
#include "compiler/egraph_view.hpp"
#include "compiler/extract_program.hpp"
#include "compiler/measure_candidates.hpp"
#include "compiler/rank_candidates.hpp"
#include "compiler/lower_program.hpp"
#include "compiler/verify_program.hpp"
#include "graph/body_lower.hpp"
#include "graph/interpret.hpp"
#include "graph/memory_estimate.hpp"
#include "graph/random_inputs.hpp"
#include "runtime/buffer_plan.hpp"
#include "support/diagnostic.hpp"
#include "support/seconds_since.hpp"

namespace kiln::compiler {

namespace {

using engine::Value;
using graph::Graph;
using graph::NodeId;
using graph::Op;
using support::UserError;

using Clock = support::Clock;
using support::seconds_since;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The rules behind every step of a program: the suspects when the whole disagrees.
std::vector<std::string> rules_of_program(const GroupProgram& p) {
  std::set<std::string> rules;
  for (const GroupStep& s : p.steps) rules.insert(s.rules.begin(), s.rules.end());
  return {rules.begin(), rules.end()};
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
  if (saturate && !options.schedules.empty()) session.run_file(options.schedules.string());
  return sorts;
}

// ---- the one-op program ------------------------------------------------------------------

std::optional<GroupProgram> one_op_program(const ChunkGraph& chunk) {
  const Graph& g = chunk.graph;
  for (NodeId id = 0; id < g.size(); ++id) {
    const Op op = g.node(id).op;
    if (op != Op::Input && op != Op::Output && !graph::has_one_op_body(op)) return std::nullopt;
  }
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
  GroupReport report;

  // encode, saturate
  auto start = Clock::now();
  std::ostringstream printed;
  dsl::Session session(printed);
  const GraphSorts sorts = encode_group(session, chunk, options, /*saturate=*/true);
  report.saturation_seconds = seconds_since(start);
  report.rule_stats = session.total_report().summary();
  const engine::RunReport& saturation = session.total_report();
  report.stop_reason = engine::to_string(saturation.limit_hit.value_or(saturation.stop));
  const EGraphView view(session.egraph(), sorts);
  report.eclasses = view.eclasses();
  report.enodes = view.enodes();
  const RulesOf rules_of = [&](Value c) {
    return session.egraph().rules_in_eclass(view.hlir_sort(), c);
  };

  // values: the interpreter's at the check dims for original nodes, extracted terms for the rest
  start = Clock::now();
  GroupReference reference;
  reference.dims = check_dims_of(options.dims, options.check_dim_cap);
  check_reference_fits(g, reference.dims);
  reference.inputs = graph::random_inputs(g, reference.dims, options.seed);
  reference.values = graph::interpret_all(g, reference.dims, reference.inputs);
  {
    const std::vector<std::vector<double>> in_double = graph::interpret_all(
        g, reference.dims, reference.inputs, graph::Rounding::FloatsInDouble);
    for (NodeId id = 0; id < g.size(); ++id) {
      reference.spread.push_back(graph::rounding_spread(reference.values[id], in_double[id]));
    }
  }
  ClassValues values(view, reference.dims);
  ExtractInputs extract;
  extract.view = &view;
  extract.values = &values;
  extract.rules_of = rules_of;
  for (NodeId id = 0; id < g.size(); ++id) {
    const dsl::Global* global = session.global("$t" + std::to_string(id));
    KILN_ASSERT(global != nullptr, "search: node %" + std::to_string(id) + " has no term");
    const Value c = view.find(global->value);
    const graph::Node& n = g.node(id);
    values.set(c, ClassValue{n.dtype, n.shape, reference.values[id], "%" + std::to_string(id), 1,
                             reference.spread[id]});
    extract.node_of_class.emplace(c, id);
    if (n.op == Op::Output) {
      extract.outputs.push_back(id);
      extract.output_classes.push_back(c);
    }
  }
  extract.root = session.global("$program")->value;

  // candidates
  std::vector<CandidateInfo> candidates = collect_candidates(view);
  extract.candidates = &candidates;
  report.candidates = candidates.size();
  auto name_by_node = [&](std::vector<CandidateInfo>& list) {
    for (CandidateInfo& c : list) {
      if (auto it = extract.node_of_class.find(c.output); it != extract.node_of_class.end()) {
        c.what = "%" + std::to_string(it->second) + " (" +
                 std::string(graph::op_name(g.node(it->second).op)) + ") " +
                 c.what.substr(c.what.find("as "));
      }
    }
  };
  name_by_node(candidates);

  // rank
  if (options.measure_top > 0) {
    RankInputs rank;
    rank.view = &view;
    rank.values = &values;
    rank.dims = options.dims;
    rank.rates = machine_rates(measurer);
    rank.output_classes = extract.output_classes;
    rank.top = options.measure_top;
    for (const auto& [c, id] : extract.node_of_class) {
      if (!graph::has_one_op_body(g.node(id).op)) continue;
      try {
        rank.one_op_key.emplace(c, graph::one_op_body(g, id).key());
      } catch (const std::exception&) {
        // A form without a one-op Body: that e-class has no baseline kernel.
      }
    }
    report.pruned = rank_candidates(candidates, rank);
    if (options.verbose) {
      std::cerr << "  the cost model kept " << candidates.size() - report.pruned << " of "
                << candidates.size() << " candidates\n";
    }
  }

  // check
  check_candidates(candidates, values, measurer, options.dims, rules_of, report, options.verbose);
  // An e-class whose every candidate failed its check (a fused Kernel rejected where fusion
  // subsumed the unfused one) gets its one-op Kernel back; that one reads its producer's
  // e-class, which may need the same, hence rounds.
  std::set<std::pair<engine::FunctionId, engine::RowId>> restored_rows;
  for (;;) {
    std::vector<CandidateInfo> restored;
    for (CandidateInfo& c : subsumed_one_op_kernels(view, classes_without_checked(candidates))) {
      if (restored_rows.insert({c.node.function, c.node.row}).second) {
        restored.push_back(std::move(c));
      }
    }
    if (restored.empty()) break;
    name_by_node(restored);
    check_candidates(restored, values, measurer, options.dims, rules_of, report, options.verbose);
    report.fallbacks += restored.size();
    candidates.insert(candidates.end(), std::make_move_iterator(restored.begin()),
                      std::make_move_iterator(restored.end()));
  }
  report.candidates = candidates.size();
  report.check_seconds = seconds_since(start);

  // measure
  start = Clock::now();
  // The cheapest program over the candidates timed so far: measuring's bound.
  auto cheapest_so_far = [&] {
    const std::optional<GroupProgram> p = extract_program(extract, {}, nullptr);
    double seconds = p ? 0.0 : std::numeric_limits<double>::infinity();
    for (const GroupStep& s : p ? p->steps : std::vector<GroupStep>{}) seconds += s.seconds;
    return seconds;
  };
  measure_candidates(candidates, values, measurer, options.dims, options.max_measurements,
                     cheapest_so_far, rules_of, report, options.verbose);
  report.measure_seconds = seconds_since(start);

  // extract, verify; a program that fails its check bans its suspects and is extracted again
  start = Clock::now();
  std::optional<GroupProgram> chosen;
  std::set<std::size_t> banned;
  for (int attempt = 0; attempt < 4 && !chosen; ++attempt) {
    std::vector<std::size_t> picked;
    std::optional<GroupProgram> program = extract_program(extract, banned, &picked);
    ++report.extractions;
    if (!program) break;
    const std::string why = verify_program(*program, chunk, target, reference,
                                            measurer.sandbox());
    if (why.empty()) {
      chosen = std::move(program);
      break;
    }
    report.rejected.push_back({"the chosen program", why, rules_of_program(*program)});
    if (options.verbose) std::cerr << "  the chosen program failed its check: " << why << "\n";
    // Suspects, most likely first: in-place steps, then steps for e-classes without an
    // original node (their reference came from a rule's term), then every step.
    std::vector<std::size_t> ban;
    for (std::size_t k = 0; k < picked.size(); ++k) {
      if (candidates[picked[k]].in_place) ban.push_back(picked[k]);
    }
    for (std::size_t k = 0; k < picked.size() && ban.empty(); ++k) {
      if (!program->steps[k].node) ban.push_back(picked[k]);
    }
    if (ban.empty()) ban = picked;
    banned.insert(ban.begin(), ban.end());
  }
  report.extract_seconds = seconds_since(start);

  // The one-op program: the baseline, and the fallback; checked like any other.
  std::optional<GroupProgram> baseline = one_op_program(chunk);
  const std::string baseline_why =
      baseline ? verify_program(*baseline, chunk, target, reference, measurer.sandbox())
               : "there is none (a custom op has no kernel of its own)";
  if (!chosen && !baseline_why.empty()) {
    std::set<Value> covered;
    for (const CandidateInfo& c : candidates) {
      if (!c.rejected) covered.insert(c.output);
    }
    std::string missing;
    for (const auto& [c, id] : extract.node_of_class) {
      const Op op = g.node(id).op;
      if (op == Op::Input || op == Op::Output || covered.count(c)) continue;
      missing += " %" + std::to_string(id) + " (" + std::string(graph::op_name(op)) + ")";
    }
    std::string rejections;
    for (const Rejection& r : report.rejected) {
      rejections += "\n  " + r.what + ": " + r.why + " (rules: " + join(r.rules) + ")";
    }
    throw UserError("compile: no checked program for this chunk: no accepted kernel for" +
                    (missing.empty() ? std::string(" (an output)") : missing) +
                    "; the one-op program fails its check: " + baseline_why + "; " +
                    std::to_string(report.rejected.size()) + " rejection(s):" + rejections);
  }
  // Timing at the real dims: a program whose buffers would not fit, or that crashes or hangs
  // there, is not timed (and not used) instead of failing the compile.
  auto timed = [&](const GroupProgram& p, const std::string& what) -> std::optional<double> {
    std::string why;
    try {
      const runtime::BufferPlan plan = runtime::plan_buffers(standalone_llir(p, g), options.dims);
      const double limit = static_cast<double>(graph::physical_memory_bytes()) / 4;
      if (static_cast<double>(plan.arena_bytes) > limit) {
        why = "not timed: its buffers need " + std::to_string(plan.arena_bytes >> 20) +
              " MiB at the real dims, more than a quarter of this machine's memory";
      } else {
        return time_program(p, chunk, target, measurer, options.dims, options.seed);
      }
    } catch (const std::exception& e) {
      why = e.what();
    }
    report.rejected.push_back({what, why, {}});
    if (options.verbose) std::cerr << "  " << what << ": " << why << "\n";
    return std::nullopt;
  };
  if (!chosen) {
    report.rejected.push_back({"the search", "no checked program from the rules: the one-op "
                               "program is used", {}});
    report.kept_one_op = true;
    report.one_op_seconds = timed(*baseline, "the one-op program").value_or(0.0);
    report.program_seconds = report.one_op_seconds;
    baseline->report = report;
    return *baseline;
  }
  report.searched_steps = chosen->steps.size();
  // Not timed: infinitely slow.
  constexpr double kNotTimed = std::numeric_limits<double>::infinity();
  const double program_seconds = timed(*chosen, "the chosen program").value_or(kNotTimed);
  const double one_op_seconds =
      baseline_why.empty() ? timed(*baseline, "the one-op program").value_or(kNotTimed) : kNotTimed;
  if (!baseline_why.empty()) report.rejected.push_back({"the one-op program", baseline_why, {}});
  report.program_seconds = std::isfinite(program_seconds) ? program_seconds : 0.0;
  report.one_op_seconds = std::isfinite(one_op_seconds) ? one_op_seconds : 0.0;
  if (!std::isfinite(program_seconds) && !std::isfinite(one_op_seconds)) {
    throw UserError("compile: neither the chosen nor the one-op program of this chunk could be "
                    "timed at the real dims: " + report.rejected.back().why);
  }
  // The one-op program replaces the searched one only when clearly faster (end-to-end times on
  // a busy machine are noisy, and the per-kernel measurements already chose), or when the
  // searched one could not be timed. A verdict against the per-kernel measurements is timed
  // again, both programs once more, and must hold twice: once, with builds running on both
  // cores, a fused one-kernel chain lost to its nine one-op kernels and stayed in the program
  // cache.
  auto one_op_wins = [](double one_op, double program) { return one_op < 0.7 * program; };
  if (std::isfinite(one_op_seconds) && one_op_wins(one_op_seconds, program_seconds)) {
    const bool untimed = !std::isfinite(program_seconds);
    const double again_one_op =
        untimed ? one_op_seconds : timed(*baseline, "the one-op program").value_or(kNotTimed);
    const double again_program =
        untimed ? program_seconds : timed(*chosen, "the chosen program").value_or(kNotTimed);
    if (untimed || one_op_wins(again_one_op, again_program)) {
      report.kept_one_op = true;
      baseline->report = report;
      return *baseline;
    }
  }
  chosen->report = report;
  return *chosen;
}

}  // namespace kiln::compiler
