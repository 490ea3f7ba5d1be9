// The byte-level BPE tokenizer: pre-tokenizer splits checked against the `tokenizers` package
// (Hugging Face's: Sequence[Digits(individual_digits), ByteLevel(use_regex)], as SmolLM2's
// tokenizer.json), merges by rank, special tokens, the round trip on random UTF-8 and random
// bytes, and ChatML chat prompts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "model/bpe_tokenizer.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/pretokenize.hpp"
#include "support/diagnostic.hpp"
#include "tests/unit/tiny_llama.hpp"

using namespace kiln::model;

namespace {

std::vector<std::string> split(const std::string& text, PreTokenizer kind) {
  std::vector<std::string> out;
  for (std::string_view p : pretokenize(text, kind)) out.emplace_back(p);
  return out;
}

BpeTokenizer tiny_tokenizer() {
  BpeVocabulary v;
  v.tokens = kiln::testing::tiny_tokens();
  v.types.assign(v.tokens.size(), TokenType::Normal);
  for (std::size_t i = v.tokens.size() - 3; i < v.tokens.size(); ++i) v.types[i] = TokenType::Control;
  v.merges = kiln::testing::tiny_merges();
  v.pre = PreTokenizer::Digits;
  v.eos = static_cast<std::int32_t>(v.tokens.size() - 1);
  return BpeTokenizer(std::move(v));
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Random valid UTF-8, weighted toward what the split pattern cares about: letters, digits,
// spaces of several kinds, apostrophes, punctuation, and characters of 2, 3 and 4 bytes.
std::string random_utf8(std::mt19937_64& rng) {
  static const char32_t picks[] = {U'a', U'Z', U'\'', U's', U'l', U' ', U' ', U'\n', U'\t',
                                   U'7', U'.', U'!', 0xA0, 0xE9, 0x663, 0x3000, 0x65E5, 0x1F600,
                                   0x301, 0x2028};
  std::uniform_int_distribution<int> length(0, 40), kind(0, 3);
  std::uniform_int_distribution<std::size_t> pick(0, std::size(picks) - 1);
  std::uniform_int_distribution<std::uint32_t> any(1, 0x10FFFF);
  std::string s;
  for (int i = length(rng); i > 0; --i) {
    char32_t c = kind(rng) == 0 ? any(rng) : picks[pick(rng)];
    if (c >= 0xD800 && c <= 0xDFFF) c = U'x';  // surrogates are not characters
    append_utf8(s, c);
  }
  return s;
}

}  // namespace

TEST_CASE("pretokenize: splits as the tokenizers package does [model]") {
  // Pieces from tokenizers 0.22 (bench/model/compare_tokenizer.py shows how).
  using V = std::vector<std::string>;
  const PreTokenizer d = PreTokenizer::Digits;
  CHECK(split("Hello world's 123  foo\n\nbar", d) ==
        V{"Hello", " world", "'s", " ", "1", "2", "3", " ", " foo", "\n", "\n", "bar"});
  CHECK(split("I'll don't  WE'RE", d) == V{"I", "'ll", " don", "'t", " ", " WE", "'", "RE"});
  CHECK(split("  leading\tand trailing  ", d) ==
        V{" ", " leading", "\t", "and", " trailing", "  "});
  CHECK(split("x=3.14; y!=z?", d) == V{"x", "=", "3", ".", "1", "4", ";", " y", "!=", "z", "?"});
  CHECK(split("h\xC3\xA9llo w\xC3\xB6rld \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xD9\xA3\xD9\xA4", d) ==
        V{"h\xC3\xA9llo", " w\xC3\xB6rld", " \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", " ", "\xD9\xA3", "\xD9\xA4"});
  CHECK(split("a\n \nb", d) == V{"a", "\n ", "\n", "b"});
  CHECK(split(" 's 'S", d) == V{" '", "s", " '", "S"});
  // GPT-2's pattern keeps numbers whole.
  CHECK(split("in 2024, 42x", PreTokenizer::Gpt2) == V{"in", " 2024", ",", " 42", "x"});
  CHECK(split("", d).empty());
}

TEST_CASE("bpe: merges apply lowest rank first [model]") {
  const BpeTokenizer t = tiny_tokenizer();
  // "the": t h e -> t he (rank 1); " the": Ġ t h e -> Ġt h e (0) -> Ġt he (1) -> Ġthe (2).
  CHECK(t.encode("the the") == std::vector<std::int32_t>{'t', 257, 258});
  CHECK(t.decode(std::vector<std::int32_t>{'t', 257, 258}) == "the the");
  CHECK(t.encode("in 12") == std::vector<std::int32_t>{259, ' ', '1', '2'});
}

TEST_CASE("bpe: special tokens are found in the text unless told not to [model]") {
  const BpeTokenizer t = tiny_tokenizer();
  const std::int32_t start = t.size() - 2, end = t.size() - 1;
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  const std::vector<std::int32_t> ids = t.encode(text);
  CHECK(ids.front() == start);
  CHECK(ids.back() == end);
  CHECK(ids.size() == 1 + 3 + 1 + 2 + 1);  // u s er, \n, h i
  CHECK(t.decode(ids) == text);
  const std::vector<std::int32_t> plain = t.encode(text, /*parse_special=*/false);
  CHECK(std::find(plain.begin(), plain.end(), start) == plain.end());
  CHECK(t.decode(plain) == text);
}

TEST_CASE("bpe: decode(encode(s)) == s for random UTF-8 and random bytes [model]") {
  const BpeTokenizer t = tiny_tokenizer();
  std::mt19937_64 rng(14);
  for (int i = 0; i < 2000; ++i) {
    const std::string s = random_utf8(rng);
    INFO(s);
    REQUIRE(t.decode(t.encode(s)) == s);
  }
  std::uniform_int_distribution<int> byte(0, 255), length(0, 30);
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    for (int n = length(rng); n > 0; --n) s += static_cast<char>(byte(rng));
    REQUIRE(t.decode(t.encode(s)) == s);
  }
}

