#include "engine/repeated_matches.hpp"

#include <algorithm>
#include <bit>

#include "engine/egraph.hpp"
#include "support/hash.hpp"

namespace kiln::engine {

bool projection_may_repeat(const Query& query, const std::vector<std::uint32_t>& stored) {
  std::vector<bool> known(query.num_vars(), false);
  for (std::uint32_t v : stored) known[v] = true;
  auto is_known = [&](const QueryTerm& t) { return !t.is_var || known[t.var]; };
  auto learn = [&](const QueryTerm& t) {
    if (!t.is_var || known[t.var]) return false;
    known[t.var] = true;
    return true;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (const QueryAtom& atom : query.atoms) {
      if (std::all_of(atom.columns.begin(), atom.columns.end() - 1, is_known)) {
        changed |= learn(atom.columns.back());
      }
    }
    for (const QueryPrimitive& prim : query.primitives) {
      if (std::all_of(prim.args.begin(), prim.args.end(), is_known)) changed |= learn(prim.result);
    }
  }
  return !std::all_of(known.begin(), known.end(), [](bool k) { return k; });
}

bool actions_idempotent(const EGraph& egraph, const ActionProgram& actions) {
  return std::all_of(actions.instrs.begin(), actions.instrs.end(), [&](const ActionInstr& instr) {
    switch (instr.op) {
      case ActionOp::Construct:
      case ActionOp::Lookup:
      case ActionOp::Copy:
        return true;
      case ActionOp::Primitive:
        // A sort's own primitives include those that call functions or fill tables.
        return instr.primitive->owner == nullptr;
      case ActionOp::Set:
        return egraph.function(instr.function).merge == MergeKind::NoMerge;
      case ActionOp::Union:
      case ActionOp::ConstructUnion:
      case ActionOp::Delete:
      case ActionOp::Subsume:
      case ActionOp::Panic:
        return false;
    }
    return false;
  });
}

void RecentMatches::start(std::size_t width) {
  width_ = width;
  std::size_t slots = std::bit_floor(std::max<std::size_t>(kValues / std::max<std::size_t>(width, 1), 1024));
  if (batch_of_slot_.size() != slots || ++batch_ == 0) {
    batch_of_slot_.assign(slots, 0);
    batch_ = 1;
  }
  slot_mask_ = slots - 1;
  values_.resize(slots * width);
}

bool RecentMatches::repeat(const Value* match) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i < width_; ++i) h = (std::rotl(h, 26) ^ match[i]) * 0x9fb21c651e98df25ULL;
  std::size_t slot = support::mix64(h) & slot_mask_;
  Value* values = values_.data() + slot * width_;
  if (batch_of_slot_[slot] == batch_ && std::equal(match, match + width_, values)) return true;
  batch_of_slot_[slot] = batch_;
  std::copy_n(match, width_, values);
  return false;
}

}  // namespace kiln::engine
