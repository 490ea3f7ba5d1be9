// Reading back the text form of a Body (graph/body.hpp's to_text), for caches that store
// Bodies as text (compiler/group_program_text.hpp).
#pragma once

#include <string_view>

#include "graph/body.hpp"

namespace kiln::graph {

// Reads back what to_text prints. The result prints exactly `text`, or this throws: a text
// that is malformed, or that would build a different Body (a renumbered or repeated node, a
// wrong dtype), is a UserError located in it (`source_name:line:col`).
Body parse_body(std::string_view text, std::string_view source_name = "<body>");

}  // namespace kiln::graph
