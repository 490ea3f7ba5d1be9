// Buffer planning (DESIGN §7): where every temporary of an LLIR program lives for one dim map.
//
// Sizes are the values' element counts evaluated at the dims, times their dtype's size.
// A temporary lives from the step producing it to its last reader (an output lives to the end
// of the program, so it is never overwritten). Temporaries share one arena: in order of their
// first step, each takes the lowest 64-byte-aligned offset whose bytes no live temporary holds
// (first fit), so memory of dead values is reused.
//
// In-place steps (Step::alias = k with Step::in_place): the program says the output overwrites
// input k (the compiler's extraction chose it; its rules allowed it only where nothing else
// reads input k). The plan executes that: a temporary input and the output share one
// allocation spanning both lifetimes; a state input whose next value is this output (an output
// of the state's name: a KV cache update) is written in the state's own buffer
// (`in_place_state`: no arena bytes, no copy after the run). It checks that this is safe — input
// k is read in no other slot and by no later step, is not an output or a caller's input, and has
// the output's size — and a step that is not is a UserError naming it (the compiler then drops
// the in-place form). Any other step with an alias gets a copy of input k first (`copy_alias`).
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
