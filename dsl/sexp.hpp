// The s-expression layer of the rule language: what the PEGTL reader produces. Every node keeps
// its source span so later stages can point at the exact text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/source_file.hpp"

namespace kiln::dsl {

// Token classes, as egglog classifies them: a bare word that parses as an i64 is Int; as a
// float (including NaN, inf, -inf) is Float; "true"/"false" are Bool; "()" is Unit (an empty
// list); a double-quoted literal is String (escapes decoded); anything else is Symbol.
enum class SexpKind { List, Symbol, Int, Float, Bool, String };

struct Sexp {
  SexpKind kind = SexpKind::List;
  support::Span span;
  std::string text;            // Symbol name, or the decoded String value
  std::int64_t int_value = 0;  // Int
  double float_value = 0;      // Float
  bool bool_value = false;     // Bool
  std::vector<Sexp> items;     // List

  bool is_list() const { return kind == SexpKind::List; }
  bool is_symbol() const { return kind == SexpKind::Symbol; }
  bool is_symbol(std::string_view name) const { return kind == SexpKind::Symbol && text == name; }
  // Source form, for messages: egglog's printing (strings quoted, floats as egglog prints them).
  std::string to_string() const;
};

// Reads every top-level s-expression of a file. Throws support::UserError with the location
// of the first problem (unbalanced parentheses, unterminated string, bad escape, ...).
std::vector<Sexp> read_sexps(const std::shared_ptr<const support::SourceFile>& file);

}  // namespace kiln::dsl
