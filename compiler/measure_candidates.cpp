// The measure phase; see measure_candidates.hpp.
#include "compiler/measure_candidates.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

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

// This machine's copy bandwidth (bytes/s), measured once: the price of a copy before a step.
double copy_bandwidth() {
  static const double bandwidth = [] {
    const std::size_t n = std::size_t{32} << 20;
    std::vector<char> a(n, 1), b(n, 0);
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      const auto start = std::chrono::steady_clock::now();
      std::memcpy(b.data(), a.data(), n);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      a[static_cast<std::size_t>(i)] = b[n - 1];  // keep the copies observable
    }
    return 2.0 * static_cast<double>(n) / std::max(best, 1e-9);
  }();
  return bandwidth;
}

}  // namespace

void measure_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                        Measurer& measurer, const graph::DimValues& dims, std::size_t budget,
                        const RulesOf& rules_of, GroupReport& report, bool verbose) {
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
  std::vector<Candidate> timed;
  std::vector<std::size_t> timed_index;
  for (std::size_t i = 0; i < sized.size(); ++i) {
    const Candidate& candidate = sized[i].second;
    if (budget == 0) {
      sized[i].first->cost = bytes_of(candidate) / 10e9;  // roofline: 10 GB/s
      continue;
    }
    if (!measurer.cached(candidate, dims)) --budget;
    timed.push_back(candidate);
    timed_index.push_back(i);
  }
  const std::vector<Measurer::TimeResult> times = measurer.try_time_all(timed, dims);
  for (std::size_t t = 0; t < timed.size(); ++t) {
    CandidateInfo& c = *sized[timed_index[t]].first;
    if (!times[t].ok()) {
      reject(c, "it failed at the real dims: " + times[t].failure, rules_of, report, verbose);
      continue;
    }
    c.cost = times[t].seconds;
    c.measured = true;
  }
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
