// The GPT-2 split pattern by hand (see pretokenize.hpp), alternative by alternative in the
// pattern's order, over code points.
#include "model/pretokenize.hpp"

#include <cstdint>

#include "model/unicode_classes.hpp"

namespace kiln::model {

namespace {

struct CodePoint {
  char32_t value;
  std::size_t offset;  // in bytes
  std::size_t length;  // in bytes
};

constexpr char32_t kInvalid = 0xFFFFFFFF;  // a byte that is not valid UTF-8: "other"

// One code point at text[i]: its value and length, or kInvalid and length 1.
CodePoint decode_one(std::string_view text, std::size_t i) {
  const auto b0 = static_cast<std::uint8_t>(text[i]);
  if (b0 < 0x80) return {b0, i, 1};
  std::size_t n = 0;
  char32_t v = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) n = 2, v = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) n = 3, v = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) n = 4, v = b0 & 0x07, min = 0x10000;
  else return {kInvalid, i, 1};
  if (i + n > text.size()) return {kInvalid, i, 1};
  for (std::size_t k = 1; k < n; ++k) {
    const auto b = static_cast<std::uint8_t>(text[i + k]);
    if ((b & 0xC0) != 0x80) return {kInvalid, i, 1};
    v = (v << 6) | (b & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return {kInvalid, i, 1};
  return {v, i, n};
}

std::vector<CodePoint> decode(std::string_view text) {
  std::vector<CodePoint> out;
  for (std::size_t i = 0; i < text.size();) {
    out.push_back(decode_one(text, i));
    i += out.back().length;
  }
  return out;
}

bool letter(char32_t c) { return c != kInvalid && is_letter(c); }
bool number(char32_t c) { return c != kInvalid && is_number(c); }
bool space(char32_t c) { return c != kInvalid && is_whitespace(c); }
bool other(char32_t c) { return !letter(c) && !number(c) && !space(c); }

// The length in code points of the pattern's match at cps[i] (always at least 1).
std::size_t match_gpt2(const std::vector<CodePoint>& cps, std::size_t i, std::size_t n) {
  const char32_t c = cps[i].value;
  if (c == U'\'' && i + 1 < n) {
    const char32_t c1 = cps[i + 1].value;
    if (c1 == U's' || c1 == U't' || c1 == U'm' || c1 == U'd') return 2;
    if (i + 2 < n) {
      const char32_t c2 = cps[i + 2].value;
      if ((c1 == U'r' && c2 == U'e') || (c1 == U'v' && c2 == U'e') || (c1 == U'l' && c2 == U'l')) {
        return 3;
      }
    }
  }
  auto run_end = [&](std::size_t k, bool (*in)(char32_t)) {
    while (k < n && in(cps[k].value)) ++k;
    return k;
  };
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+'
  const std::size_t s = c == U' ' ? i + 1 : i;
  if (s < n) {
    for (bool (*in)(char32_t) : {letter, number, other}) {
      if (in(cps[s].value)) return run_end(s, in) - i;
    }
  }
  // '\s+(?!\S)': a run of spaces leaves its last one to the word after it; '\s+' otherwise.
  const std::size_t k = run_end(i, space);
  if (k == i) return 1;  // unreachable: c is one of the classes above
  if (k < n && k - i > 1) return k - 1 - i;
  return k - i;
}

void split_gpt2(std::string_view text, std::vector<std::string_view>& out) {
  const std::vector<CodePoint> cps = decode(text);
  for (std::size_t i = 0; i < cps.size();) {
    const std::size_t len = match_gpt2(cps, i, cps.size());
    const std::size_t begin = cps[i].offset;
    const std::size_t end = cps[i + len - 1].offset + cps[i + len - 1].length;
    out.push_back(text.substr(begin, end - begin));
    i += len;
  }
}

}  // namespace

std::vector<std::string_view> pretokenize(std::string_view text, PreTokenizer kind) {
  std::vector<std::string_view> out;
  if (kind == PreTokenizer::Gpt2) {
    split_gpt2(text, out);
    return out;
  }
  // Digits: each number character alone, the text between through the GPT-2 pattern.
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const CodePoint cp = decode_one(text, i);
    if (number(cp.value)) {
      split_gpt2(text.substr(start, i - start), out);
      out.push_back(text.substr(i, cp.length));
      start = i + cp.length;
    }
    i += cp.length;
  }
  split_gpt2(text.substr(start), out);
  return out;
}

}  // namespace kiln::model
