#include "engine/distinct_matches.hpp"

#include "engine/repeated_matches.hpp"

namespace kiln::engine {

std::vector<std::uint32_t> distinct_match_variables(const Query& query,
                                                    const std::vector<std::uint32_t>& read_by_actions) {
  std::uint32_t n = query.num_vars();
  std::vector<bool> read(n, false);
  for (std::uint32_t v : read_by_actions) read[v] = true;
  for (const QueryPrimitive& prim : query.primitives) {
    for (const QueryTerm& t : prim.args) {
      if (t.is_var) read[t.var] = true;
    }
    if (prim.result.is_var) read[prim.result.var] = true;
  }
  // How many atoms mention each variable, and how often in all.
  std::vector<std::uint32_t> atoms_with(n, 0), occurrences(n, 0);
  for (const QueryAtom& atom : query.atoms) {
    std::vector<bool> here(n, false);
    for (const QueryTerm& t : atom.columns) {
      if (!t.is_var) continue;
      ++occurrences[t.var];
      if (!here[t.var]) ++atoms_with[t.var];
      here[t.var] = true;
    }
  }
  std::vector<bool> projected(n, false);
  bool any = false;
  for (const QueryAtom& atom : query.atoms) {
    bool shares = false, only_unread_own = true;
    for (const QueryTerm& t : atom.columns) {
      if (!t.is_var) continue;
      if (atoms_with[t.var] > 1) {
        shares = true;
      } else if (read[t.var] || occurrences[t.var] > 1) {
        only_unread_own = false;
      }
    }
    if (!shares || !only_unread_own) continue;
    for (const QueryTerm& t : atom.columns) {
      if (t.is_var && atoms_with[t.var] == 1) projected[t.var] = any = true;
    }
  }
  std::vector<std::uint32_t> kept;
  if (!any) return kept;
  for (std::uint32_t v = 0; v < n; ++v) {
    if (!projected[v]) kept.push_back(v);
  }
  // A projected variable that the kept ones determine (a relation's Unit output, a function's
  // output under kept keys) cannot make two matches equal on the rest: nothing to do then.
  if (!projection_may_repeat(query, kept)) kept.clear();
  return kept;
}

}  // namespace kiln::engine
