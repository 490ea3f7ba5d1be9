// Reading back the text of a View (`View(shape=[...], strides=[...], offset=..., mask=[...])`)
// and of a shape (`[seq, 64]`): the forms to_string prints, so printed views round-trip.
// Expressions inside are read by parse_expr; errors point into the whole text.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/view.hpp"
#include "support/diagnostic.hpp"
#include "support/source_file.hpp"

namespace kiln::graph {

namespace {

using support::Span;
using support::UserError;

class ViewReader {
 public:
  ViewReader(std::string_view text, std::string_view source_name)
      : file_(std::make_shared<support::SourceFile>(std::string(source_name), std::string(text))),
        text_(file_->text()) {}

  View view() {
    expect("View(");
    expect("shape=");
    std::vector<Expr> shape = list();
    expect(",");
    expect("strides=");
    std::size_t strides_at = pos_;
    std::vector<Expr> strides = list();
    if (strides.size() != shape.size()) {
      fail("expected " + std::to_string(shape.size()) + " strides, one per dim, found " +
               std::to_string(strides.size()),
           strides_at, pos_);
    }
    expect(",");
    expect("offset=");
    Expr offset = expr();
    std::optional<std::vector<ValidRange>> mask;
    if (accept(",")) {
      expect("mask=");
      std::size_t mask_at = pos_;
      mask = ranges();
      if (mask->size() != shape.size()) {
        fail("expected " + std::to_string(shape.size()) + " mask ranges, one per dim, found " +
                 std::to_string(mask->size()),
             mask_at, pos_);
      }
    }
    expect(")");
    end();
    try {
      return View::from_parts(std::move(shape), std::move(strides), std::move(offset),
                              std::move(mask));
    } catch (const UserError& e) {
      support::rethrow_with_span(e, span(0, text_.size()));
    }
  }

  std::vector<Expr> shape() {
    std::vector<Expr> out = list();
    end();
    return out;
  }

 private:
  std::shared_ptr<support::SourceFile> file_;
  const std::string& text_;
  std::size_t pos_ = 0;

  Span span(std::size_t begin, std::size_t end) const {
    return {file_, static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
  }
  [[noreturn]] void fail(const std::string& message, std::size_t begin, std::size_t end) const {
    throw UserError(message, span(begin, end));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  std::string next() const {
    return pos_ < text_.size() ? "'" + std::string(1, text_[pos_]) + "'" : "the end of the input";
  }
  bool accept(std::string_view token) {
    skip_space();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) {
      fail("expected '" + std::string(token) + "', found " + next(), pos_, pos_ + 1);
    }
  }
  void end() {
    skip_space();
    if (pos_ < text_.size()) fail("unexpected " + next() + " after the view", pos_, pos_ + 1);
  }

  // An expression: the text up to the next ',', ']' or ')' outside parentheses.
  Expr expr() {
    skip_space();
    std::size_t begin = pos_;
    int depth = 0;
    for (; pos_ < text_.size(); ++pos_) {
      char c = text_[pos_];
      if (c == '(') ++depth;
      if (depth == 0 && (c == ',' || c == ']' || c == ')')) break;
      if (c == ')') --depth;
    }
    std::string_view piece(text_.data() + begin, pos_ - begin);
    try {
      return parse_expr(piece, file_->name());
    } catch (const UserError& e) {
      // Re-point the error from the piece into the whole text.
      std::uint32_t shift = static_cast<std::uint32_t>(begin);
      Span at = e.span().known() ? span(e.span().begin + shift, e.span().end + shift)
                                 : span(begin, pos_);
      throw UserError(e.message(), at);
    }
  }

  std::vector<Expr> list() {
    expect("[");
    std::vector<Expr> out;
    if (accept("]")) return out;
    do {
      out.push_back(expr());
    } while (accept(","));
    expect("]");
    return out;
  }

  std::vector<ValidRange> ranges() {
    expect("[");
    std::vector<ValidRange> out;
    if (accept("]")) return out;
    do {
      expect("[");
      Expr lo = expr();
      expect(",");
      Expr hi = expr();
      expect(")");
      out.push_back({std::move(lo), std::move(hi)});
    } while (accept(","));
    expect("]");
    return out;
  }
};

}  // namespace

View parse_view(std::string_view text, std::string_view source_name) {
  return ViewReader(text, source_name).view();
}

std::vector<Expr> parse_shape(std::string_view text, std::string_view source_name) {
  return ViewReader(text, source_name).shape();
}

}  // namespace kiln::graph
