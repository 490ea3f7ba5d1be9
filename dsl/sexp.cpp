// The s-expression reader of the rule language: a PEGTL grammar that accepts what egglog's
// reader accepts, classifies bare tokens as egglog does, and prints nodes back in egglog's style.
#include "dsl/sexp.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>
#include <tao/pegtl.hpp>
#include <type_traits>

#include "support/diagnostic.hpp"

namespace kiln::dsl {
namespace {

namespace pegtl = tao::pegtl;

// Deeper input is rejected with a message (the error table repeats the number). The reader itself
// does not recurse, but later stages walk the tree recursively: egglog overflows its stack near
// 8000 levels, and this leaves every stage ample room, even in sanitizer builds.
constexpr std::size_t kMaxListNesting = 1000;

// ---------------------------------------------------------------------------------------------
// The grammar. Rules are small named types; `must<>` marks the commit points, whose failures
// are reported through the error table below.
namespace grammar {

// Rust's char::is_whitespace, which egglog's reader uses: ASCII \t \n \v \f \r and space, plus
// the other Unicode White_Space characters (U+001C..U+001F are not among them).
struct whitespace
    : pegtl::sor<pegtl::one<' ', '\t', '\n', '\v', '\f', '\r'>,
                 pegtl::utf8::one<0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000>,
                 pegtl::utf8::range<0x2000, 0x200A>> {};
// A comment runs from ';' to the next '\n' (egglog does not end one at a lone '\r').
struct comment : pegtl::seq<pegtl::one<';'>, pegtl::star<pegtl::not_one<'\n'>>> {};
struct skip : pegtl::star<pegtl::sor<whitespace, comment>> {};

// A bare token runs to the next whitespace, '(', ')' or ';'. A '"' inside one is an ordinary
// character (egglog reads a"b" as one symbol); only at the start does it open a string.
struct atom_char : pegtl::seq<pegtl::not_at<whitespace>, pegtl::utf8::not_one<'(', ')', ';'>> {};
struct atom : pegtl::plus<atom_char> {};

// egglog decodes exactly four escapes: \" \\ \n \t. Raw newlines and tabs are allowed.
struct string_open : pegtl::one<'"'> {};
struct string_close : pegtl::one<'"'> {};
struct backslash : pegtl::one<'\\'> {};
struct escape_code : pegtl::one<'"', '\\', 'n', 't'> {};
// A backslash that ends the file leaves the string unterminated; that is the better message.
struct escape : pegtl::seq<backslash, pegtl::not_at<pegtl::eof>, pegtl::must<escape_code>> {};
struct plain_chars : pegtl::plus<pegtl::not_one<'"', '\\'>> {};
struct string_literal : pegtl::seq<string_open, pegtl::star<pegtl::sor<plain_chars, escape>>,
                                   pegtl::must<string_close>> {};

// Succeeds, consuming nothing, when the actions' stack of open lists passes a test. Lists are
// read as separate '(' and ')' tokens against that stack rather than by a recursive rule, so
// nesting costs no parser stack; these two tests are where the grammar needs it.
template <bool (*Test)(std::size_t count)>
struct open_list_count_is {
  using rule_t = open_list_count_is;
  using subs_t = pegtl::empty_list;
  template <pegtl::apply_mode, pegtl::rewind_mode, template <typename...> class Action,
            template <typename...> class Control, typename ParseInput, typename State>
  static bool match(ParseInput& /*in*/, const State& state) {
    return Test(state.open_lists.size());
  }
};
constexpr bool nonzero(std::size_t count) {
  return count > 0;
}
constexpr bool zero(std::size_t count) {
  return count == 0;
}
constexpr bool below_limit(std::size_t count) {
  return count < kMaxListNesting;
}

// Only '(' and ')' delimit lists: egglog reads '[' and ']' as ordinary token characters.
struct within_nesting_limit : open_list_count_is<below_limit> {};
struct list_open : pegtl::seq<pegtl::one<'('>, pegtl::must<within_nesting_limit>> {};
struct list_close : pegtl::seq<open_list_count_is<nonzero>, pegtl::one<')'>> {};
struct element : pegtl::sor<list_open, list_close, string_literal, atom> {};

// Every character starts an element or a separator except a ')' with no list open, so that is
// the only thing that can stop the loop before the end; at the end, every list must be closed.
struct end_of_file : pegtl::eof {};
struct all_lists_closed : open_list_count_is<zero> {};
struct file : pegtl::seq<skip, pegtl::star<element, skip>, pegtl::must<end_of_file>,
                         pegtl::must<all_lists_closed>> {};

// egglog reads files as UTF-8 text, so a file that is not is rejected before reading. With this
// checked, the only failures left in `file` are the ones the comments above name.
struct utf8_char : pegtl::utf8::any {};
struct utf8_text : pegtl::until<pegtl::eof, pegtl::must<utf8_char>> {};

}  // namespace grammar

// ---------------------------------------------------------------------------------------------
// Error table: one message per commit point.
template <typename Rule>
inline constexpr const char* error_message = nullptr;
template <>
inline constexpr const char* error_message<grammar::all_lists_closed> = "unclosed '('";
template <>
inline constexpr const char* error_message<grammar::within_nesting_limit> =
    "lists nested more than 1000 levels deep";
template <>
inline constexpr const char* error_message<grammar::string_close> = "unterminated string";
template <>
inline constexpr const char* error_message<grammar::escape_code> =
    "invalid escape in string (egglog accepts \\\", \\\\, \\n and \\t)";
template <>
inline constexpr const char* error_message<grammar::end_of_file> = "unexpected ')'";
template <>
inline constexpr const char* error_message<grammar::utf8_char> = "invalid UTF-8 byte";

// What the reader has built so far. Lists under construction form an explicit stack, so
// building the tree never recurses.
struct OpenList {
  std::uint32_t begin = 0;
  std::vector<Sexp> items;
};

struct ReaderState {
  std::shared_ptr<const support::SourceFile> file;
  const char* text_begin = nullptr;
  std::vector<OpenList> open_lists;
  std::vector<Sexp> top_level;
  std::uint32_t string_begin = 0;
  std::string string_value;

