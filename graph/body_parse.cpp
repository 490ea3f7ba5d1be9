// Reading back the text form of a Body (to_text): what the compiler's program cache stores.
// The form is line-based, one header, monoid, node, loop or store per line; operands are `%N`
// in the text's own numbering, which is the order the nodes are rebuilt in, so the rebuilt
// Body prints exactly the text it was read from (checked: anything else is an error, so a text
// that parses but means something else never becomes a Body).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/body_parse.hpp"
#include "support/diagnostic.hpp"
#include "support/source_file.hpp"

namespace kiln::graph {

namespace {

using support::Span;
using support::UserError;

class BodyReader {
 public:
  BodyReader(std::string_view text, std::string_view source_name)
      : file_(std::make_shared<support::SourceFile>(std::string(source_name), std::string(text))),
        text_(file_->text()) {}

  Body body() {
    header();
    std::vector<Monoid> monoids;
    while (starts_with("m")) monoids.push_back(monoid());
    // Monoids name nodes that come later; they are added first (a Reduce needs its monoid) and
    // their node ids checked once every node exists.
    for (const Monoid& m : monoids) builder_->add_monoid(m);
    std::size_t nodes = 0;
    while (starts_with("%")) {
      scalar(nodes);
      ++nodes;
    }
    for (std::size_t k = 0; k < monoids.size(); ++k) {
      const Monoid& m = monoids[k];
      std::vector<ScalarId> ids = m.lift;
      ids.insert(ids.end(), m.combine.begin(), m.combine.end());
      ids.push_back(m.finalize);
      for (ScalarId id : ids) {
        if (id >= nodes) fail_at_line(monoid_lines_[k], "monoid m" + std::to_string(k) +
                                                            " names an unknown node %" +
                                                            std::to_string(id));
      }
    }
    while (starts_with("loop")) loop();
    Body out = store(nodes);
    skip_blank_lines();
    if (pos_ < text_.size()) fail_here("unexpected text after the store");
    if (to_text(out) != text_) {
      throw UserError("body text does not read back as itself (a node, monoid or loop differs "
                      "from what kiln prints)",
                      span(0, text_.size()));
    }
    return out;
  }

 private:
  std::shared_ptr<support::SourceFile> file_;
  const std::string& text_;
  std::size_t pos_ = 0;          // start of the current line
  std::size_t line_end_ = 0;     // end of the current line (its '\n' or the text's end)
  std::unique_ptr<BodyBuilder> builder_;
  std::vector<std::size_t> monoid_lines_;     // where each monoid's line starts
  std::vector<std::size_t> monoid_elements_;  // each monoid's element count
  std::size_t inputs_count_ = 0;

