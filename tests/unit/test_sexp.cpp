// Tests of the s-expression reader: egglog's token classes, spans, strings, comments, errors
// with their carets, and printing back in egglog's style.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dsl/sexp.hpp"
#include "support/diagnostic.hpp"

namespace {

using kiln::dsl::read_sexps;
using kiln::dsl::Sexp;
using kiln::dsl::SexpKind;
using kiln::support::SourceFile;
using kiln::support::UserError;

std::vector<Sexp> read(const std::string& text) {
  return read_sexps(std::make_shared<const SourceFile>("test.egg", text));
}

Sexp read_one(const std::string& text) {
  std::vector<Sexp> nodes = read(text);
  REQUIRE(nodes.size() == 1);
  return nodes.front();
}

// The full diagnostic (location, message, source line, caret) of reading `text`.
std::string read_error(const std::string& text) {
  try {
    read(text);
  } catch (const UserError& error) {
    return error.what();
  }
  FAIL("expected a UserError for: " << text);
  return "";
}

std::string source_of(const Sexp& node) {
  return node.span.file->text().substr(node.span.begin, node.span.end - node.span.begin);
}

}  // namespace

TEST_CASE("reader: classifies integers [dsl]") {
  struct Case {
    const char* text;
    std::int64_t value;
  };
  for (Case c : {Case{"0", 0}, Case{"42", 42}, Case{"-5", -5}, Case{"+5", 5}, Case{"007", 7},
                 Case{"-007", -7}, Case{"-0", 0}, Case{"+0", 0},
                 Case{"9223372036854775807", std::numeric_limits<std::int64_t>::max()},
                 Case{"-9223372036854775808", std::numeric_limits<std::int64_t>::min()}}) {
    INFO(c.text);
    Sexp node = read_one(c.text);
    CHECK(node.kind == SexpKind::Int);
    CHECK(node.int_value == c.value);
  }
}

TEST_CASE("reader: integers beyond i64 become floats, as in egglog [dsl]") {
  Sexp above = read_one("9223372036854775808");
  CHECK(above.kind == SexpKind::Float);
  CHECK(above.float_value == 9223372036854775808.0);
  Sexp below = read_one("-9223372036854775809");
  CHECK(below.kind == SexpKind::Float);
  CHECK(below.float_value == -9223372036854775808.0);
  Sexp huge = read_one("99999999999999999999");
  CHECK(huge.kind == SexpKind::Float);
  CHECK(huge.float_value == 1e20);
}

TEST_CASE("reader: classifies floats [dsl]") {
  struct Case {
    const char* text;
    double value;
  };
  for (Case c : {Case{"1.", 1.0}, Case{".5", 0.5}, Case{"-.5", -0.5}, Case{"+1.5", 1.5},
                 Case{"1e5", 1e5}, Case{"1E5", 1e5}, Case{"1.e5", 1e5}, Case{"1.5e+3", 1500.0},
                 Case{"-1E-5", -1e-5}, Case{"0.1", 0.1}, Case{"0e0", 0.0}, Case{"5e-324", 5e-324},
                 Case{"3e-324", 5e-324}, Case{"1.7976931348623157e308", 1.7976931348623157e308},
                 Case{"inf", std::numeric_limits<double>::infinity()},
                 Case{"-inf", -std::numeric_limits<double>::infinity()}}) {
    INFO(c.text);
    Sexp node = read_one(c.text);
    CHECK(node.kind == SexpKind::Float);
    CHECK(node.float_value == c.value);
  }
  Sexp nan = read_one("NaN");
  CHECK(nan.kind == SexpKind::Float);
  CHECK(std::isnan(nan.float_value));
}