  std::uint32_t offset_of(const char* position) const {
    return static_cast<std::uint32_t>(position - text_begin);
  }
  support::Span span(std::uint32_t begin, std::uint32_t end) const { return {file, begin, end}; }
  void add(Sexp node) {
    (open_lists.empty() ? top_level : open_lists.back().items).push_back(std::move(node));
  }
};

// The span an error points at: an unclosed list or string at where it opened, a too-deep list at
// its '(', a bad escape at its backslash, anything else at the character where reading stopped.
template <typename Rule, typename ParseInput>
support::Span error_span(const ParseInput& in, const ReaderState& state) {
  std::uint32_t here = state.offset_of(in.current());
  if constexpr (std::is_same_v<Rule, grammar::all_lists_closed>) {
    std::uint32_t open = state.open_lists.back().begin;
    return state.span(open, open + 1);
  } else if constexpr (std::is_same_v<Rule, grammar::within_nesting_limit>) {
    return state.span(here - 1, here);
  } else if constexpr (std::is_same_v<Rule, grammar::string_close>) {
    return state.span(state.string_begin, state.string_begin + 1);
  } else if constexpr (std::is_same_v<Rule, grammar::escape_code>) {
    // Under the caret: the backslash and the (possibly multi-byte) character after it.
    std::uint32_t length = 1;
    while (here + length < state.file->text().size() &&
           (static_cast<unsigned char>(state.file->text()[here + length]) & 0xC0) == 0x80) {
      ++length;
    }
    return state.span(here - 1, here + length);
  } else {
    return state.span(here, in.empty() ? here : here + 1);
  }
}

template <typename Rule>
struct ReaderControl : pegtl::normal<Rule> {
  template <typename ParseInput>
  [[noreturn]] static void raise(const ParseInput& in, ReaderState& state) {
    static_assert(error_message<Rule> != nullptr, "every commit point needs an error message");
    throw support::UserError(error_message<Rule>, error_span<Rule>(in, state));
  }
};

// ---------------------------------------------------------------------------------------------
// Token classification, following egglog: "true"/"false"; else an i64 as Rust's i64::from_str
// reads it; else NaN, inf, -inf; else a finite f64 as Rust's f64::from_str reads it (so 1e400,
// which overflows, stays a symbol); else a symbol.
namespace token {

struct sign : pegtl::one<'+', '-'> {};
struct digits : pegtl::plus<pegtl::digit> {};
struct integer : pegtl::seq<pegtl::opt<sign>, digits, pegtl::eof> {};
struct mantissa
    : pegtl::sor<pegtl::seq<digits, pegtl::opt<pegtl::one<'.'>, pegtl::star<pegtl::digit>>>,
                 pegtl::seq<pegtl::one<'.'>, digits>> {};
struct exponent : pegtl::seq<pegtl::one<'e', 'E'>, pegtl::opt<sign>, digits> {};
struct decimal : pegtl::seq<pegtl::opt<sign>, mantissa, pegtl::opt<exponent>, pegtl::eof> {};

template <typename Rule>
bool matches(std::string_view text) {
  pegtl::memory_input<pegtl::tracking_mode::lazy> in(text.data(), text.size(), "");
  return pegtl::parse<Rule>(in);
}

}  // namespace token

// from_chars takes no leading '+'; Rust's parsers do.
std::string_view without_plus(std::string_view text) {
  return !text.empty() && text.front() == '+' ? text.substr(1) : text;
}

bool parse_i64(std::string_view text, std::int64_t& value) {
  if (!token::matches<token::integer>(text)) return false;
  text = without_plus(text);
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

// For a decimal that from_chars found out of range: whether it is too large (an overflow, which
// Rust reads as inf) rather than too small (an underflow, which Rust reads as zero). Out-of-range
// values are above 1e308 or below 1e-323, so the decimal exponent of the leading nonzero digit
// settles it.
bool decimal_overflows(std::string_view text) {
  std::size_t exponent_at = text.find_first_of("eE");
  std::string_view mantissa = text.substr(0, exponent_at);
  std::size_t point = mantissa.find('.');
  if (point == std::string_view::npos) point = mantissa.size();
  std::size_t first_nonzero = mantissa.find_first_of("123456789");
  if (first_nonzero == std::string_view::npos) return false;  // zero is never out of range
  std::int64_t magnitude = first_nonzero < point
                               ? static_cast<std::int64_t>(point - first_nonzero) - 1
                               : -static_cast<std::int64_t>(first_nonzero - point);
  std::int64_t exponent = 0;
  if (exponent_at != std::string_view::npos) {
    std::string_view digits = text.substr(exponent_at + 1);
    bool negative = !digits.empty() && digits.front() == '-';
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+'))
      digits.remove_prefix(1);
    for (char digit : digits) {  // saturating: only the sign of the total matters
      exponent = std::min<std::int64_t>(exponent * 10 + (digit - '0'), 1'000'000'000);
    }
    if (negative) exponent = -exponent;
  }
  return magnitude + exponent > 0;
}

bool parse_finite_f64(std::string_view text, double& value) {
  if (!token::matches<token::decimal>(text)) return false;
  bool negative = text.front() == '-';
  std::string_view unsigned_text = text.substr(text.front() == '-' || text.front() == '+' ? 1 : 0);
  double magnitude = 0;
  auto [end, error] =
      std::from_chars(unsigned_text.data(), unsigned_text.data() + unsigned_text.size(), magnitude);
  if (end != unsigned_text.data() + unsigned_text.size()) return false;
  if (error == std::errc::result_out_of_range) {
    if (decimal_overflows(unsigned_text)) return false;
    magnitude = 0;
  } else if (error != std::errc()) {
    return false;
  }
  value = negative ? -magnitude : magnitude;
  return true;
}

Sexp classify_atom(std::string text, support::Span span) {
  Sexp node;
  node.span = std::move(span);
  if (text == "true" || text == "false") {
    node.kind = SexpKind::Bool;
    node.bool_value = text == "true";
  } else if (parse_i64(text, node.int_value)) {
    node.kind = SexpKind::Int;
  } else if (text == "NaN") {
    node.kind = SexpKind::Float;
    node.float_value = std::numeric_limits<double>::quiet_NaN();
  } else if (text == "inf" || text == "-inf") {
    node.kind = SexpKind::Float;
    node.float_value = (text == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity();
  } else if (parse_finite_f64(text, node.float_value)) {
    node.kind = SexpKind::Float;
  } else {
    node.kind = SexpKind::Symbol;
    node.text = std::move(text);
  }
  return node;
}

// ---------------------------------------------------------------------------------------------
// Actions: each copies what it needs out of the input.
template <typename Rule>
struct ReaderAction : pegtl::nothing<Rule> {};

template <>
struct ReaderAction<grammar::list_open> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    state.open_lists.push_back({state.offset_of(in.begin()), {}});
  }
};

template <>
struct ReaderAction<grammar::list_close> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    OpenList finished = std::move(state.open_lists.back());
    state.open_lists.pop_back();
    Sexp node;
    node.kind = SexpKind::List;
    node.span = state.span(finished.begin, state.offset_of(in.end()));
    node.items = std::move(finished.items);
    state.add(std::move(node));
  }
};

template <>
struct ReaderAction<grammar::atom> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    state.add(classify_atom(in.string(),
                            state.span(state.offset_of(in.begin()), state.offset_of(in.end()))));
  }
};

