// libFuzzer target for the s-expression reader: any bytes either read or fail with a UserError
// that points inside the input, and every node read prints to text that reads back to the same
// tree. Anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dsl/sexp.hpp"
#include "support/diagnostic.hpp"

namespace {

using kiln::dsl::Sexp;
using kiln::dsl::SexpKind;

std::vector<Sexp> read(std::string text) {
  return kiln::dsl::read_sexps(
      std::make_shared<const kiln::support::SourceFile>("fuzz.egg", std::move(text)));
}

bool same_float(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;  // tells 0.0 from -0.0
}

// Equality of what was read, ignoring where it was read from.
bool same_tree(const Sexp& a, const Sexp& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case SexpKind::List:
      if (a.items.size() != b.items.size()) return false;
      for (std::size_t i = 0; i < a.items.size(); ++i) {
        if (!same_tree(a.items[i], b.items[i])) return false;
      }
      return true;
    case SexpKind::Symbol:
    case SexpKind::String:
      return a.text == b.text;
    case SexpKind::Int:
      return a.int_value == b.int_value;
    case SexpKind::Float:
      return same_float(a.float_value, b.float_value);
    case SexpKind::Bool:
      return a.bool_value == b.bool_value;
  }
  return false;
}

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_reader: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<Sexp> nodes;
  try {
    nodes = read(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::support::UserError& error) {
    const kiln::support::Span& span = error.span();
    if (!span.known() || span.begin > span.end || span.end > size) {
      bug("error span outside the input", error.what());
    }
    return 0;
  }
  for (const Sexp& node : nodes) {
    if (node.span.begin >= node.span.end || node.span.end > size) {
      bug("node span outside the input", node.to_string());
    }
    // A UserError here escapes on purpose: printed text must always read back.
    std::string printed = node.to_string();
    std::vector<Sexp> again = read(printed);
    if (again.size() != 1 || !same_tree(node, again.front())) {
      bug("printed form reads back differently", printed);
    }
  }
  return 0;
}
