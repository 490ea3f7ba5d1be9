// Rows in files: `input` reads a function's rows from a tab-separated file, `print-function
// :mode csv` writes them as CSV, as egglog does.
#pragma once

#include <string>
#include <vector>

#include "engine/builtins.hpp"
#include "engine/egraph.hpp"

namespace kiln::dsl {

// True for the sorts a file can hold: i64, f64 and String in key columns; i64 and String in a
// function's output column (egglog does not read an f64 output).
bool readable_from_file(const engine::Builtins& builtins, engine::SortId sort, bool output_column);

// Reads `path`: one row per line, `sorts.size()` fields separated by tabs (a final newline and
// a `\r` before each newline are allowed). Throws support::RuntimeFailure naming the file and
// line when the file cannot be read or a line does not fit.
std::vector<std::vector<engine::Value>> read_tsv_rows(const std::string& path,
                                                      const std::vector<engine::SortId>& sorts,
                                                      const engine::Builtins& builtins);

// One CSV field: quoted (with doubled quotes) when it holds a comma, quote or line break, or is
// empty.
std::string csv_field(const std::string& text);

}  // namespace kiln::dsl
