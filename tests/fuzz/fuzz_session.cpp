// libFuzzer target for the whole rule-language front end: the bytes are a program that a Session
// reads, type checks and runs, under small run limits so no program runs away. It either runs or
// fails with a UserError (a RuntimeFailure is one) that points inside the input. Anything else
// (another exception, an internal error, a crash, a sanitizer report, a hang) is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>

#include "dsl/session.hpp"
#include "engine/run_report.hpp"
#include "support/diagnostic.hpp"

namespace {

// Long enough for deep terms (a rule run many times builds a chain thousands of constructors
// deep) and for lists up to the reader's nesting limit; longer programs only slow the search.
constexpr std::size_t kMaxInput = 16384;

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_session: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > kMaxInput) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  // `include` reads other files (the fuzzer's own logs, /dev/zero, ...): not the program under
  // test. A command name is a bare symbol, so skipping every input that spells it is enough.
  if (text.find("include") != std::string::npos) return 0;

  // Limits are checked between iterations; the match limit also bounds a single iteration (a
  // rule with more matches is banned for a while, as `kiln egg --match-limit` does).
  kiln::engine::RunLimits limits;
  limits.max_iterations = 20;
  limits.max_rows = 20000;
  limits.max_seconds = 0.5;
  limits.match_limit = 10000;
  std::ostringstream out;  // discarded
  kiln::dsl::Session session(out);
  session.set_limits(limits);
  try {
    session.run_text("fuzz.egg", text);
  } catch (const kiln::support::UserError& error) {
    const kiln::support::Span& span = error.span();
    if (!span.known() || span.file->name() != "fuzz.egg" || span.begin > span.end ||
        span.end > size) {
      bug("error span outside the input", error.what());
    }
  } catch (const std::exception& error) {
    bug("not a UserError", error.what());  // an InternalError is a kiln bug too
  }
  return 0;
}
