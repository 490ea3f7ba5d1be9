// The engine's universal cell: every table column and every query variable holds a Value.
#pragma once

#include <cstdint>
#include <limits>

namespace kiln::engine {

// 64 raw bits whose meaning depends on the column's sort: an e-class id for eq-sorts, the bits
// of an i64/f64/bool, or an index into a primitive sort's intern table (String, user sorts).
using Value = std::uint64_t;

using SortId = std::uint32_t;
using FunctionId = std::uint32_t;
using RowId = std::uint32_t;
// Database time: every row carries the timestamp at which it was written.
using Timestamp = std::uint32_t;

inline constexpr RowId kNoRow = std::numeric_limits<RowId>::max();

}  // namespace kiln::engine
