// The search's rank phase (DESIGN §7: "measure the most promising few per class"): before
// anything is compiled, each candidate gets the cost model's estimate at the real dims
// (cost_model.hpp) plus the estimated cost of the cheapest way to compute its inputs, and only
// the best `top` of each e-class, and the best schedule of each fusion choice (a set of e-classes
// read), go on to be checked and measured, besides its baseline:
// every library call and the e-class's one-op kernel, so the search never does worse than the
// one-op program with library calls. Then a kept candidate whose e-class no kept candidate (or
// output) reads is dropped too: no program could use it. Dropped candidates are marked
// `pruned` (and `rejected`, so the later phases skip them) without a rejection in the report.
//
// Deterministic: ties are broken by the candidate's op (Body key, library call text), then by
// its row order.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "compiler/candidates.hpp"
#include "compiler/class_values.hpp"
#include "compiler/cost_model.hpp"
#include "support/hash.hpp"

namespace kiln::compiler {

struct RankInputs {
  const EGraphView* view = nullptr;
  ClassValues* values = nullptr;
  graph::DimValues dims;  // the real dims
  MachineRates rates;
  std::vector<engine::Value> output_classes;  // what the program computes
  // The key of each e-class's one-op Body (e-classes of the graph's own compute nodes).
  std::map<engine::Value, support::Hash128> one_op_key;
  std::size_t top = 3;  // 0: keep every candidate
};

// One candidate as ranked: its e-class, its total (own estimate plus its inputs' cheapest), its
// own estimate, a stable text to break ties, and whether it is its e-class's baseline.
struct Ranked {
  engine::Value eclass = 0;
  double total = 0;
  double estimate = 0;
  std::string tie;
  bool baseline = false;
  // The e-classes it reads: candidates that read the same are one fusion choice in different
  // schedules (tiles, loop orders), which the model prices alike.
  std::vector<engine::Value> reads;
};
// Which to keep: per e-class every baseline, the best of each fusion choice (the model prices
// the work a fusion saves more roughly than the code generator's special forms earn it), and
// of the others the `top` lowest by (total, estimate, tie); `top` 0 keeps all. The order of `items`
// does not matter (equal ties aside).
std::vector<bool> keep_best(const std::vector<Ranked>& items, std::size_t top);

// Sets each candidate's `estimate` and prunes as above; returns how many were pruned.
std::size_t rank_candidates(std::vector<CandidateInfo>& candidates, const RankInputs& in);

}  // namespace kiln::compiler
