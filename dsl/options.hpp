// Command options in egglog's style: positional items, then `:key value` pairs or bare `:flag`s.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "dsl/sexp.hpp"

namespace kiln::dsl {

struct CommandParts {
  std::vector<const Sexp*> positional;
  std::map<std::string, std::vector<const Sexp*>> options;  // key -> the values after it
  std::map<std::string, const Sexp*> option_spans;          // key -> the key token

  bool has(const std::string& key) const { return options.count(key) != 0; }
  // The single value of an option; throws if the option has no value.
  const Sexp& value(const std::string& key) const;
};

// Splits items[1..] of a command. `with_value` keys take exactly one value, `flags` none,
// `with_values` all items up to the next key. Unknown keys are errors at their location.
CommandParts split_options(const Sexp& command, const std::set<std::string>& with_value,
                           const std::set<std::string>& flags = {},
                           const std::set<std::string>& with_values = {});

}  // namespace kiln::dsl
