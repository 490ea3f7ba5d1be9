// The graph_text fuzz corpus replayed in the ordinary build (no clang needed): every input of
// tests/fuzz/corpus/graph_text, given to the reader its first byte picks (Expr, Shape, View or
// .npy), reads or fails with a UserError, and what reads prints back to an equal value, as the
// fuzz target (tests/fuzz/fuzz_graph_text.cpp) demands.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "graph/expr.hpp"
#include "graph/npy.hpp"
#include "graph/view.hpp"
#include "support/diagnostic.hpp"

namespace {

namespace fs = std::filesystem;
using namespace kiln::graph;

std::string shape_text(const std::vector<Expr>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + to_string(shape[i]);
  return out + "]";
}

// True when the input reads and round-trips, or is rejected with a UserError.
bool behaves(const std::string& bytes) {
  if (bytes.empty()) return true;
  const std::string text = bytes.substr(1);
  try {
    switch (static_cast<unsigned char>(bytes[0]) % 4) {
      case 0: {
        const Expr e = parse_expr(text);
        return parse_expr(to_string(e)) == e;
      }
      case 1: {
        const std::vector<Expr> s = parse_shape(text);
        return parse_shape(shape_text(s)) == s;
      }
      case 2: {
        const View v = parse_view(text);
        return parse_view(to_string(v)) == v;
      }
      default:
        parse_npy(text, "corpus.npy");
        return true;
    }
  } catch (const kiln::support::UserError&) {
    return true;
  }
}

}  // namespace

TEST_CASE("graph_text fuzz corpus: every input reads and round-trips or is a user error",
          "[graph]") {
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "tests" / "fuzz" /
                                                  "corpus" / "graph_text")) {
    inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  REQUIRE(inputs.size() > 1000);
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(input.filename().string());
    CHECK(behaves(bytes));
  }
}
