// libFuzzer target for the graph library's text readers: the input's first byte picks the
// reader (Expr, Shape, View or .npy), the rest is its text. Every input either reads or fails
// with a UserError; an Expr, Shape or View that reads prints to text that reads back to the same
// value. Anything else (another exception, a crash, a sanitizer report) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/expr.hpp"
#include "graph/npy.hpp"
#include "graph/view.hpp"
#include "support/diagnostic.hpp"

namespace {

[[noreturn]] void bug(const char* what, const std::string& text) {
  std::fprintf(stderr, "round trip broken for %s: %s\n", what, text.c_str());
  std::abort();
}

std::string shape_text(const std::vector<kiln::graph::Expr>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i ? ", " : "") + kiln::graph::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  using namespace kiln::graph;
  try {
    switch (data[0] % 4) {
      case 0: {
        Expr e = parse_expr(text);
        if (!(parse_expr(to_string(e)) == e)) bug("Expr", text);
        break;
      }
      case 1: {
        std::vector<Expr> s = parse_shape(text);
        if (parse_shape(shape_text(s)) != s) bug("Shape", text);
        break;
      }
      case 2: {
        View v = parse_view(text);
        if (!(parse_view(to_string(v)) == v)) bug("View", text);
        break;
      }
      default: parse_npy(text, "fuzz.npy"); break;
    }
  } catch (const kiln::support::UserError&) {
    // Rejected with a message: fine.
  }
  return 0;
}
