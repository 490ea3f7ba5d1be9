// Byte-level BPE (see bpe_tokenizer.hpp).
#include "model/bpe_tokenizer.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "support/diagnostic.hpp"

namespace kiln::model {

namespace {

using support::UserError;

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for
// 256, 257, ... in byte order.
const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      append_utf8(t[b], printable ? static_cast<char32_t>(b) : next++);
    }
    return t;
  }();
  return table;
}

const std::unordered_map<std::string, std::uint8_t>& unicode_table() {
  static const std::unordered_map<std::string, std::uint8_t> table = [] {
    std::unordered_map<std::string, std::uint8_t> t;
    for (int b = 0; b < 256; ++b) t[byte_table()[b]] = static_cast<std::uint8_t>(b);
    return t;
  }();
  return table;
}

std::uint64_t pair_key(std::int32_t l, std::int32_t r) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) |
         static_cast<std::uint32_t>(r);
}

std::size_t utf8_length(unsigned char b) {
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  return 4;
}

PreTokenizer pre_tokenizer_named(const std::string& name, const std::string& file) {
  if (name == "gpt2" || name == "default") return PreTokenizer::Gpt2;
  if (name == "smollm" || name == "starcoder" || name == "refact" || name == "codeshell" ||
      name == "command-r" || name == "exaone" || name == "minerva") {
    return PreTokenizer::Digits;
  }
  throw UserError(file + ": pre-tokenizer '" + name +
                  "' (tokenizer.ggml.pre) is not supported; known: gpt2, smollm, starcoder, "
                  "refact, codeshell, command-r, exaone, minerva");
}

}  // namespace

const std::string& byte_to_unicode(std::uint8_t byte) { return byte_table()[byte]; }

BpeTokenizer::BpeTokenizer(BpeVocabulary vocabulary) : vocab_(std::move(vocabulary)) {
  const auto n = vocab_.tokens.size();
  if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    throw UserError("tokenizer: the vocabulary has " + std::to_string(n) + " tokens");
  }
  if (!vocab_.types.empty() && vocab_.types.size() != n) {
    throw UserError("tokenizer: " + std::to_string(vocab_.types.size()) + " token types for " +
                    std::to_string(n) + " tokens");
  }
  for (const auto& id : {vocab_.bos, vocab_.eos, vocab_.unknown}) {
    if (id && (*id < 0 || static_cast<std::size_t>(*id) >= n)) {
      throw UserError("tokenizer: special token id " + std::to_string(*id) + " is out of range");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    ids_.emplace(vocab_.tokens[i], static_cast<std::int32_t>(i));  // the first of duplicates
    if (is_special(static_cast<std::int32_t>(i)) && !vocab_.tokens[i].empty()) {
      specials_.push_back(static_cast<std::int32_t>(i));
    }
  }
  std::stable_sort(specials_.begin(), specials_.end(), [&](std::int32_t a, std::int32_t b) {
    return vocab_.tokens[a].size() > vocab_.tokens[b].size();
  });
  byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    if (auto id = find(byte_table()[b])) byte_ids_[b] = *id;
  }
  for (std::size_t rank = 0; rank < vocab_.merges.size(); ++rank) {
    const std::string& m = vocab_.merges[rank];
    const std::size_t space = m.find(' ', 1);
    if (space == std::string::npos) {
      throw UserError("tokenizer: merge " + std::to_string(rank) + " \"" + m +
                      "\" is not two tokens separated by a space");
    }
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    auto l = find(left), r = find(right), merged = find(left + right);
    if (!l || !r || !merged) {
      throw UserError("tokenizer: merge " + std::to_string(rank) + " \"" + m +
                      "\" names a token that is not in the vocabulary");
    }
    merges_.emplace(pair_key(*l, *r), std::make_pair(static_cast<std::int32_t>(rank), *merged));
  }
}