TEST_CASE("reader: keeps the sign of zero and underflows to zero [dsl]") {
  Sexp negative_zero = read_one("-0.0");
  CHECK(negative_zero.kind == SexpKind::Float);
  CHECK(negative_zero.float_value == 0.0);
  CHECK(std::signbit(negative_zero.float_value));
  Sexp tiny = read_one("1e-400");
  CHECK(tiny.kind == SexpKind::Float);
  CHECK(tiny.float_value == 0.0);
  CHECK_FALSE(std::signbit(tiny.float_value));
  CHECK(std::signbit(read_one("-1e-400").float_value));
  CHECK(read_one("1e-99999999999999999999").float_value == 0.0);
}

TEST_CASE("reader: tokens egglog does not read as numbers are symbols [dsl]") {
  // Overflowing floats, other spellings of NaN and infinity, and malformed numbers.
  for (const char* text : {"1e400",
                           "-1e400",
                           "1e99999999999999999999",
                           "1.7976931348623159e308",
                           "nan",
                           "NAN",
                           "-NaN",
                           "+NaN",
                           "+inf",
                           "Inf",
                           "infinity",
                           "-infinity",
                           "1_000",
                           "0x10",
                           "1e",
                           "1e+",
                           "E5",
                           ".e5",
                           ".",
                           "-.",
                           "-",
                           "+",
                           "1.5.",
                           "--5",
                           "+-5",
                           "1f",
                           "1.0f64",
                           "1e5e"}) {
    INFO(text);
    Sexp node = read_one(text);
    CHECK(node.kind == SexpKind::Symbol);
    CHECK(node.text == text);
  }
}

TEST_CASE("reader: classifies booleans and symbols [dsl]") {
  CHECK(read_one("true").kind == SexpKind::Bool);
  CHECK(read_one("true").bool_value);
  CHECK(read_one("false").kind == SexpKind::Bool);
  CHECK_FALSE(read_one("false").bool_value);
  for (const char* text : {"True", "a-b", ":key", "$x", "a.b", "a#b", "a|b", "a'b", "a,b", "a{b}",
                           "[x]", "a\"b\"", "caf\xc3\xa9", "x\xe2\x80\x8by"}) {
    INFO(text);
    Sexp node = read_one(text);
    CHECK(node.kind == SexpKind::Symbol);
    CHECK(node.text == text);
  }
}

TEST_CASE("reader: brackets are token characters, not lists [dsl]") {
  std::vector<Sexp> nodes = read("[a b]");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].is_symbol("[a"));
  CHECK(nodes[1].is_symbol("b]"));
  CHECK(read_error("[a)").find("1:3: error: unexpected ')'") != std::string::npos);
}

TEST_CASE("reader: reads nested lists and unit [dsl]") {
  Sexp node = read_one("(rewrite (Add a (Num 0)) a :ruleset algebra)");
  REQUIRE(node.is_list());
  REQUIRE(node.items.size() == 5);
  CHECK(node.items[0].is_symbol("rewrite"));
  REQUIRE(node.items[1].items.size() == 3);
  CHECK(node.items[1].items[2].items[1].kind == SexpKind::Int);
  CHECK(node.items[3].is_symbol(":ruleset"));

  Sexp unit = read_one("()");
  CHECK(unit.kind == SexpKind::List);
  CHECK(unit.items.empty());
  CHECK(read_one("( ( ) )").items.at(0).items.empty());
  CHECK(read("").empty());
  CHECK(read("(a)(b)\"c\"d").size() == 4);
}

TEST_CASE("reader: records spans with line and column [dsl]") {
  std::vector<Sexp> nodes = read("; header\n(datatype Math\n   (Num i64))  \"s\\n\" -1.5");
  REQUIRE(nodes.size() == 3);
  const Sexp& datatype = nodes[0];
  CHECK(datatype.span.location() == "test.egg:2:1");
  CHECK(source_of(datatype) == "(datatype Math\n   (Num i64))");
  CHECK(datatype.items[1].span.location() == "test.egg:2:11");
  CHECK(source_of(datatype.items[1]) == "Math");
  const Sexp& num = datatype.items[2];
  CHECK(num.span.location() == "test.egg:3:4");
  CHECK(source_of(num) == "(Num i64)");
  CHECK(source_of(num.items[1]) == "i64");
  CHECK(nodes[1].span.location() == "test.egg:3:16");
  CHECK(source_of(nodes[1]) == "\"s\\n\"");
  CHECK(nodes[2].span.location() == "test.egg:3:22");
  CHECK(source_of(nodes[2]) == "-1.5");
}