  Span span(std::size_t begin, std::size_t end) const {
    return {file_, static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
  }
  [[noreturn]] void fail_at_line(std::size_t line_start, const std::string& message) const {
    std::size_t end = text_.find('\n', line_start);
    throw UserError(message, span(line_start, end == std::string::npos ? text_.size() : end));
  }
  [[noreturn]] void fail_here(const std::string& message) const { fail_at_line(pos_, message); }

  void skip_blank_lines() {
    while (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
  }
  // The current line without its two-space indent, or "" at the end.
  std::string_view line() {
    line_end_ = text_.find('\n', pos_);
    if (line_end_ == std::string::npos) line_end_ = text_.size();
    std::string_view l(text_.data() + pos_, line_end_ - pos_);
    if (l.substr(0, 2) == "  ") l.remove_prefix(2);
    return l;
  }
  bool starts_with(std::string_view word) {
    return pos_ < text_.size() && line().substr(0, word.size()) == word;
  }
  void next_line() { pos_ = line_end_ < text_.size() ? line_end_ + 1 : line_end_; }

  // Splits off the text before `separator` (the first one); fails when it is missing.
  std::string_view before(std::string_view& rest, std::string_view separator) const {
    std::size_t at = rest.find(separator);
    if (at == std::string_view::npos) fail_here("expected '" + std::string(separator) + "'");
    std::string_view head = rest.substr(0, at);
    rest.remove_prefix(at + separator.size());
    return head;
  }
  std::string_view word(std::string_view& rest) const {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::size_t at = rest.find(' ');
    std::string_view w = rest.substr(0, at);
    rest.remove_prefix(at == std::string_view::npos ? rest.size() : at + 1);
    if (w.empty()) fail_here("expected a word, found the end of the line");
    return w;
  }
  Expr expr(std::string_view text) const {
    try {
      return parse_expr(text, file_->name());
    } catch (const UserError& e) {
      fail_here("bad expression '" + std::string(text) + "': " + e.message());
    }
  }
  DType dtype(std::string_view name) const {
    std::optional<DType> t = parse_dtype(name);
    if (!t) fail_here("unknown dtype '" + std::string(name) + "'");
    return *t;
  }
  std::size_t number(std::string_view text, std::string_view prefix = "") const {
    if (text.substr(0, prefix.size()) != prefix || text.size() == prefix.size() ||
        text.size() - prefix.size() > 9) {
      fail_here("expected " + std::string(prefix) + "N, found '" + std::string(text) + "'");
    }
    std::size_t value = 0;
    for (char c : text.substr(prefix.size())) {
      if (c < '0' || c > '9') {
        fail_here("expected " + std::string(prefix) + "N, found '" + std::string(text) + "'");
      }
      value = value * 10 + static_cast<std::size_t>(c - '0');
    }
    return value;
  }
  double real(std::string_view text) const {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) fail_here("expected a number, found '" + s + "'");
    return v;
  }
  // An operand `%N` of a node defined on an earlier line.
  ScalarId operand(std::string_view text, std::size_t defined) const {
    const std::size_t id = number(text, "%");
    if (id >= defined) fail_here("%" + std::to_string(id) + " is used before it is defined");
    return static_cast<ScalarId>(id);
  }
  std::vector<ScalarId> ids(std::string_view list) const {
    std::vector<ScalarId> out;
    while (!list.empty()) {
      std::string_view w = word(list);
      out.push_back(static_cast<ScalarId>(number(w, "%")));
    }
    return out;
  }

  // body f32 (in0 f32, in1 u8)
  void header() {
    std::string_view rest = line();
    if (rest.substr(0, 5) != "body ") fail_here("expected 'body'");
    word(rest);
    const std::string_view out_dtype = word(rest);
    dtype(out_dtype);  // checked; the value's own dtype decides, and the round trip compares
    if (rest.empty() || rest.front() != '(' || rest.back() != ')') {
      fail_here("expected the inputs in parentheses");
    }
    rest = rest.substr(1, rest.size() - 2);
    std::vector<DType> inputs;
    while (!rest.empty()) {
      std::string_view item = rest.substr(0, rest.find(", "));
      rest.remove_prefix(std::min(rest.size(), item.size() + 2));
      if (number(word(item), "in") != inputs.size()) fail_here("inputs must be in0, in1, ...");
      inputs.push_back(dtype(word(item)));
    }
    inputs_count_ = inputs.size();
    builder_ = std::make_unique<BodyBuilder>(std::move(inputs));
    next_line();
  }

  // m0 sum 1: identity 0; lift %0; combine %2; finalize %0
  Monoid monoid() {
    monoid_lines_.push_back(pos_);
    std::string_view rest = line();
    Monoid m;
    if (number(word(rest), "m") != monoid_lines_.size() - 1) fail_here("monoids must be m0, m1, ...");
    m.name = std::string(word(rest));
    std::string_view count = before(rest, ": identity");
    m.elements = number(count);
    monoid_elements_.push_back(m.elements);
    std::string_view identity = before(rest, "; lift");
    while (!identity.empty()) m.identity.push_back(real(word(identity)));
    m.lift = ids(before(rest, "; combine"));
    m.combine = ids(before(rest, "; finalize"));
    std::vector<ScalarId> finalize = ids(rest);
    if (finalize.size() != 1) fail_here("expected one finalize node");
    m.finalize = finalize[0];
    next_line();
    return m;
  }

  // %N = op dtype ...
  void scalar(std::size_t defined) {
    std::string_view rest = line();
    if (number(word(rest), "%") != defined) fail_here("nodes must be numbered %0, %1, ... in order");
    if (word(rest) != "=") fail_here("expected '='");
    const std::string_view op = word(rest);
    const DType type = dtype(word(rest));
    auto args = [&](std::size_t n) {
      std::vector<ScalarId> out;
      for (std::size_t k = 0; k < n; ++k) out.push_back(operand(word(rest), defined));
      if (!rest.empty()) fail_here("too many operands for " + std::string(op));
      return out;
    };
    ScalarId id = 0;
    if (op == "const") {
      id = builder_->constant(real(rest), type);
    } else if (op == "param") {
      id = builder_->param(number(rest), type);
    } else if (op == "index") {
      id = builder_->index(expr(rest), type);
    } else if (op == "load") {
      id = load(rest, defined);
    } else if (op == "cast") {
      id = builder_->cast(args(1)[0], type);
    } else if (op == "lt") {
      std::vector<ScalarId> a = args(2);
      id = builder_->less_than(a[0], a[1], type);
    } else if (op == "select") {
      std::vector<ScalarId> a = args(3);
      id = builder_->select(a[0], a[1], a[2]);
    } else if (op == "reduce") {
      id = reduce(rest, type, defined);
    } else if (const std::optional<ScalarOp> unary = unary_op(op)) {
      id = builder_->unary(*unary, args(1)[0]);
    } else if (const std::optional<ScalarOp> binary = binary_op(op)) {
      std::vector<ScalarId> a = args(2);
      id = builder_->binary(*binary, a[0], a[1]);
    } else {
      fail_here("unknown op '" + std::string(op) + "'");
    }
    if (id != defined) fail_here("node %" + std::to_string(defined) + " repeats an earlier node");
    next_line();
  }
  static std::optional<ScalarOp> unary_op(std::string_view op) {
    for (ScalarOp o : {ScalarOp::Exp2, ScalarOp::Log2, ScalarOp::Sin, ScalarOp::Recip,
                       ScalarOp::Sqrt}) {
      if (op == scalar_op_name(o)) return o;
    }
    return std::nullopt;
  }
  static std::optional<ScalarOp> binary_op(std::string_view op) {
    for (ScalarOp o : {ScalarOp::Add, ScalarOp::Mul, ScalarOp::Mod, ScalarOp::Max, ScalarOp::Min}) {
      if (op == scalar_op_name(o)) return o;
    }
    return std::nullopt;
  }

  // in0[index] / in0[index + %R * stride (rows count)], then ` if valid`
  ScalarId load(std::string_view rest, std::size_t defined) {
    const std::size_t input = number(before(rest, "["), "in");
    if (input >= inputs_count_) fail_here("load of unknown input in" + std::to_string(input));
    std::string_view inside = before(rest, "]");
    Expr valid(1);
    if (!rest.empty()) {
      if (rest.substr(0, 4) != " if ") fail_here("expected ' if ' after the load");
      valid = expr(rest.substr(4));
    }
    const std::size_t row_at = inside.find(" + %");
    if (row_at == std::string_view::npos) return builder_->load(input, expr(inside), valid);
    const DynamicRow r = dynamic_row(inside, row_at, defined);
    return builder_->load_row(input, r.index, r.row, r.stride, r.count, valid);
  }
  // A position with a dynamic row, `index + %row * stride (rows count)`, split at `row_at`.
  struct DynamicRow {
    Expr index;
    ScalarId row = 0;
    Expr stride;
    Expr count;
  };
  DynamicRow dynamic_row(std::string_view inside, std::size_t row_at, std::size_t defined) {
    DynamicRow r;
    r.index = expr(inside.substr(0, row_at));
    inside.remove_prefix(row_at + 3);
    r.row = operand(before(inside, " * "), defined);
    r.stride = expr(before(inside, " (rows "));
    if (inside.empty() || inside.back() != ')') fail_here("expected ')' after the row count");
    r.count = expr(inside.substr(0, inside.size() - 1));
    return r;
  }
  // m0 r0 < extent %a %b ... (as many operands as the monoid has elements)
  ScalarId reduce(std::string_view rest, DType type, std::size_t defined) {
    const std::size_t monoid = number(word(rest), "m");
    if (monoid >= monoid_lines_.size()) fail_here("reduce with unknown monoid m" + std::to_string(monoid));
    const std::string var(word(rest));
    if (word(rest) != "<") fail_here("expected '<' after the reduce variable");
    std::vector<ScalarId> elements;
    // The operands are the last words; the extent is everything before them.
    std::size_t end = rest.size();
    const std::size_t wanted = monoid_elements_.at(monoid);
    for (std::size_t k = 0; k < wanted; ++k) {
      const std::size_t space = end == 0 ? std::string_view::npos : rest.rfind(' ', end - 1);
      if (space == std::string_view::npos) fail_here("too few reduce operands");
      elements.insert(elements.begin(), operand(rest.substr(space + 1, end - space - 1), defined));
      end = space;
    }
    return builder_->reduce(monoid, var, expr(rest.substr(0, end)), std::move(elements), type);
  }
  // loop o0 < extent [serial]
  void loop() {
    std::string_view rest = line();
    word(rest);
    const std::string var(word(rest));
    if (word(rest) != "<") fail_here("expected '<' after the loop variable");
    bool parallel = true;
    if (rest.size() >= 7 && rest.substr(rest.size() - 7) == " serial") {
      parallel = false;
      rest.remove_suffix(7);
    }
    const Expr made = builder_->output_loop(expr(rest), parallel);
    if (to_string(made) != var) fail_here("loops must be o0, o1, ... outermost first");
    next_line();
  }

  // store [index] of size = %V / store [index + %R * stride (rows count)] of size over inK = %V,
  // with ` if guard` after the `]` when the Body has a guard
  Body store(std::size_t defined) {
    if (!starts_with("store [")) fail_here("expected the store");
    std::string_view rest = line().substr(7);
    std::string_view inside = before(rest, "]");
    if (rest.substr(0, 4) == " if ") {
      rest.remove_prefix(4);
      builder_->set_guard(expr(before(rest, " of ")));
    } else if (rest.substr(0, 4) == " of ") {
      rest.remove_prefix(4);
    } else {
      fail_here("expected ' of ' or ' if ' after the store's index");
    }
    const std::size_t value_at = rest.rfind(" = ");
    if (value_at == std::string_view::npos) fail_here("expected ' = %N' at the end of the store");
    const ScalarId value = operand(rest.substr(value_at + 3), defined);
    rest = rest.substr(0, value_at);
    std::optional<std::size_t> aliases;
    if (const std::size_t over = rest.find(" over in"); over != std::string_view::npos) {
      aliases = number(rest.substr(over + 6), "in");
      if (*aliases >= inputs_count_) fail_here("the store aliases an unknown input");
      rest = rest.substr(0, over);
    }
    const Expr size = expr(rest);
    const std::size_t row_at = inside.find(" + %");
    Body out;
    if (row_at == std::string_view::npos) {
      if (aliases) fail_here("only a store with a dynamic row aliases an input");
      out = builder_->finish(value, size, expr(inside));
    } else {
      if (!aliases) fail_here("a store with a dynamic row must alias an input");
      const DynamicRow r = dynamic_row(inside, row_at, defined);
      out = builder_->finish_rows(value, size, r.index, r.row, r.stride, r.count, *aliases);
    }
    next_line();
    return out;
  }
};

}  // namespace

Body parse_body(std::string_view text, std::string_view source_name) {
  return BodyReader(text, source_name).body();
}

}  // namespace kiln::graph