TEST_CASE("bpe: the tokenizer of a GGUF file, and its errors [model]") {
  const std::string path = kiln::testing::temp_path("tok.gguf");
  kiln::testing::write_tiny_llama(path, GgmlType::F32);
  const GgufFile file(path);
  const BpeTokenizer t = BpeTokenizer::from_gguf(file.gguf());
  CHECK(t.size() == 256 + 8 + 3);
  CHECK(t.vocabulary().eos == t.size() - 1);
  CHECK(t.vocabulary().pre == PreTokenizer::Digits);
  CHECK(t.encode("the the") == tiny_tokenizer().encode("the the"));
  std::filesystem::remove(path);

  BpeVocabulary bad;
  bad.tokens = {"a", "b"};
  bad.merges = {"a c"};
  CHECK_THROWS_WITH(BpeTokenizer(bad), Catch::Contains("merge 0 \"a c\" names a token that is not in the vocabulary"));
  bad.merges = {"ab"};
  CHECK_THROWS_WITH(BpeTokenizer(bad), Catch::Contains("is not two tokens separated by a space"));
  CHECK_THROWS_WITH(tiny_tokenizer().decode(99999), Catch::Contains("token id 99999 is out of range"));
}

TEST_CASE("chat template: one user message in ChatML, with the template's default system turn [model]") {
  // SmolLM2-135M-Instruct's template, as its GGUF file holds it.
  const std::string smollm2 =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
      "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
      "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
      "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\n' }}{% endif %}";
  CHECK(chat_prompt(smollm2, "Hi!", "m.gguf") ==
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  // Qwen-style: the system turn comes from the messages, so there is none by default.
  const std::string from_messages =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}";
  CHECK(chat_prompt(from_messages, "Hi!", "m.gguf") ==
        "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
  CHECK_THROWS_WITH(chat_prompt("[INST] {{ m }} [/INST]", "Hi!", "m.gguf"),
                    Catch::Contains("m.gguf: the chat template is not ChatML"));
}