TEST_CASE("reader: decodes string escapes [dsl]") {
  Sexp node = read_one(R"("a\"b\\c\nd\te")");
  CHECK(node.kind == SexpKind::String);
  CHECK(node.text == "a\"b\\c\nd\te");
  CHECK(read_one("\"\"").text.empty());
  // Raw newlines and tabs are allowed; ';' and '(' inside a string are ordinary characters.
  CHECK(read_one("\"line\n\tnext ; (x\"").text == "line\n\tnext ; (x");
  CHECK(read_one("\"caf\xc3\xa9\"").text == "caf\xc3\xa9");
}

TEST_CASE("reader: a string ends its token, a quote inside a token does not start one [dsl]") {
  std::vector<Sexp> nodes = read("\"a\"b");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].kind == SexpKind::String);
  CHECK(nodes[1].is_symbol("b"));
  nodes = read("a\"b c\"");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].is_symbol("a\"b"));
  CHECK(nodes[1].is_symbol("c\""));
}

TEST_CASE("reader: skips whitespace and comments [dsl]") {
  std::vector<Sexp> nodes = read("a;comment (b\nc ; another\n;; last");
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].is_symbol("a"));
  CHECK(nodes[1].is_symbol("c"));
  // egglog ends a comment only at '\n', not at a lone '\r'.
  CHECK(read("x ;c\r(y)").size() == 1);
  // Whitespace is Rust's: \v, \f, NBSP, U+3000 and NEL separate tokens; U+001C and a
  // zero-width space do not.
  CHECK(read("a\vb\fc\xc2\xa0"
             "d\xe3\x80\x80"
             "e\xc2\x85"
             "f")
            .size() == 6);
  CHECK(read("a\x1c"
             "b")
            .size() == 1);
  CHECK(read("a\xe2\x80\x8b"
             "b")
            .size() == 1);
}

TEST_CASE("reader: reports a syntax error where it is, with the source line and a caret [dsl]") {
  struct Case {
    const char* text;
    const char* diagnostic;
  };
  for (Case c : {
           // An unclosed list is reported where it opened.
           Case{"(a (b c)",
                "test.egg:1:1: error: unclosed '('\n"
                "  (a (b c)\n"
                "  ^"},
           Case{"(ok)\n  (x\n  (y z",
                "test.egg:3:3: error: unclosed '('\n"
                "    (y z\n"
                "    ^"},
           // A stray ')', a bad escape and a byte that is not UTF-8 are reported where they are.
           Case{"(a) )",
                "test.egg:1:5: error: unexpected ')'\n"
                "  (a) )\n"
                "      ^"},
           Case{"\n)",
                "test.egg:2:1: error: unexpected ')'\n"
                "  )\n"
                "  ^"},
           // An unterminated string is reported where it started; a backslash at the very end
           // is still an unterminated string, not a bad escape.
           Case{"(a \"abc\n def",
                "test.egg:1:4: error: unterminated string\n"
                "  (a \"abc\n"
                "     ^"},
           Case{"\"abc\\",
                "test.egg:1:1: error: unterminated string\n"
                "  \"abc\\\n"
                "  ^"},
           Case{"(a \"ab\\qc\")",
                "test.egg:1:7: error: invalid escape in string "
                "(egglog accepts \\\", \\\\, \\n and \\t)\n"
                "  (a \"ab\\qc\")\n"
                "        ^~"},
           Case{"(a \xff)",
                "test.egg:1:4: error: invalid UTF-8 byte\n"
                "  (a \xff)\n"
                "     ^"},
       }) {
    INFO(c.text);
    CHECK(read_error(c.text) == c.diagnostic);
  }
}

