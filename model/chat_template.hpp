// chat_template: the prompt text of one user message in a model's chat template
// (tokenizer.chat_template). Templates are Jinja programs; kiln does not run Jinja but recognizes
// the ChatML family (SmolLM2, Qwen ...), whose turns are "<|im_start|>ROLE\nTEXT<|im_end|>\n":
//
//   [<|im_start|>system\nDEFAULT<|im_end|>\n]<|im_start|>user\nMESSAGE<|im_end|>\n<|im_start|>assistant\n
//
// where the system turn is there when the template writes a default system message for
// conversations that start without one (its text is read from the template).
#pragma once

#include <string>
#include <string_view>

#include "model/gguf.hpp"

namespace kiln::model {

// The prompt for `message` as the first user turn, ending where the assistant's answer starts.
// A UserError if the file has no chat template or one that is not ChatML.
std::string chat_prompt(const Gguf& gguf, std::string_view message);
// The same from the template's text (`file` names it in errors).
std::string chat_prompt(const std::string& chat_template, std::string_view message,
                        const std::string& file);

}  // namespace kiln::model