BpeTokenizer BpeTokenizer::from_gguf(const Gguf& g) {
  const std::string model = g.string("tokenizer.ggml.model");
  if (model != "gpt2") {
    throw UserError(g.file + ": tokenizer '" + model +
                    "' (tokenizer.ggml.model) is not supported; kiln reads byte-level BPE ('gpt2')");
  }
  BpeVocabulary v;
  v.tokens = g.strings("tokenizer.ggml.tokens");
  if (g.find("tokenizer.ggml.token_type")) {
    for (std::int64_t t : g.integers("tokenizer.ggml.token_type")) {
      v.types.push_back(static_cast<TokenType>(t));
    }
  }
  v.merges = g.strings("tokenizer.ggml.merges");
  v.pre = g.find("tokenizer.ggml.pre") ? pre_tokenizer_named(g.string("tokenizer.ggml.pre"), g.file)
                                       : PreTokenizer::Gpt2;
  auto id = [&](const char* key) -> std::optional<std::int32_t> {
    std::optional<std::int64_t> i = g.optional_integer(key);
    if (!i) return std::nullopt;
    if (*i < 0 || *i >= static_cast<std::int64_t>(v.tokens.size())) {
      throw UserError(g.file + ": metadata '" + key + "' = " + std::to_string(*i) +
                      " is not a token id (the vocabulary has " + std::to_string(v.tokens.size()) +
                      " tokens)");
    }
    return static_cast<std::int32_t>(*i);
  };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unknown = id("tokenizer.ggml.unknown_token_id");
  v.add_bos = g.optional_bool("tokenizer.ggml.add_bos_token").value_or(false);
  try {
    return BpeTokenizer(std::move(v));
  } catch (const UserError& e) {
    throw UserError(g.file + ": " + e.message());
  }
}

bool BpeTokenizer::is_special(std::int32_t id) const {
  if (vocab_.types.empty()) return false;
  const TokenType t = vocab_.types[static_cast<std::size_t>(id)];
  return t == TokenType::Control || t == TokenType::UserDefined;
}

std::optional<std::int32_t> BpeTokenizer::find(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  std::vector<std::int32_t> symbols;
  symbols.reserve(piece.size());
  for (char ch : piece) {
    // A byte the vocabulary has no token for is left out, as llama.cpp and Hugging Face's
    // tokenizers do (SmolLM2's lacks some lead bytes of 4-byte characters).
    const std::int32_t id = byte_ids_[static_cast<std::uint8_t>(ch)];
    if (id >= 0) symbols.push_back(id);
  }
  // Merge the adjacent pair of lowest rank (the leftmost among equals) until none is left.
  while (symbols.size() > 1) {
    std::int32_t best_rank = std::numeric_limits<std::int32_t>::max(), best_id = -1;
    std::size_t best_at = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    symbols[best_at] = best_id;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best_at) + 1);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text, bool parse_special,
                                               bool add_bos) const {
  std::vector<std::int32_t> out;
  if (add_bos && vocab_.add_bos && vocab_.bos) out.push_back(*vocab_.bos);
  auto encode_text = [&](std::string_view part) {
    for (std::string_view piece : pretokenize(part, vocab_.pre)) encode_piece(piece, out);
  };
  std::size_t start = 0;
  if (parse_special && !specials_.empty()) {
    for (std::size_t i = 0; i < text.size();) {
      std::int32_t hit = -1;
      for (std::int32_t id : specials_) {
        const std::string& s = vocab_.tokens[static_cast<std::size_t>(id)];
        if (text.compare(i, s.size(), s) == 0) {
          hit = id;
          break;
        }
      }
      if (hit < 0) {
        ++i;
        continue;
      }
      encode_text(text.substr(start, i - start));
      out.push_back(hit);
      i += vocab_.tokens[static_cast<std::size_t>(hit)].size();
      start = i;
    }
  }
  encode_text(text.substr(start));
  return out;
}

std::string BpeTokenizer::decode(std::int32_t id) const {
  if (id < 0 || id >= size()) {
    throw UserError("tokenizer: token id " + std::to_string(id) + " is out of range (vocabulary of " +
                    std::to_string(size()) + ")");
  }
  const std::string& token = vocab_.tokens[static_cast<std::size_t>(id)];
  if (is_special(id)) return token;
  std::string out;
  const auto& table = unicode_table();
  for (std::size_t i = 0; i < token.size();) {
    const std::size_t len = std::min(utf8_length(static_cast<unsigned char>(token[i])), token.size() - i);
    auto it = table.find(token.substr(i, len));
    if (it != table.end()) {
      out += static_cast<char>(it->second);
    } else {
      out.append(token, i, len);  // not a byte character: kept as text
    }
    i += len;
  }
  return out;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  for (std::int32_t id : ids) out += decode(id);
  return out;
}

}  // namespace kiln::model
