// The measure phase; see measure_candidates.hpp.
#include "compiler/measure_candidates.hpp"

#include <cmath>
#include <algorithm>
#include <limits>
#include <vector>

#include "compiler/cost_model.hpp"
#include "graph/body_folds_products.hpp"
#include "graph/memory_estimate.hpp"

namespace kiln::compiler {

namespace {

// Bytes a candidate moves: every buffer once.
double bytes_of(const Candidate& c) {
  double bytes = static_cast<double>(c.output_elements) * graph::dtype_size(c.output_dtype);
  for (std::size_t i = 0; i < c.input_elements.size(); ++i) {
    bytes += static_cast<double>(c.input_elements[i]) * graph::dtype_size(c.input_dtypes[i]);
  }
  return bytes;
}

// Candidates timed by one worker between two updates of the bound.
constexpr std::size_t kBatch = 16;

}  // namespace

void measure_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                        Measurer& measurer, const graph::DimValues& dims, std::size_t budget,
                        const std::function<double()>& program_seconds, const RulesOf& rules_of,
                        GroupReport& report, bool verbose) {
  const Measurer::Stats before = measurer.stats();
  // Size everything; time the ones within the budget together, in one worker process.
  std::vector<std::pair<CandidateInfo*, Candidate>> sized;
  for (CandidateInfo& c : candidates) {
    if (c.rejected) continue;
    Sized s = size_candidate(c, values, dims);
    if (!s.candidate) {
      reject(c, "at the real dims: " + s.why, rules_of, report, verbose);
      continue;
    }
    // Buffers that would crowd this machine's memory (a broadcast product materialized at the
    // real dims) are not allocated: such a candidate is never the fast one.
    if (bytes_of(*s.candidate) > static_cast<double>(graph::physical_memory_bytes()) / 4) {
      reject(c, "not measured: its buffers need " +
                    std::to_string(static_cast<long long>(bytes_of(*s.candidate)) >> 20) +
                    " MiB at the real dims, more than a quarter of this machine's memory",
             rules_of, report, verbose);
      continue;
    }
    sized.emplace_back(&c, std::move(*s.candidate));
  }
  // Timed in order: library calls, other kernels, then kernels that fold products (the slow
  // kind; once the rest make a whole program, they are bounded by it). The budget goes in that
  // order.
  auto rank = [&](std::size_t i) {
    const graph::Body* body = std::get_if<graph::Body>(&sized[i].second.op);
    return !body ? 0 : graph::folds_products(*body) ? 2 : 1;
  };
  std::vector<std::size_t> order(sized.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return rank(x) < rank(y); });
  std::vector<std::size_t> timed_index;
  for (std::size_t i : order) {
    const Candidate& candidate = sized[i].second;
    if (budget == 0) {
      sized[i].first->cost = bytes_of(candidate) / 10e9;  // roofline: 10 GB/s
      continue;
    }
    if (!measurer.cached(candidate, dims)) --budget;
    timed_index.push_back(i);
  }
  // In batches of one rank (one worker each); before each, the cheapest program over what is
  // timed so far bounds the next.
  double bound = std::numeric_limits<double>::infinity();
  for (std::size_t from = 0, to = 0; from < timed_index.size(); from = to) {
    to = from + 1;
    while (to < timed_index.size() && to - from < kBatch &&
           rank(timed_index[to]) == rank(timed_index[from])) {
      ++to;
    }
    if (from > 0) bound = std::min(bound, program_seconds());
    TimeBound limits;
    if (std::isfinite(bound)) {
      limits.give_up_seconds = bound;
      // Its inputs made, a run past the bound and a margin for a busy machine: past that, hung.
      limits.job_seconds = std::max(10.0, 20.0 * bound);
    }
    std::vector<Candidate> timed;
    for (std::size_t t = from; t < to; ++t) timed.push_back(sized[timed_index[t]].second);
    const std::vector<Measurer::TimeResult> times = measurer.try_time_all(timed, dims, limits);
    for (std::size_t t = from; t < to; ++t) {
      CandidateInfo& c = *sized[timed_index[t]].first;
      const Measurer::TimeResult& r = times[t - from];
      if (!r.ok()) {
        reject(c, "it failed at the real dims: " + r.failure, rules_of, report, verbose);
        continue;
      }
      c.cost = r.seconds;
      c.measured = true;
      report.over_bound += r.over_bound;
    }
  }
  report.bound_seconds = bound;
  for (auto& [info, candidate] : sized) {
    CandidateInfo& c = *info;
    if (c.rejected) continue;
    if (!std::isfinite(c.cost)) {
      reject(c, "its measured time is not finite", rules_of, report, verbose);
      continue;
    }
    const graph::Body* body = std::get_if<graph::Body>(&c.op);
    if (body && body->output_aliases() && !c.in_place) {
      c.cost += static_cast<double>(candidate.output_elements) *
                graph::dtype_size(candidate.output_dtype) * 2.0 / copy_bandwidth();
    }
  }
  report.measured = measurer.stats().measured - before.measured;
  report.cache_hits = measurer.stats().cache_hits - before.cache_hits;
}

}  // namespace kiln::compiler
