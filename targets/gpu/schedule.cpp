// GPU schedules; see schedule.hpp.
#include "targets/gpu/schedule.hpp"

#include <algorithm>
#include <optional>

#include "targets/node_homes.hpp"

namespace kiln::targets::gpu {

using graph::Body;
using graph::Expr;
using graph::ScalarId;
using graph::ScalarOp;

namespace {

// Reduction extents at least this long (or symbolic) pay for a group per output...
constexpr std::int64_t kLongReduction = 1024;
// ... when there are at most this many outputs (else a thread per output keeps every core busy).
constexpr std::int64_t kFewOutputs = 4096;

bool mentions_loop_var(const Body& body, const Expr& e) {
  for (const std::string& d : graph::free_dims(e)) {
    for (const graph::Loop& loop : body.loops()) {
      if (loop.var == d) return true;
    }
    for (const graph::Scalar& s : body.scalars()) {
      if (s.op == ScalarOp::Reduce && s.var == d) return true;
    }
  }
  return false;
}

// The Reduce nodes computed in an output scope (not nested in another reduction), with the
// output scope they live in (0..L).
std::vector<std::pair<ScalarId, std::size_t>> row_reductions(const Body& body) {
  NodeHomes homes(body);
  std::vector<std::pair<ScalarId, std::size_t>> out;
  for (std::size_t id = 0; id < body.scalars().size(); ++id) {
    const auto sid = static_cast<ScalarId>(id);
    if (!homes.live(sid) || body.scalar(sid).op != ScalarOp::Reduce) continue;
    const std::size_t home = homes.home(sid);
    if (!homes.scopes()[home].reduce) out.emplace_back(sid, home);
  }
  return out;
}

std::optional<std::int64_t> constant_product(const Body& body, std::size_t begin, std::size_t end) {
  Expr n = 1;
  for (std::size_t k = begin; k < end; ++k) n = n * body.loops()[k].extent;
  return graph::simplify(n).as_constant();
}

}  // namespace

std::string schedule_tag(const Schedule& s) {
  if (s.mapping == Mapping::ThreadPerOutput) return "t" + std::to_string(s.block);
  return "g" + std::to_string(s.group_loops) + "b" + std::to_string(s.block) +
         (s.group_reduce ? "r" : "") + (s.warp_reduce ? "w" : "");
}

std::size_t serial_prefix(const Body& body) {
  std::size_t end = 0;
  for (std::size_t k = 0; k < body.loops().size(); ++k) {
    if (!body.loops()[k].parallel) end = k + 1;
  }
  return end;
}

std::string schedule_problem(const Body& body, const Schedule& s) {
  if (s.block < 1 || s.block > 1024 || (s.block & (s.block - 1)) != 0) {
    return "block " + std::to_string(s.block) + " is not a power of two in [1, 1024]";
  }
  if (s.warp_reduce && (!s.group_reduce || s.block < kSubGroup)) {
    return "a sub-group reduction needs group_reduce and a block of at least " +
           std::to_string(kSubGroup);
  }
  const std::size_t loops = body.loops().size();
  if (serial_prefix(body) > 0) {
    if (s.mapping != Mapping::GroupPerRow || s.group_loops != 0 || s.group_reduce) {
      return "a Body with a serial loop runs as one group (rows 0, no group reduce)";
    }
    return "";
  }
  if (s.mapping == Mapping::ThreadPerOutput) return "";
  if (s.group_loops > loops) {
    return "rows " + std::to_string(s.group_loops) + " > " + std::to_string(loops) + " loops";
  }
  for (std::size_t k = 0; k < s.group_loops; ++k) {
    if (mentions_loop_var(body, body.loops()[k].extent)) {
      return "loop " + body.loops()[k].var + " mapped to groups has an extent that depends on a " +
             "loop variable";
    }
  }
  return "";
}

Schedule default_schedule(const Body& body) {
  const std::size_t loops = body.loops().size();
  if (serial_prefix(body) > 0) return {Mapping::GroupPerRow, 0, 256, false};
  const auto reductions = row_reductions(body);
  if (reductions.empty()) return {Mapping::ThreadPerOutput, 0, 256, false};
  std::size_t rows = 0;
  for (const auto& [id, home] : reductions) rows = std::max(rows, home);
  Schedule s{Mapping::GroupPerRow, rows, 256, true};
  if (rows < loops) {
    // A reduction shared by the inner loop's elements (softmax, norms): one group per row, no
    // wider than the row when its length is known.
    if (auto inner = constant_product(body, rows, loops)) {
      while (s.block > 32 && s.block / 2 >= *inner) s.block /= 2;
    }
  } else {
    // One reduction per output: a group each only when reductions are long and outputs few.
    bool long_reduction = false;
    for (const auto& [id, home] : reductions) {
      auto extent = body.scalar(id).extent.as_constant();
      long_reduction = long_reduction || !extent || *extent >= kLongReduction;
    }
    auto outputs = constant_product(body, 0, loops);
    if (!long_reduction || !outputs || *outputs > kFewOutputs) {
      return {Mapping::ThreadPerOutput, 0, 256, false};
    }
  }
  if (!schedule_problem(body, s).empty()) return {Mapping::ThreadPerOutput, 0, 256, false};
  return s;
}

std::vector<Schedule> schedule_choices(const Body& body) {
  std::vector<Schedule> out{default_schedule(body)};
  auto add = [&](const Schedule& s) {
    if (schedule_problem(body, s).empty() && std::find(out.begin(), out.end(), s) == out.end()) {
      out.push_back(s);
    }
  };
  if (serial_prefix(body) > 0) {
    add({Mapping::GroupPerRow, 0, 32, false});
    return out;
  }
  // The default's group reduction by sub-groups, and with a wider group, come first: they are
  // what a tuned kernel (tuned_kernel.hpp) tries within its few variants.
  if (const Schedule& d = out.front(); d.group_reduce) {
    add({Mapping::GroupPerRow, d.group_loops, std::max(d.block, kSubGroup), true, true});
    add({Mapping::GroupPerRow, d.group_loops, 1024, true, true});
  }
  const std::size_t loops = body.loops().size();
  add({Mapping::ThreadPerOutput, 0, 64, false});
  add({Mapping::ThreadPerOutput, 0, 256, false});
  const auto reductions = row_reductions(body);
  std::vector<std::size_t> rows;
  for (const auto& [id, home] : reductions) rows.push_back(home);
  if (loops > 0) rows.push_back(loops - 1);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  for (std::size_t k : rows) {
    if (!reductions.empty()) {
      add({Mapping::GroupPerRow, k, 32, true});
      add({Mapping::GroupPerRow, k, 256, true});
      add({Mapping::GroupPerRow, k, 256, true, true});
      add({Mapping::GroupPerRow, k, 1024, true, true});
    }
    add({Mapping::GroupPerRow, k, 64, false});
  }
  return out;
}

Expr group_count(const Body& body, const Schedule& s) {
  if (serial_prefix(body) > 0) return Expr(1);
  const std::size_t loops = body.loops().size();
  if (s.mapping == Mapping::GroupPerRow) {
    Expr n = 1;
    for (std::size_t k = 0; k < s.group_loops; ++k) n = n * body.loops()[k].extent;
    return graph::simplify(n);
  }
  Expr n = 1;
  for (std::size_t k = 0; k < loops && !mentions_loop_var(body, body.loops()[k].extent); ++k) {
    n = n * body.loops()[k].extent;
  }
  return graph::simplify(ceil_div(n, Expr(s.block)));
}

}  // namespace kiln::targets::gpu
