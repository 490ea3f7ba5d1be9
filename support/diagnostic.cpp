#include "support/diagnostic.hpp"

#include <algorithm>

namespace kiln::support {

std::string format_diagnostic(const std::string& message, const Span& span) {
  if (!span.known()) return "error: " + message;
  std::string out = span.location() + ": error: " + message + "\n";
  std::uint32_t line = span.file->line_of(span.begin);
  std::string text = span.file->line_text(line);
  std::uint32_t column = span.file->column_of(span.begin);
  out += "  " + text + "\n  ";
  // Tabs in the prefix are kept so the caret lines up under the same column.
  for (std::uint32_t i = 1; i < column && i - 1 < text.size(); ++i) {
    out += text[i - 1] == '\t' ? '\t' : ' ';
  }
  std::uint32_t line_end = span.begin - (column - 1) + static_cast<std::uint32_t>(text.size());
  std::uint32_t stop = std::min(span.end, line_end);
  std::uint32_t width = stop > span.begin ? stop - span.begin : 1;
  out += '^';
  out += std::string(width - 1, '~');
  return out;
}

UserError::UserError(const std::string& message, Span span)
    : std::runtime_error(format_diagnostic(message, span)), message_(message), span_(std::move(span)) {}

void rethrow_with_span(const UserError& error, const Span& span) {
  if (error.span().known()) throw;
  if (dynamic_cast<const RuntimeFailure*>(&error)) throw RuntimeFailure(error.message(), span);
  throw UserError(error.message(), span);
}

void rethrow_with_note(const UserError& error, const std::string& note) {
  const std::string message = error.message() + "; " + note;
  if (dynamic_cast<const RuntimeFailure*>(&error)) throw RuntimeFailure(message, error.span());
  throw UserError(message, error.span());
}

void internal_error(const char* file, int line, const std::string& what) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) +
                      ": " + what);
}

}  // namespace kiln::support
