// `kiln tokenize --model FILE.gguf TEXT`: the token ids of TEXT under the file's tokenizer, on one
// line, so that other tokenizers can be compared with kiln's (bench/model/compare_tokenizer.py).
#include <iostream>
#include <memory>

#include "model/bpe_tokenizer.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "support/diagnostic.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  bool chat = false;
  bool no_special = false;
  bool decode = false;
};

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Token ids of a text under a GGUF file's tokenizer");
  cmd->add_option("--model", o->model, "The GGUF file whose tokenizer to use")->required();
  cmd->add_option("text", o->text, "The text")->required();
  cmd->add_flag("--chat", o->chat, "Wrap the text in the model's chat template (ChatML)");
  cmd->add_flag("--no-special", o->no_special, "Do not look for special tokens in the text");
  cmd->add_flag("--decode", o->decode, "Read the text as space-separated ids and print their text");
  return {cmd, [o] {
            const model::GgufFile file(o->model);
            const model::BpeTokenizer tokenizer = model::BpeTokenizer::from_gguf(file.gguf());
            if (o->decode) {
              std::vector<std::int32_t> ids;
              std::size_t at = 0;
              while (at < o->text.size()) {
                std::size_t used = 0;
                try {
                  ids.push_back(std::stoi(o->text.substr(at), &used));
                } catch (const std::exception&) {
                  throw support::UserError("--decode: \"" + o->text.substr(at) +
                                           "\" is not a list of token ids");
                }
                at += used;
              }
              std::cout << tokenizer.decode(ids);
              return 0;
            }
            const std::string text = o->chat ? model::chat_prompt(file.gguf(), o->text) : o->text;
            const std::vector<std::int32_t> ids = tokenizer.encode(text, !o->no_special);
            for (std::size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
            std::cout << "\n";
            return 0;
          }};
}

}  // namespace kiln::tools
