// BpeTokenizer: the byte-level BPE of GPT-2 and the models that reuse it (SmolLM2, StarCoder,
// Qwen ...), as a GGUF file describes it: tokenizer.ggml.model "gpt2", .tokens, .merges,
// .token_type, .pre (the pre-tokenizer), and the bos/eos/unknown ids.
//
// Encoding: special tokens (token types CONTROL and USER_DEFINED, e.g. "<|im_start|>") are
// found in the text first, longest first; the text between is pre-tokenized
// (model/pretokenize), each piece's bytes are mapped to GPT-2's printable characters, and
// merges are applied lowest rank first, leftmost first. Decoding maps the characters back to
// bytes; a special token decodes to its own text. So decode(encode(s)) == s for any bytes s
// when every byte has a token (a byte without one is left out, as llama.cpp and Hugging Face's
// tokenizers do).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/gguf.hpp"
#include "model/pretokenize.hpp"

namespace kiln::model {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum class TokenType : std::int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

struct BpeVocabulary {
  std::vector<std::string> tokens;    // by id, in GPT-2's byte-to-character form
  std::vector<TokenType> types;       // by id (empty: all Normal)
  std::vector<std::string> merges;    // "left right", by rank
  PreTokenizer pre = PreTokenizer::Gpt2;
  std::optional<std::int32_t> bos, eos, unknown;
  bool add_bos = false;
};

class BpeTokenizer {
 public:
  // A UserError naming the problem (a merge of unknown tokens, an id out of range ...).
  explicit BpeTokenizer(BpeVocabulary vocabulary);
  // The tokenizer a GGUF file describes; a UserError if it is not byte-level BPE ("gpt2") or
  // its pre-tokenizer is unknown.
  static BpeTokenizer from_gguf(const Gguf& gguf);

  // Token ids of `text`; with `parse_special`, special tokens written in the text are found.
  // Adds bos first when the vocabulary says so and `add_bos` is true.
  std::vector<std::int32_t> encode(std::string_view text, bool parse_special = true,
                                   bool add_bos = true) const;
  // The bytes of `ids` (a UserError for an id out of range).
  std::string decode(std::span<const std::int32_t> ids) const;
  std::string decode(std::int32_t id) const;

  std::optional<std::int32_t> find(std::string_view token) const;
  std::int32_t size() const { return static_cast<std::int32_t>(vocab_.tokens.size()); }
  const BpeVocabulary& vocabulary() const { return vocab_; }

 private:
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;
  bool is_special(std::int32_t id) const;

  BpeVocabulary vocab_;
  std::unordered_map<std::string, std::int32_t> ids_;        // lookups only
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, std::int32_t>> merges_;  // (l, r) -> (rank, id)
  std::vector<std::int32_t> byte_ids_;                       // by byte value, -1 if absent
  std::vector<std::int32_t> specials_;                       // longest text first
};

// GPT-2's mapping of bytes to printable characters (as UTF-8): the form tokens are stored in.
const std::string& byte_to_unicode(std::uint8_t byte);

}  // namespace kiln::model
