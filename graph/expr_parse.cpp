// Parsing the infix form of an Expr: a small recursive-descent reader whose errors point at
// the offending text.
//
//   expression := sum [ ('<' | '<=' | '==' | '>' | '>=') sum ]      comparisons do not chain
//   sum        := product { ('+' | '-') product }
//   product    := unary { ('*' | '/' | '%') unary }                  '/' and '%' floor
//   unary      := '-' unary | primary
//   primary    := integer | dim | call | '(' expression ')'
//   call       := ('min' | 'max') '(' expression { ',' expression } ')'   (two or more)
//               | ('floor_div' | 'ceil_div' | 'mod') '(' expression ',' expression ')'
#include <memory>
#include <string>

#include "graph/expr.hpp"
#include "support/diagnostic.hpp"
#include "support/source_file.hpp"

namespace kiln::graph {

namespace {

using support::Span;
using support::UserError;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// Deeper or longer input is rejected with a message: the reader recurses once per level, and so
// do the simplifier and printer on what it builds; and each operator re-simplifies what came
// before it, so n operators cost O(n^2) (4000 distinct dims summed take seconds). Shape
// arithmetic is never this deep or this long.
constexpr int kMaxNesting = 200;
constexpr int kMaxOperators = 1000;

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name)
      : file_(std::make_shared<support::SourceFile>(std::string(source_name), std::string(text))),
        text_(file_->text()) {}

  Expr parse() {
    Expr e = expression();
    skip_space();
    if (!at_end()) fail("unexpected '" + std::string(1, text_[pos_]) + "' after the expression", pos_, pos_ + 1);
    return e;
  }

 private:
  std::shared_ptr<support::SourceFile> file_;
  const std::string& text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  int operators_ = 0;

  // Counts one binary operator or call argument, at the text that adds it.
  void count_operator(std::size_t at) {
    if (++operators_ > kMaxOperators) {
      fail("expression has more than " + std::to_string(kMaxOperators) + " operators", at, at + 1);
    }
  }

  // Counts one level of recursion (parentheses, a call, a unary minus) while alive; too many is
  // an error at the text that opens the level.
  class Nested {
   public:
    explicit Nested(Parser& parser) : parser_(parser) {
      if (++parser_.depth_ > kMaxNesting) {
        parser_.fail("expression nested more than " + std::to_string(kMaxNesting) + " levels deep",
                     parser_.pos_, parser_.pos_ + 1);
      }
    }
    ~Nested() { --parser_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Parser& parser_;
  };

  [[noreturn]] void fail(const std::string& message, std::size_t begin, std::size_t end) const {
    throw UserError(message, span(begin, end));
  }

