// A group program as text and back; see group_program_text.hpp.
#include "compiler/group_program_text.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <utility>

#include "graph/body_parse.hpp"
#include "graph/view.hpp"
#include "support/diagnostic.hpp"
#include "support/quoted.hpp"
#include "support/source_file.hpp"

namespace kiln::compiler {

namespace {

using support::quoted;
using support::Span;
using support::UserError;

std::string number_text(double v) {
  char buffer[40];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

std::string ref_text(const Ref& r) {
  return (r.kind == Ref::Kind::Input ? "i" : "s") + std::to_string(r.index);
}

std::string shape_text(const std::vector<graph::Expr>& shape) {
  std::string out = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) out += (k ? ", " : "") + graph::to_string(shape[k]);
  return out + "]";
}

std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

// Reads the text line by line; every error names the line it is on.
class ProgramReader {
 public:
  ProgramReader(std::string_view text, std::string_view source_name)
      : file_(std::make_shared<support::SourceFile>(std::string(source_name), std::string(text))),
        text_(file_->text()) {}

  GroupProgram program() {
    GroupProgram p;
    std::string_view rest = field("steps");
    const std::size_t steps = count(rest);
    for (std::size_t k = 0; k < steps; ++k) p.steps.push_back(step(k));
    rest = field("outputs");
    const std::size_t outputs = count(rest);
    for (std::size_t k = 0; k < outputs; ++k) {
      rest = field("output");
      const std::size_t node = count(word(rest));
      const Ref value = ref(word(rest), steps);
      end_of_line(rest);
      if (!p.outputs.emplace(node, value).second) fail("output " + std::to_string(node) + " twice");
    }
    p.report = report();
    if (pos_ != text_.size()) fail("unexpected text after the report");
    if (to_text(p) != text_) {
      throw UserError("group program text does not read back as itself", span(0, text_.size()));
    }
    return p;
  }

 private:
  std::shared_ptr<support::SourceFile> file_;
  const std::string& text_;
  std::size_t pos_ = 0;   // start of the next line
  std::size_t line_ = 0;  // start of the line being read

  Span span(std::size_t begin, std::size_t end) const {
    return {file_, static_cast<std::uint32_t>(begin), static_cast<std::uint32_t>(end)};
  }
  [[noreturn]] void fail(const std::string& message) const {
    std::size_t end = text_.find('\n', line_);
    throw UserError(message, span(line_, end == std::string::npos ? text_.size() : end));
  }

  // The next line (without indent or newline); fails at the end of the text.
  std::string_view next_line() {
    line_ = pos_;
    if (pos_ >= text_.size()) fail("unexpected end of the text");
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) fail("the last line has no newline");
    std::string_view l(text_.data() + pos_, end - pos_);
    pos_ = end + 1;
    while (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    return l;
  }
  // The next line, which must start with `key`; returns what follows it.
  std::string_view field(std::string_view key) {
    std::string_view l = next_line();
    if (l.substr(0, key.size()) != key || (l.size() > key.size() && l[key.size()] != ' ')) {
      fail("expected '" + std::string(key) + "'");
    }
    l.remove_prefix(key.size());
    if (!l.empty()) l.remove_prefix(1);
    return l;
  }
  std::string_view word(std::string_view& rest) const {
    std::size_t at = rest.find(' ');
    std::string_view w = rest.substr(0, at);
    rest.remove_prefix(at == std::string_view::npos ? rest.size() : at + 1);
    if (w.empty()) fail("expected a value");
    return w;
  }
  void end_of_line(std::string_view rest) const {
    if (!rest.empty()) fail("unexpected '" + std::string(rest) + "'");
  }
  std::size_t count(std::string_view text) const {
    if (text.empty() || text.size() > 9) fail("expected a count, found '" + std::string(text) + "'");
    std::size_t v = 0;
    for (char c : text) {
      if (c < '0' || c > '9') fail("expected a count, found '" + std::string(text) + "'");
      v = v * 10 + static_cast<std::size_t>(c - '0');
    }
    return v;
  }
  bool flag(std::string_view text) const {
    if (text != "0" && text != "1") fail("expected 0 or 1");
    return text == "1";
  }
  double real(std::string_view text) const {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) fail("expected a number, found '" + s + "'");
    return v;
  }
  Ref ref(std::string_view text, std::size_t steps_before) const {
    if (text.empty() || (text[0] != 'i' && text[0] != 's')) fail("expected iN or sN");
    Ref r{text[0] == 'i' ? Ref::Kind::Input : Ref::Kind::Step, count(text.substr(1))};
    if (r.kind == Ref::Kind::Step && r.index >= steps_before) {
      fail("s" + std::to_string(r.index) + " is read before it is computed");
    }
    return r;
  }
  // A double-quoted string at the start of `rest`, removed from it (with one space after it).
  std::string string(std::string_view& rest) const {
    if (rest.empty() || rest[0] != '"') fail("expected a quoted string");
    std::string out;
    std::size_t k = 1;
    for (;; ++k) {
      if (k >= rest.size()) fail("unterminated string");
      const char c = rest[k];
      if (c == '"') break;
      if (c == '\\') {
        if (++k >= rest.size()) fail("unterminated string");
        const char e = rest[k];
        if (e != '"' && e != '\\' && e != 'n') fail("unknown escape '\\" + std::string(1, e) + "'");
        out += e == 'n' ? '\n' : e;
        continue;
      }
      out += c;
    }
    rest.remove_prefix(k + 1);
    if (!rest.empty()) {
      if (rest[0] != ' ') fail("expected a space after the string");
      rest.remove_prefix(1);
    }
    return out;
  }
  graph::DType dtype(std::string_view name) const {
    std::optional<graph::DType> t = graph::parse_dtype(name);
    if (!t) fail("unknown dtype '" + std::string(name) + "'");
    return *t;
  }
  graph::Expr expr(std::string_view text) const {
    try {
      return graph::parse_expr(text, file_->name());
    } catch (const UserError& e) {
      fail("bad expression '" + std::string(text) + "': " + e.message());
    }
  }