template <>
struct ReaderAction<grammar::string_open> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    state.string_begin = state.offset_of(in.begin());
    state.string_value.clear();
  }
};

template <>
struct ReaderAction<grammar::plain_chars> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    state.string_value.append(in.string_view());
  }
};

template <>
struct ReaderAction<grammar::escape_code> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    char code = in.peek_char();
    state.string_value += code == 'n' ? '\n' : code == 't' ? '\t' : code;
  }
};

template <>
struct ReaderAction<grammar::string_close> {
  template <typename ActionInput>
  static void apply(const ActionInput& in, ReaderState& state) {
    Sexp node;
    node.kind = SexpKind::String;
    node.span = state.span(state.string_begin, state.offset_of(in.end()));
    node.text = std::move(state.string_value);
    state.string_value.clear();
    state.add(std::move(node));
  }
};

// ---------------------------------------------------------------------------------------------
// Printing, as egglog prints literals.

// A decimal d.ddd × 10^exponent, as to_chars writes it in scientific form (digits without the
// point or a sign).
struct Decimal {
  std::string digits;
  int exponent = 0;
};

// With no precision, the shortest digits that read back to `magnitude`; with one, that many
// digits after the first.
Decimal to_decimal(double magnitude, int precision = -1) {
  char buffer[1024];
  char* buffer_end = buffer + sizeof buffer;
  auto result =
      precision < 0
          ? std::to_chars(buffer, buffer_end, magnitude, std::chars_format::scientific)
          : std::to_chars(buffer, buffer_end, magnitude, std::chars_format::scientific, precision);
  std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  std::size_t e = text.find('e');
  Decimal decimal;
  for (char c : text.substr(0, e)) {
    if (c != '.') decimal.digits += c;
  }
  std::string_view exponent = without_plus(text.substr(e + 1));
  std::from_chars(exponent.data(), exponent.data() + exponent.size(), decimal.exponent);
  return decimal;
}

