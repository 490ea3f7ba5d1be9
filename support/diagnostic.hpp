// The two kinds of error: a user's mistake (UserError, with a source location and a caret) and
// kiln's own bug (KILN_ASSERT, an internal error). Never mix them.
#pragma once

#include <stdexcept>
#include <string>

#include "support/source_file.hpp"

namespace kiln::support {

// A mistake in the user's input. what() is the full diagnostic:
//   file:line:col: error: message
//     (the source line)
//     ^~~~
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : UserError(message, Span{}) {}
  UserError(const std::string& message, Span span);

  const std::string& message() const { return message_; }
  const Span& span() const { return span_; }

 private:
  std::string message_;
  Span span_;
};

// A failure while running a well-formed program: a check that does not hold, a panic, a failing
// primitive, a merge conflict, nothing to extract. `(fail ...)` expects exactly these; syntax and
// type errors are plain UserErrors and are never caught by it.
class RuntimeFailure : public UserError {
 public:
  using UserError::UserError;
};

// Rethrows `error` (of either kind) with `span` when it has no location of its own.
[[noreturn]] void rethrow_with_span(const UserError& error, const Span& span);

// Rethrows `error` (of either kind, with its span) with "; `note`" after its message.
[[noreturn]] void rethrow_with_note(const UserError& error, const std::string& note);

// Renders "file:line:col: error: message" with the source line and a caret under the span.
std::string format_diagnostic(const std::string& message, const Span& span);

// A broken invariant inside kiln: a bug, not the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void internal_error(const char* file, int line, const std::string& what);

}  // namespace kiln::support

#define KILN_ASSERT(cond, msg)                                              \
  do {                                                                      \
    if (!(cond)) ::kiln::support::internal_error(__FILE__, __LINE__, (msg)); \
  } while (0)
