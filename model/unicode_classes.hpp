// Unicode code point classes for the pre-tokenizer: letters (\p{L}), numbers (\p{N}) and white
// space (\s), as the GPT-2 split pattern uses them. The tables are generated
// (scripts/unicode-classes).
#pragma once

namespace kiln::model {

bool is_letter(char32_t c);
bool is_number(char32_t c);
bool is_whitespace(char32_t c);

}  // namespace kiln::model
