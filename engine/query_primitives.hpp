// Planning and evaluating a query's primitive calls during a join, shared by both join
// executors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/query.hpp"
#include "engine/table.hpp"

namespace kiln::engine {

inline bool term_bound(const QueryTerm& t, const std::vector<bool>& bound) {
  return !t.is_var || bound[t.var];
}

// Schedules every not-yet-scheduled primitive whose arguments are bound, repeatedly (one
// primitive's result may enable another).
inline void schedule_primitives(const Query& q, std::vector<bool>& bound,
                                std::vector<bool>& done, std::vector<bool>& binds_result,
                                std::vector<std::uint32_t>& out) {
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::uint32_t p = 0; p < q.primitives.size(); ++p) {
      if (done[p]) continue;
      const QueryPrimitive& prim = q.primitives[p];
      bool ready = std::all_of(prim.args.begin(), prim.args.end(),
                               [&](const QueryTerm& t) { return term_bound(t, bound); });
      if (!ready) continue;
      done[p] = true;
      binds_result[p] = prim.result.is_var && !bound[prim.result.var];
      if (binds_result[p]) bound[prim.result.var] = true;
      out.push_back(p);
      progress = true;
    }
  }
}

// Runs the primitives `ids` of `query` over the bound variables: each binds its result variable
// (when binds_result[p]) or checks it. Returns false if one fails or a check does not hold.
// The calls themselves: eval_query_primitives is the (inlined) test for none.
inline bool eval_query_primitive_calls(const Query& query, const std::vector<std::uint32_t>& ids,
                                       const std::vector<bool>& binds_result,
                                       std::vector<Value>& vars) {
  auto value_of = [&](const QueryTerm& t) { return t.is_var ? vars[t.var] : t.constant; };
  Value small[kMaxColumns * 2];
  std::vector<Value> large;
  for (std::uint32_t p : ids) {
    const QueryPrimitive& prim = query.primitives[p];
    Value* args = small;
    if (prim.args.size() > std::size(small)) {
      large.resize(prim.args.size());
      args = large.data();
    }
    for (std::size_t i = 0; i < prim.args.size(); ++i) args[i] = value_of(prim.args[i]);
    Value result = 0;
    if (!prim.primitive->apply(args, prim.args.size(), result)) return false;
    if (binds_result[p]) {
      vars[prim.result.var] = result;
    } else if (value_of(prim.result) != result) {
      return false;
    }
  }
  return true;
}

inline bool eval_query_primitives(const Query& query, const std::vector<std::uint32_t>& ids,
                                  const std::vector<bool>& binds_result,
                                  std::vector<Value>& vars) {
  // Most join steps of most rules have none: no call, no locals.
  return ids.empty() || eval_query_primitive_calls(query, ids, binds_result, vars);
}

}  // namespace kiln::engine
