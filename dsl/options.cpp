#include "dsl/options.hpp"

#include "support/diagnostic.hpp"

namespace kiln::dsl {

using support::UserError;

const Sexp& CommandParts::value(const std::string& key) const {
  return *options.at(key).at(0);
}

CommandParts split_options(const Sexp& command, const std::set<std::string>& with_value,
                           const std::set<std::string>& flags,
                           const std::set<std::string>& with_values) {
  CommandParts parts;
  std::size_t i = 1;
  const auto& items = command.items;
  auto is_key = [](const Sexp& s) { return s.is_symbol() && s.text.size() > 1 && s.text[0] == ':'; };
  while (i < items.size() && !is_key(items[i])) parts.positional.push_back(&items[i++]);
  while (i < items.size()) {
    const Sexp& key = items[i++];
    if (!is_key(key)) throw UserError("expected an option such as :name", key.span);
    if (parts.has(key.text)) throw UserError("option " + key.text + " given twice", key.span);
    parts.option_spans[key.text] = &key;
    std::vector<const Sexp*>& values = parts.options[key.text];
    if (flags.count(key.text)) continue;
    if (with_value.count(key.text)) {
      if (i >= items.size() || is_key(items[i])) {
        throw UserError("option " + key.text + " needs a value", key.span);
      }
      values.push_back(&items[i++]);
      continue;
    }
    if (with_values.count(key.text)) {
      while (i < items.size() && !is_key(items[i])) values.push_back(&items[i++]);
      continue;
    }
    throw UserError("unknown option " + key.text, key.span);
  }
  return parts;
}

}  // namespace kiln::dsl
