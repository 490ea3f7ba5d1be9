// libFuzzer target for rule programs over kiln's own sorts, as `kiln egg --graph-sorts` runs
// them: the Expr, Shape, View and Body sorts and their primitives (literals, view algebra,
// one-op-body) are registered and rules/hlir.egg, rules/dtype_prop.egg and
// rules/kernel_rewrite.egg are loaded before the input runs. Every input either runs or fails
// with a UserError pointing inside the input or inside those rule files; another exception, a
// crash, a sanitizer report or a hang is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/sorts.hpp"
#include "dsl/session.hpp"
#include "engine/run_report.hpp"
#include "support/diagnostic.hpp"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

namespace {

constexpr std::size_t kMaxInput = 16384;

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_graph_session: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string read_rules(const char* relative) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path);
  if (!in) bug("cannot read a rule file", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("include") != std::string::npos) return 0;  // reads other files
  static const std::string hlir = read_rules("rules/hlir.egg");
  static const std::string dtype_prop = read_rules("rules/dtype_prop.egg");
  static const std::string kernel_rewrite = read_rules("rules/kernel_rewrite.egg");

  kiln::engine::RunLimits limits;
  limits.max_iterations = 20;
  limits.max_rows = 20000;
  limits.max_seconds = 0.5;
  limits.match_limit = 10000;
  std::ostringstream out;  // discarded
  kiln::dsl::Session session(out);
  kiln::compiler::register_graph_sorts(session.egraph());
  session.run_text("hlir.egg", hlir);
  session.run_text("dtype_prop.egg", dtype_prop);
  session.run_text("kernel_rewrite.egg", kernel_rewrite);
  session.set_limits(limits);
  try {
    session.run_text("fuzz.egg", text);
  } catch (const kiln::support::UserError& error) {
    const kiln::support::Span& span = error.span();
    if (!span.known()) bug("error without a location", error.what());
    if (span.file->name() == "fuzz.egg" && (span.begin > span.end || span.end > size)) {
      bug("error span outside the input", error.what());
    }
  } catch (const std::exception& error) {
    bug("not a UserError", error.what());  // an InternalError is a kiln bug too
  }
  return 0;
}
