// Buffer planning (DESIGN §7): where every temporary of an LLIR program lives for one dim map.
//
// Sizes are the values' element counts evaluated at the dims, times their dtype's size.
// A temporary lives from the step producing it to its last reader (an output lives to the end
// of the program, so it is never overwritten). Temporaries share one arena: in order of their
// first step, each takes the lowest 64-byte-aligned offset whose bytes no live temporary holds
// (first fit), so memory of dead values is reused.
//
// In-place aliases (Step::alias = k): the output takes input k's buffer when input k is a
// temporary of the same size read by no later step and in no other slot of this step; the two
// values then share one allocation spanning both lifetimes. Otherwise the executor copies
// input k into the output's own buffer before the step (`copy_alias`).
//
// Persistent state updated in place: a step with an alias whose input k is a state value read
// by no later step and in no other slot, and whose output is the state's next value (an output
// of the state's name), writes straight into the state's buffer (`in_place_state`): the
// output takes no arena bytes and the state needs no copy after the run (a KV cache update).
//
// Inputs and state are not in the arena: the executor binds or holds them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "runtime/llir.hpp"

namespace kiln::runtime {

inline constexpr std::size_t kBufferAlignment = 64;

struct BufferPlan {
  // Per value (by ValueId).
  std::vector<std::size_t> bytes;
  std::vector<std::optional<std::size_t>> offset;  // temporaries: arena offset
  // Temporaries: the steps [first, last] during which the value's bytes are in use.
  std::vector<StepId> first_step;
  std::vector<StepId> last_step;
  // Per step: the output reuses input `alias`'s buffer (in place), or the executor must copy
  // input `alias` into the output first. At most one is true, and only for steps with an alias.
  std::vector<bool> in_place;
  std::vector<bool> copy_alias;
  std::vector<bool> in_place_state;  // the output is the aliased state's own buffer

  std::size_t arena_bytes = 0;     // the planned peak: bytes the arena needs
  std::size_t unshared_bytes = 0;  // the temporaries' bytes summed, without any reuse
};

// Plans `llir` for the dims `dims` (a dim a size needs but `dims` lacks is a UserError).
BufferPlan plan_buffers(const Llir& llir, const graph::DimValues& dims);

// One line per temporary (`%3 bytes=256 offset=0 steps=[0, 2]`, `in place of %2` when
// shared), then `arena=... unshared=...`. Deterministic.
std::string to_text(const Llir& llir, const BufferPlan& plan);

}  // namespace kiln::runtime