  GroupStep step(std::size_t index) {
    end_of_line(field("step"));
    GroupStep s;
    std::string_view rest = field("how");
    s.how = string(rest);
    end_of_line(rest);
    rest = field("dtype");
    s.dtype = dtype(word(rest));
    end_of_line(rest);
    rest = field("shape");
    try {
      s.shape = graph::parse_shape(rest, file_->name());
    } catch (const UserError& e) {
      fail("bad shape: " + e.message());
    }
    rest = field("node");
    if (rest == "none") {
      rest = {};
    } else {
      s.node = count(word(rest));
    }
    end_of_line(rest);
    s.in_place = flag(field("in_place"));
    s.measured = flag(field("measured"));
    s.seconds = real(field("seconds"));
    rest = field("inputs");
    while (!rest.empty()) s.inputs.push_back(ref(word(rest), index));
    rest = field("rules");
    while (!rest.empty()) s.rules.push_back(string(rest));
    rest = next_line();
    if (rest.substr(0, 5) == "body ") {
      rest.remove_prefix(5);
      const std::size_t lines = count(rest);
      const std::size_t begin = pos_;
      for (std::size_t k = 0; k < lines; ++k) next_line();
      graph::Body body;
      try {
        body = graph::parse_body(std::string_view(text_).substr(begin, pos_ - begin),
                                 file_->name());
      } catch (const UserError& e) {
        line_ = begin;
        fail("bad body of step " + std::to_string(index) + ": " + e.what());
      }
      if (body.inputs().size() != s.inputs.size()) {
        line_ = begin;
        fail("the body of step " + std::to_string(index) + " reads " +
             std::to_string(body.inputs().size()) + " inputs, the step gives " +
             std::to_string(s.inputs.size()));
      }
      s.op = std::move(body);
    } else if (rest.substr(0, 8) == "library ") {
      rest.remove_prefix(8);
      runtime::LibraryCall call;
      call.op = string(rest);
      call.dtype = dtype(word(rest));
      const std::size_t params = count(word(rest));
      end_of_line(rest);
      for (std::size_t k = 0; k < params; ++k) {
        rest = field("param");
        std::string name = string(rest);
        if (!call.params.emplace(std::move(name), expr(rest)).second) fail("a parameter twice");
      }
      s.op = std::move(call);
    } else {
      fail("expected 'body' or 'library'");
    }
    return s;
  }

  GroupReport report() {
    end_of_line(field("report"));
    GroupReport r;
    r.kept_one_op = flag(field("kept_one_op"));
    r.searched_steps = count(field("searched_steps"));
    r.program_seconds = real(field("program_seconds"));
    r.one_op_seconds = real(field("one_op_seconds"));
    while (pos_ < text_.size()) {
      std::string_view rest = field("rejected");
      Rejection x;
      x.what = string(rest);
      x.why = string(rest);
      while (!rest.empty()) x.rules.push_back(string(rest));
      r.rejected.push_back(std::move(x));
    }
    return r;
  }
};

}  // namespace

std::string to_text(const GroupProgram& p) {
  std::ostringstream out;
  out << "steps " << p.steps.size() << "\n";
  for (const GroupStep& s : p.steps) {
    out << "step\n  how " << quoted(s.how) << "\n  dtype " << graph::dtype_name(s.dtype)
        << "\n  shape " << shape_text(s.shape) << "\n  node "
        << (s.node ? std::to_string(*s.node) : std::string("none")) << "\n  in_place "
        << s.in_place << "\n  measured " << s.measured << "\n  seconds "
        << number_text(s.seconds) << "\n  inputs";
    for (const Ref& r : s.inputs) out << ' ' << ref_text(r);
    out << "\n  rules";
    for (const std::string& rule : s.rules) out << ' ' << quoted(rule);
    out << "\n";
    if (const graph::Body* body = std::get_if<graph::Body>(&s.op)) {
      const std::string text = graph::to_text(*body);
      out << "  body " << line_count(text) << "\n" << text;
    } else {
      const runtime::LibraryCall& call = std::get<runtime::LibraryCall>(s.op);
      out << "  library " << quoted(call.op) << ' ' << graph::dtype_name(call.dtype) << ' '
          << call.params.size() << "\n";
      for (const auto& [name, value] : call.params) {
        out << "  param " << quoted(name) << ' ' << graph::to_string(value) << "\n";
      }
    }
  }
  out << "outputs " << p.outputs.size() << "\n";
  for (const auto& [node, value] : p.outputs) out << "output " << node << ' ' << ref_text(value) << "\n";
  const GroupReport& r = p.report;
  out << "report\n  kept_one_op " << r.kept_one_op << "\n  searched_steps " << r.searched_steps
      << "\n  program_seconds " << number_text(r.program_seconds) << "\n  one_op_seconds "
      << number_text(r.one_op_seconds) << "\n";
  for (const Rejection& x : r.rejected) {
    out << "  rejected " << quoted(x.what) << ' ' << quoted(x.why);
    for (const std::string& rule : x.rules) out << ' ' << quoted(rule);
    out << "\n";
  }
  return out.str();
}

GroupProgram parse_group_program(std::string_view text, std::string_view source_name) {
  return ProgramReader(text, source_name).program();
}

}  // namespace kiln::compiler
