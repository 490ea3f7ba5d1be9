// The check phase; see check_candidates.hpp.
#include "compiler/check_candidates.hpp"

#include <iostream>

#include "graph/compare.hpp"
#include "support/diagnostic.hpp"

namespace kiln::compiler {

void reject(CandidateInfo& c, std::string why, const RulesOf& rules_of, GroupReport& report,
            bool verbose) {
  c.rejected = true;
  c.why = std::move(why);
  report.rejected.push_back({c.what, c.why, rules_of(c.output)});
  if (verbose) {
    std::string rules;
    for (const std::string& r : report.rejected.back().rules) rules += (rules.empty() ? "" : ", ") + r;
    std::cerr << "  rejected " << c.what << ": " << c.why << " (rules: " << rules << ")\n";
  }
}

void check_candidates(std::vector<CandidateInfo>& candidates, ClassValues& values,
                      Measurer& measurer, const RulesOf& rules_of, GroupReport& report,
                      bool verbose) {
  const graph::DimValues& dims = values.dims();
  // Size every candidate at the check dims; prepare the survivors in one batch.
  std::vector<Candidate> batch;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    CandidateInfo& c = candidates[i];
    if (c.rejected) {
      report.rejected.push_back({c.what, c.why, rules_of(c.output)});
      continue;
    }
    Sized s = size_candidate(c, values, dims);
    if (!s.candidate) {
      reject(c, s.why, rules_of, report, verbose);
      continue;
    }
    batch.push_back(std::move(*s.candidate));
    index.push_back(i);
  }
  const std::vector<std::string> errors = measurer.prepare(batch, dims);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    CandidateInfo& c = candidates[index[b]];
    if (!errors[b].empty()) {
      reject(c, "the target rejected it: " + errors[b], rules_of, report, verbose);
      continue;
    }
    std::vector<std::vector<double>> inputs;
    for (engine::Value in : c.inputs) inputs.push_back(values.get(in)->data);
    const ClassValue& want = *values.get(c.output);
    std::string why;
    try {
      const std::vector<double> got = measurer.run(batch[b], inputs, dims);
      why = graph::mismatch(got, want.data, want.dtype);
    } catch (const std::exception& e) {
      why = std::string("it failed to run: ") + e.what();
    }
    ++report.checked;
    if (!why.empty()) reject(c, why + " (reference: " + want.term + ")", rules_of, report, verbose);
  }
}

}  // namespace kiln::compiler
