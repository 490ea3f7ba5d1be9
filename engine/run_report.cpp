#include "engine/run_report.hpp"

#include <algorithm>
#include <cstdio>

namespace kiln::engine {

const char* to_string(StopReason reason) {
  switch (reason) {
    case StopReason::Saturated: return "saturated";
    case StopReason::ScheduleDone: return "schedule finished";
    case StopReason::IterationLimit: return "iteration limit";
    case StopReason::NodeLimit: return "node limit";
    case StopReason::TimeLimit: return "time limit";
  }
  return "?";
}

void RunReport::absorb(const RunReport& other) {
  stop = other.stop;
  if (!limit_hit) limit_hit = other.limit_hit;
  if (!limit_hit && (other.stop == StopReason::IterationLimit ||
                     other.stop == StopReason::NodeLimit || other.stop == StopReason::TimeLimit)) {
    limit_hit = other.stop;
  }
  changed |= other.changed;
  iterations.insert(iterations.end(), other.iterations.begin(), other.iterations.end());
  for (const auto& [name, stats] : other.rules) {
    RuleStats& mine = rules[name];
    mine.matches += stats.matches;
    mine.repeats_skipped += stats.repeats_skipped;
    mine.applied_while_searching += stats.applied_while_searching;
    mine.times_banned += stats.times_banned;
    mine.search_seconds += stats.search_seconds;
    mine.apply_seconds += stats.apply_seconds;
  }
  search_seconds += other.search_seconds;
  apply_seconds += other.apply_seconds;
  rebuild_seconds += other.rebuild_seconds;
}

std::string RunReport::summary(std::size_t max_rules) const {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line,
                "run report: %zu iterations, stopped: %s\n"
                "  search %.6fs  apply %.6fs  rebuild %.6fs\n",
                iterations.size(), to_string(stop), search_seconds, apply_seconds,
                rebuild_seconds);
  out += line;
  // Per iteration: the first and last few, which is where growth and saturation show.
  constexpr std::size_t kShown = 10;
  for (std::size_t i = 0; i < iterations.size(); ++i) {
    if (iterations.size() > 2 * kShown && i == kShown) {
      std::snprintf(line, sizeof line, "  ... %zu more iterations ...\n", iterations.size() - 2 * kShown);
      out += line;
      i = iterations.size() - kShown;
    }
    const IterationReport& it = iterations[i];
    std::snprintf(line, sizeof line,
                  "  iteration %4zu  ruleset %-12s matches %10llu  rows %10zu  %s  "
                  "search %.6fs  apply %.6fs  rebuild %.6fs\n",
                  i + 1, it.ruleset.empty() ? "(default)" : it.ruleset.c_str(),
                  static_cast<unsigned long long>(it.matches), it.rows_after,
                  it.changed ? "changed  " : "unchanged", it.search_seconds, it.apply_seconds,
                  it.rebuild_seconds);
    out += line;
  }
  std::vector<std::pair<std::string, RuleStats>> sorted(rules.begin(), rules.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.search_seconds + a.second.apply_seconds >
           b.second.search_seconds + b.second.apply_seconds;
  });
  if (sorted.size() > max_rules) sorted.resize(max_rules);
  for (const auto& [name, stats] : sorted) {
    std::string shown = name.size() > 60 ? name.substr(0, 57) + "..." : name;
    std::string notes =
        stats.repeats_skipped ? "  (" + std::to_string(stats.repeats_skipped) + " repeats skipped)" : "";
    if (stats.applied_while_searching) {
      notes += "  (" + std::to_string(stats.applied_while_searching) + " applied while searching)";
    }
    std::snprintf(line, sizeof line, "  rule %-60s matches %10llu  search %.6fs  apply %.6fs%s%s\n",
                  shown.c_str(), static_cast<unsigned long long>(stats.matches),
                  stats.search_seconds, stats.apply_seconds, notes.c_str(),
                  stats.times_banned ? "  (banned)" : "");
    out += line;
  }
  return out;
}

}  // namespace kiln::engine