TEST_CASE("reader: rejects escapes egglog does not accept and bytes that are not UTF-8 [dsl]") {
  struct Case {
    const char* text;
    const char* error;
  };
  for (Case c : {Case{"\"\\r\"", "error: invalid escape"},
                 Case{"\"\\0\"", "error: invalid escape"},
                 Case{"\"\\x41\"", "error: invalid escape"},
                 Case{"\"\\u{41}\"", "error: invalid escape"},
                 Case{"\"\\'\"", "error: invalid escape"},
                 Case{"\"\\\n\"", "error: invalid escape"},
                 // Overlong encodings and surrogates are not UTF-8 either.
                 Case{"\xc0\xaf", "1:1: error: invalid UTF-8 byte"},
                 Case{"x\xed\xa0\x80", "1:2: error: invalid UTF-8 byte"}}) {
    INFO(c.text);
    CHECK(read_error(c.text).find(c.error) != std::string::npos);
  }
}

TEST_CASE("reader: rejects nesting deeper than 1000 levels [dsl]") {
  Sexp deepest = read_one(std::string(1000, '(') + std::string(1000, ')'));
  CHECK(deepest.is_list());
  std::string error = read_error(std::string(1001, '(') + std::string(1001, ')'));
  CHECK(error.rfind("test.egg:1:1001: error: lists nested more than 1000 levels deep\n", 0) == 0);
  // Far deeper input fails the same way, without exhausting the stack.
  CHECK(read_error(std::string(1000000, '(')).find("1:1001: error: lists nested") !=
        std::string::npos);
}

TEST_CASE("sexp: prints floats as egglog prints f64 literals [dsl]") {
  struct Case {
    const char* text;
    const char* printed;
  };
  for (Case c :
       {Case{"1.0", "1.0"}, Case{"0.1", "0.1"}, Case{"1e5", "100000.0"},
        Case{"1e20", "100000000000000000000"}, Case{"1e-7", "0.0000001"}, Case{"-0.0", "-0.0"},
        Case{"0.0", "0.0"}, Case{"NaN", "NaN"}, Case{"inf", "inf"}, Case{"-inf", "-inf"},
        Case{"-.5", "-0.5"}, Case{"123456789012345678.0", "123456789012345680.0"},
        Case{"9223372036854775808", "9223372036854776000"},
        Case{"-9223372036854775809", "-9223372036854776000"},
        // Halfway between two shortest candidates egglog (Rust) rounds up.
        Case{"2053637337633904.25", "2053637337633904.3"},
        Case{"1573626427739.15625", "1573626427739.1563"}}) {
    INFO(c.text);
    CHECK(read_one(c.text).to_string() == c.printed);
  }
  CHECK(read_one("5e-324").to_string() == "0." + std::string(323, '0') + "5");
}

TEST_CASE("sexp: prints other nodes in egglog's style [dsl]") {
  CHECK(read_one("(f  +5 -007\n true ()   x)").to_string() == "(f 5 -7 true () x)");
  // egglog escapes only '"' and '\'; newlines and tabs are printed raw.
  CHECK(read_one(R"("a\"b\\c\nd\te")").to_string() == "\"a\\\"b\\\\c\nd\te\"");
}

TEST_CASE("sexp: printed form reads back to the same tree [dsl]") {
  const std::string text =
      "(a \"q\\\"\\\\\\n\\t\" -0.0 1e300 5e-324 NaN -inf 12 true [x] (() (b)) a\"b\")";
  Sexp first = read_one(text);
  Sexp second = read_one(first.to_string());
  CHECK(second.to_string() == first.to_string());
  REQUIRE(second.items.size() == first.items.size());
  for (std::size_t i = 0; i < first.items.size(); ++i) {
    INFO(first.items[i].to_string());
    CHECK(second.items[i].kind == first.items[i].kind);
  }
  CHECK(std::signbit(second.items[2].float_value));
}
