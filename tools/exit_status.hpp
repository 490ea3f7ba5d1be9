// How the `kiln` command line turns what a command throws into a message and an exit status:
// a user's mistake is reported as it is with status 1, anything else as an internal error with
// status 70 (sysexits' EX_SOFTWARE); the process never ends in std::terminate.
#pragma once

#include <functional>
#include <ostream>

namespace kiln::tools {

inline constexpr int kUserErrorStatus = 1;
inline constexpr int kInternalErrorStatus = 70;

// Runs `command` and returns its exit status; an exception is written to `err` (after flushing
// `out`, so that the message follows what the command printed) and gives the status above:
// "error: ..." (located) for a UserError, "kiln: internal error at FILE:LINE: ..." for a broken
// invariant, "kiln: internal error: <what()>" for any other exception.
int run_reporting_errors(const std::function<int()>& command, std::ostream& out,
                         std::ostream& err);

}  // namespace kiln::tools
