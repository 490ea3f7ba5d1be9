// Index Exprs (graph/expr.hpp) as C-family source text, shared by the code generators of every
// target: + and * as operators, floor division, ceiling division, floor modulus, min and max
// through the kiln_fdiv/kiln_cdiv/kiln_imod/kiln_imin/kiln_imax helpers each prelude defines,
// comparisons as 0/1 kiln_i64 values.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "graph/expr.hpp"

namespace kiln::targets {

// `dim` names a variable or symbolic dim in the generated code; `constant` writes a 64-bit
// integer literal in the target's dialect.
std::string c_index_expr(const graph::Expr& e,
                         const std::function<std::string(const std::string&)>& dim,
                         const std::function<std::string(std::int64_t)>& constant);

}  // namespace kiln::targets