// The shortest digits that read back to `magnitude`, as Rust picks them. When the value lies
// exactly halfway between two shortest candidates, to_chars takes the one ending in an even
// digit and Rust the upper one (2053637337633904.25 prints as ...904.3 in egglog).
Decimal shortest_decimal(double magnitude) {
  Decimal shortest = to_decimal(magnitude);
  std::size_t count = shortest.digits.size();
  if ((shortest.digits.back() - '0') % 2 != 0) return shortest;
  // A double's exact decimal expansion has at most 767 significant digits.
  Decimal exact = to_decimal(magnitude, 780);
  bool halfway_above = exact.exponent == shortest.exponent &&
                       exact.digits.compare(0, count, shortest.digits) == 0 &&
                       exact.digits[count] == '5' &&
                       exact.digits.find_first_not_of('0', count + 1) == std::string::npos;
  if (halfway_above) ++shortest.digits.back();  // an even digit, so nothing carries
  return shortest;
}

// Rust's Display for f64: the shortest digits, always written without an exponent
// ("100000000000000000000", "0.0000001", "-0"). egglog then appends ".0" when the result would
// read back as an i64, so floats stay floats.
std::string format_f64(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  Decimal decimal = shortest_decimal(std::fabs(value));
  const std::string& digits = decimal.digits;
  // The decimal point goes after `point` digits (before the first digit when point <= 0).
  int point = decimal.exponent + 1;
  int count = static_cast<int>(digits.size());
  std::string text = std::signbit(value) ? "-" : "";
  if (point <= 0) {
    text += "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
  } else if (point >= count) {
    text += digits + std::string(static_cast<std::size_t>(point - count), '0');
  } else {
    text += digits.substr(0, static_cast<std::size_t>(point)) + "." +
            digits.substr(static_cast<std::size_t>(point));
  }
  std::int64_t as_integer = 0;
  if (parse_i64(text, as_integer)) text += ".0";
  return text;
}

