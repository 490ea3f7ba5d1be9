// pretokenize: splits text into the pieces that byte-level BPE encodes one by one, as the
// tokenizers of GPT-2 and of models built on its split pattern do.
//
//   Gpt2     'gpt2' (and llama.cpp's default): the pattern
//            's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Digits   'smollm', 'starcoder', 'refact', ...: each number character (\p{N}) is a piece of
//            its own first, then the GPT-2 pattern splits the text between them.
//
// The pieces are views of `text` and cover it exactly. Bytes that are not valid UTF-8 are pieces'
// "other" characters one byte at a time, so any byte string splits and round-trips.
#pragma once

#include <string_view>
#include <vector>

namespace kiln::model {

enum class PreTokenizer { Gpt2, Digits };

std::vector<std::string_view> pretokenize(std::string_view text, PreTokenizer kind);

}  // namespace kiln::model
