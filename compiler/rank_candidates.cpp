// The rank phase; see rank_candidates.hpp.
#include "compiler/rank_candidates.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <tuple>

namespace kiln::compiler {

namespace {

using engine::Value;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A stable text naming the candidate's op, for breaking ties: the simpler loop nest first (a
// schedule adds loops the model cannot price), then by key.
std::string tie_key(const CandidateInfo& c) {
  if (const graph::Body* body = std::get_if<graph::Body>(&c.op)) {
    const support::Hash128 k = body->key();
    char loops[8];
    std::snprintf(loops, sizeof loops, "%03zu", body->loops().size());
    return "body " + std::string(loops) + " " + std::to_string(k.high) + " " +
           std::to_string(k.low);
  }
  const runtime::LibraryCall& call = std::get<runtime::LibraryCall>(c.op);
  std::string text = "call " + call.op + " " + std::string(graph::dtype_name(call.dtype));
  for (const auto& [name, value] : call.params) text += " " + name + "=" + graph::to_string(value);
  return text;
}

bool is_baseline(const CandidateInfo& c, const RankInputs& in) {
  if (std::holds_alternative<runtime::LibraryCall>(c.op)) return true;
  const auto it = in.one_op_key.find(c.output);
  return it != in.one_op_key.end() && std::get<graph::Body>(c.op).key() == it->second;
}

void prune(CandidateInfo& c, std::string why) {
  c.pruned = true;
  c.rejected = true;
  c.why = std::move(why);
}

}  // namespace

std::vector<bool> keep_best(const std::vector<Ranked>& items, std::size_t top) {
  std::map<Value, std::vector<std::size_t>> by_class;
  for (std::size_t i = 0; i < items.size(); ++i) by_class[items[i].eclass].push_back(i);
  std::vector<bool> keep(items.size(), false);
  for (auto& [eclass, members] : by_class) {
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      return std::tie(items[a].total, items[a].estimate, items[a].tie) <
             std::tie(items[b].total, items[b].estimate, items[b].tie);
    });
    std::size_t others = 0;  // ranked besides the baseline
    std::set<std::vector<Value>> choices;
    for (std::size_t i : members) {
      const bool first_of_choice = choices.insert(items[i].reads).second;
      const bool in_top = !items[i].baseline && others++ < top;
      keep[i] = top == 0 || items[i].baseline || in_top || first_of_choice;
    }
  }
  return keep;
}

std::size_t rank_candidates(std::vector<CandidateInfo>& candidates, const RankInputs& in) {
  if (in.top == 0) return 0;
  const std::size_t n = candidates.size();
  auto live = [&](std::size_t i) { return !candidates[i].rejected; };

  // Each candidate's own estimate at the real dims (infinite where it cannot be sized there:
  // measuring will reject it).
  std::set<Value> produced;
  for (std::size_t i = 0; i < n; ++i) {
    CandidateInfo& c = candidates[i];
    if (!live(i)) continue;
    produced.insert(c.output);
    const Sized s = size_candidate(c, *in.values, in.dims);
    c.estimate = s.candidate ? estimate_cost(*s.candidate, in.dims, in.rates).seconds : kInfinity;
    // An output that starts as a copy of an input (a Scatter not in place) pays for the copy,
    // as measuring charges it.
    const graph::Body* body = std::get_if<graph::Body>(&c.op);
    if (s.candidate && body && body->output_aliases() && !c.in_place) {
      c.estimate += 2.0 * static_cast<double>(s.candidate->output_elements) *
                    static_cast<double>(graph::dtype_size(s.candidate->output_dtype)) /
                    in.rates.bytes_per_second;
    }
  }

  // The cheapest estimated way to compute each e-class (inputs free), to a fixed point: a
  // candidate's total is its own estimate plus its inputs'. A fused kernel then competes with
  // the chain of kernels it replaces, not with the chain's last kernel alone.
  std::map<Value, double> best;
  auto class_cost = [&](Value v) {
    const auto it = best.find(v);
    return it != best.end() ? it->second : produced.count(v) ? kInfinity : 0.0;
  };
  auto total = [&](std::size_t i) {
    double t = candidates[i].estimate;
    for (Value input : candidates[i].inputs) t += class_cost(input);
    return t;
  };
  for (std::size_t pass = 0; pass <= n; ++pass) {
    bool changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!live(i)) continue;
      const double t = total(i);
      if (t < class_cost(candidates[i].output)) {
        best[candidates[i].output] = t;
        changed = true;
      }
    }
    if (!changed) break;
  }

  // Per e-class: the best `top`, and the baseline.
  std::map<Value, std::vector<std::size_t>> by_class;
  std::vector<Ranked> ranked;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live(i)) continue;
    const CandidateInfo& c = candidates[i];
    by_class[c.output].push_back(i);
    ranked.push_back({c.output, total(i), c.estimate, tie_key(c), is_baseline(c, in), c.inputs});
    index.push_back(i);
  }
  const std::vector<bool> keep = keep_best(ranked, in.top);
  std::vector<bool> kept(n, false);
  for (std::size_t r = 0; r < ranked.size(); ++r) kept[index[r]] = keep[r];

  // Only e-classes a kept candidate or an output reads can be in a program.
  std::set<Value> reached;
  std::vector<Value> work = in.output_classes;
  while (!work.empty()) {
    const Value eclass = in.view->find(work.back());
    work.pop_back();
    if (!reached.insert(eclass).second) continue;
    for (const engine::ENode& node : in.view->nodes(eclass)) {
      if (in.view->is(node, "Output") || in.view->is(node, "ConsumedBuffer")) {
        work.push_back(in.view->row(node)[0]);
      }
    }
    if (auto it = by_class.find(eclass); it != by_class.end()) {
      for (std::size_t i : it->second) {
        if (kept[i])
          work.insert(work.end(), candidates[i].inputs.begin(), candidates[i].inputs.end());
      }
    }
  }

  std::size_t pruned = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!live(i)) continue;
    if (!kept[i]) {
      prune(candidates[i], "not measured: the cost model ranks it below the best " +
                               std::to_string(in.top) + " of its e-class");
    } else if (!reached.count(in.view->find(candidates[i].output))) {
      prune(candidates[i],
            "not measured: no program can use its e-class once the others are ranked");
    } else {
      continue;
    }
    ++pruned;
  }
  return pruned;
}

}  // namespace kiln::compiler
