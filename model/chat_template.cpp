// ChatML prompts (see chat_template.hpp).
#include "model/chat_template.hpp"

#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

// The template's text for a newline: a real one, or the two characters '\' 'n' of a literal.
std::size_t newline_at(const std::string& t, std::size_t i) {
  if (i < t.size() && t[i] == '\n') return 1;
  if (i + 1 < t.size() && t[i] == '\\' && t[i + 1] == 'n') return 2;
  return 0;
}

}  // namespace

std::string chat_prompt(const std::string& t, std::string_view message, const std::string& file) {
  if (t.find("<|im_start|>") == std::string::npos || t.find("<|im_end|>") == std::string::npos) {
    throw support::UserError(file + ": the chat template is not ChatML (<|im_start|> ... "
                             "<|im_end|>); kiln's chat prompts support ChatML only");
  }
  std::string prompt;
  // A default system message: "<|im_start|>system" + newline + text + "<|im_end|>" written
  // as one literal in the template.
  const std::string open = "<|im_start|>system";
  if (std::size_t at = t.find(open); at != std::string::npos) {
    const std::size_t nl = newline_at(t, at + open.size());
    const std::size_t end = t.find("<|im_end|>", at);
    if (nl > 0 && end != std::string::npos) {
      std::string text = t.substr(at + open.size() + nl, end - at - open.size() - nl);
      std::string unescaped;
      for (std::size_t i = 0; i < text.size(); ++i) {
        const std::size_t n = newline_at(text, i);
        unescaped += n ? '\n' : text[i];
        if (n == 2) ++i;
      }
      if (unescaped.find('{') == std::string::npos && unescaped.find('\'') == std::string::npos) {
        prompt += "<|im_start|>system\n" + unescaped + "<|im_end|>\n";
      }
    }
  }
  prompt += "<|im_start|>user\n";
  prompt += message;
  prompt += "<|im_end|>\n<|im_start|>assistant\n";
  return prompt;
}

std::string chat_prompt(const Gguf& gguf, std::string_view message) {
  if (!gguf.find("tokenizer.chat_template")) {
    throw support::UserError(gguf.file + ": no chat template (tokenizer.chat_template)");
  }
  return chat_prompt(gguf.string("tokenizer.chat_template"), message, gguf.file);
}

}  // namespace kiln::model
