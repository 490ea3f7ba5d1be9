// A group's chosen program as deterministic text, and the reader for it: what the program cache
// (compiler/group_cache.hpp) stores, so that a warm compile skips the search.
//
//   steps 2
//   step
//     how "kernel"
//     dtype f32
//     shape [seq, 64]
//     node 5                    (`node none`: a step that computes no chunk-graph node)
//     in_place 0
//     measured 1
//     seconds 1.2345678901234567e-05
//     inputs i0 s0              (i: a chunk-graph Input node, s: an earlier step)
//     rules "fuse-elementwise-into-reduce"
//     body 4                    (the Body's to_text, its line count first)
//     ...
//   step
//     ...
//     library "gemm" f32 2      (a LibraryCall: op, dtype, parameter count)
//     param "m" 64*seq
//     param "n" 64
//   outputs 1
//   output 7 s1
//   report
//     kept_one_op 0
//     searched_steps 2
//     program_seconds 0.0001
//     one_op_seconds 0.0003
//     rejected "what" "why" "rule" ...
//
// Strings are double-quoted with \\, \" and \n escaped; numbers print with 17 significant
// digits, so they read back exactly. The report keeps what describes the result (the times
// that chose it, the rejections); what the search did (e-classes, measurements, phase times)
// belongs to the run that did it and is not stored.
#pragma once

#include <string>
#include <string_view>

#include "compiler/group_program.hpp"

namespace kiln::compiler {

std::string to_text(const GroupProgram& program);

// Reads back what to_text prints; the result prints exactly `text`, or this throws a
// UserError located in it (`source_name:line:col`). It checks the form, not the meaning:
// references to earlier steps are in range and each Body has one input per step input;
// whether the program fits a chunk graph is the caller's to check.
GroupProgram parse_group_program(std::string_view text,
                                 std::string_view source_name = "<group program>");

}  // namespace kiln::compiler