// egglog escapes only '"' and '\' when printing; newlines and tabs are printed raw, which its
// reader accepts inside a string.
std::string quote_string(const std::string& value) {
  std::string text = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') text += '\\';
    text += c;
  }
  return text + "\"";
}

void append_source_form(const Sexp& node, std::string& out) {
  switch (node.kind) {
    case SexpKind::List:
      out += '(';
      for (std::size_t i = 0; i < node.items.size(); ++i) {
        if (i > 0) out += ' ';
        append_source_form(node.items[i], out);
      }
      out += ')';
      return;
    case SexpKind::Symbol:
      out += node.text;
      return;
    case SexpKind::Int:
      out += std::to_string(node.int_value);
      return;
    case SexpKind::Float:
      out += format_f64(node.float_value);
      return;
    case SexpKind::Bool:
      out += node.bool_value ? "true" : "false";
      return;
    case SexpKind::String:
      out += quote_string(node.text);
      return;
  }
}

}  // namespace

std::string Sexp::to_string() const {
  std::string out;
  append_source_form(*this, out);
  return out;
}

std::vector<Sexp> read_sexps(const std::shared_ptr<const support::SourceFile>& file) {
  const std::string& text = file->text();
  // Spans hold 32-bit offsets.
  if (text.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw support::UserError("file is larger than 4 GiB", support::Span{file, 0, 0});
  }
  ReaderState state;
  state.file = file;
  state.text_begin = text.data();
  {
    pegtl::memory_input<pegtl::tracking_mode::lazy> in(text.data(), text.size(), file->name());
    pegtl::parse<grammar::utf8_text, pegtl::nothing, ReaderControl>(in, state);
  }
  pegtl::memory_input<pegtl::tracking_mode::lazy> in(text.data(), text.size(), file->name());
  pegtl::parse<grammar::file, ReaderAction, ReaderControl>(in, state);
  return std::move(state.top_level);
}

}  // namespace kiln::dsl
