// The command line's error contract: a user's mistake exits 1 with its located message, any
// other exception exits 70 as an internal error with its message, and a command's own status
// passes through.
#include <catch2/catch.hpp>

#include <new>
#include <sstream>
#include <stdexcept>

#include "support/diagnostic.hpp"
#include "tools/exit_status.hpp"

using kiln::tools::run_reporting_errors;

namespace {

struct Result {
  int status;
  std::string err;
};

Result run(const std::function<int()>& command) {
  std::ostringstream out, err;
  const int status = run_reporting_errors(command, out, err);
  return {status, err.str()};
}

}  // namespace

TEST_CASE("exit status: a command's status passes through, errors become 1 or 70", "[tools]") {
  CHECK(run([] { return 0; }).status == 0);
  CHECK(run([] { return 3; }).status == 3);
  CHECK(run([] { return 0; }).err.empty());

  const Result user = run([]() -> int { throw kiln::support::UserError("--dim nope: no such dim"); });
  CHECK(user.status == 1);
  CHECK(user.err == "error: --dim nope: no such dim\n");

  const Result memory = run([]() -> int { throw std::bad_alloc(); });
  CHECK(memory.status == 70);
  CHECK(memory.err == "kiln: internal error: std::bad_alloc\n");

  const Result invariant = run([]() -> int {
    KILN_ASSERT(false, "a broken invariant");
    return 0;
  });
  CHECK(invariant.status == 70);
  CHECK(invariant.err.rfind("kiln: internal error at ", 0) == 0);  // with kiln's file and line
  CHECK(invariant.err.find("a broken invariant") != std::string::npos);

  const Result unknown = run([]() -> int { throw 42; });
  CHECK(unknown.status == 70);
  CHECK(unknown.err == "kiln: internal error: an exception of unknown type\n");
}