  Span span(std::size_t begin, std::size_t end) const {
    return {file_, static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
  }

  // Runs an operator; its errors (division by zero, overflow) point at the operator's text.
  template <class F>
  Expr at(std::size_t begin, std::size_t end, F&& build) const {
    try {
      return build();
    } catch (const UserError& error) {
      support::rethrow_with_span(error, span(begin, end));
    }
  }

  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                         text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  // Consumes `token` (after spaces) if it comes next.
  bool accept(std::string_view token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }

  std::string describe_next() const {
    if (at_end()) return "the end of the input";
    return "'" + std::string(1, text_[pos_]) + "'";
  }

  void expect(char c, const std::string& what) {
    skip_space();
    if (at_end() || text_[pos_] != c) {
      fail("expected " + what + ", found " + describe_next(), pos_, pos_ + 1);
    }
    ++pos_;
  }

  // The comparison operator that comes next (after spaces), without consuming it.
  std::string_view peek_comparison() {
    skip_space();
    for (std::string_view op : {"<=", ">=", "==", "<", ">"}) {
      if (text_.compare(pos_, op.size(), op) == 0) return op;
    }
    if (!at_end() && text_[pos_] == '=') fail("expected '==' to compare, found '='", pos_, pos_ + 1);
    return {};
  }

  Expr expression() {
    Expr left = sum();
    std::string_view op = peek_comparison();
    if (op.empty()) return left;
    std::size_t op_begin = pos_;
    pos_ += op.size();
    Expr right = sum();
    if (std::string_view again = peek_comparison(); !again.empty()) {
      fail("comparisons do not chain; add parentheses", pos_, pos_ + again.size());
    }
    return at(op_begin, op_begin + op.size(), [&] {
      if (op == "<") return lt(left, right);
      if (op == "<=") return le(left, right);
      if (op == "==") return eq(left, right);
      if (op == ">") return lt(right, left);
      return le(right, left);
    });
  }

  Expr sum() {
    Expr acc = product();
    for (;;) {
      skip_space();
      if (at_end() || (text_[pos_] != '+' && text_[pos_] != '-')) return acc;
      char op = text_[pos_];
      count_operator(pos_);
      std::size_t op_begin = pos_++;
      Expr right = product();
      acc = at(op_begin, op_begin + 1, [&] { return op == '+' ? acc + right : acc - right; });
    }
  }

  Expr product() {
    Expr acc = unary();
    for (;;) {
      skip_space();
      if (at_end() || (text_[pos_] != '*' && text_[pos_] != '/' && text_[pos_] != '%')) return acc;
      char op = text_[pos_];
      count_operator(pos_);
      std::size_t op_begin = pos_++;
      Expr right = unary();
      acc = at(op_begin, op_begin + 1, [&] {
        return op == '*' ? acc * right : op == '/' ? floor_div(acc, right) : mod(acc, right);
      });
    }
  }

  Expr unary() {
    skip_space();
    if (at_end() || text_[pos_] != '-') return primary();
    Nested level(*this);
    std::size_t op_begin = pos_++;
    skip_space();
    if (!at_end() && is_digit(text_[pos_])) return integer(true);  // so that INT64_MIN reads
    Expr operand = unary();
    return at(op_begin, op_begin + 1, [&] { return -operand; });
  }

  Expr primary() {
    skip_space();
    if (at_end()) fail("expected an expression, found the end of the input", pos_, pos_);
    char c = text_[pos_];
    if (is_digit(c)) return integer(false);
    if (c == '(') {
      Nested level(*this);
      ++pos_;
      Expr inner = expression();
      expect(')', "')'");
      return inner;
    }
    if (is_ident_start(c)) return name();
    fail("expected an expression, found '" + std::string(1, c) + "'", pos_, pos_ + 1);
  }

  Expr integer(bool negative) {
    std::size_t begin = pos_;
    std::uint64_t magnitude = 0;
    // The largest magnitude: 2^63 for a negative literal, 2^63 - 1 otherwise.
    const std::uint64_t limit = static_cast<std::uint64_t>(Interval::kPosInf) + (negative ? 1 : 0);
    bool too_big = false;
    while (!at_end() && is_digit(text_[pos_])) {
      std::uint64_t digit = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (magnitude > (limit - digit) / 10) too_big = true;
      if (!too_big) magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    if (too_big) fail("integer literal out of the 64-bit range", begin, pos_);
    if (!at_end() && is_ident_char(text_[pos_])) {
      fail("unexpected '" + std::string(1, text_[pos_]) + "' in a number", pos_, pos_ + 1);
    }
    if (!negative) return static_cast<std::int64_t>(magnitude);
    return static_cast<std::int64_t>(0 - magnitude);  // two's complement: 2^63 -> INT64_MIN
  }

  Expr name() {
    std::size_t begin = pos_;
    while (!at_end() && is_ident_char(text_[pos_])) ++pos_;
    std::string id = text_.substr(begin, pos_ - begin);
    std::size_t end = pos_;
    skip_space();
    if (at_end() || text_[pos_] != '(') {
      pos_ = end;
      return Expr::dim(id);
    }
    bool variadic = id == "min" || id == "max";
    if (!variadic && id != "floor_div" && id != "ceil_div" && id != "mod") {
      fail("unknown function '" + id + "' (expected min, max, floor_div, ceil_div or mod)", begin, end);
    }
    Nested level(*this);
    ++pos_;
    std::vector<Expr> args{expression()};
    while (accept(",")) {
      count_operator(pos_ - 1);
      args.push_back(expression());
    }
    expect(')', "',' or ')'");
    if (variadic && args.size() < 2) fail(id + " takes two or more arguments", begin, end);
    if (!variadic && args.size() != 2) fail(id + " takes two arguments", begin, end);
    return at(begin, end, [&] {
      if (id == "min" || id == "max") {
        Expr acc = args[0];
        for (std::size_t i = 1; i < args.size(); ++i) acc = id == "min" ? min(acc, args[i]) : max(acc, args[i]);
        return acc;
      }
      if (id == "floor_div") return floor_div(args[0], args[1]);
      if (id == "ceil_div") return ceil_div(args[0], args[1]);
      return mod(args[0], args[1]);
    });
  }
};

}  // namespace

Expr parse_expr(std::string_view text, std::string_view source_name) {
  return Parser(text, source_name).parse();
}

}  // namespace kiln::graph
