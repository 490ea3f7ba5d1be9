// compiler/sandbox: a job that crashes, hangs, throws or exits fails alone, with the reason, and
// the jobs after it still run; results come back intact; a worker's writes stay in the worker.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "compiler/sandbox.hpp"
#include "tests/unit/test_util.hpp"

using namespace kiln;
using compiler::Job;
using compiler::JobResult;
using compiler::SandboxOptions;
using kiln::testing::contains;

namespace {

Job answer(std::string text) {
  return [text] { return text; };
}

Job crash() {
  return []() -> std::string {
    ::raise(SIGSEGV);
    return "unreachable";
  };
}

Job hang() {
  return []() -> std::string {
    while (true) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
}

}  // namespace

TEST_CASE("sandbox: a crash, a hang, an exception and an exit each fail only their job") {
  SandboxOptions options;
  options.time_limit_seconds = 1.0;
  const std::vector<JobResult> r = compiler::run_sandboxed(
      {answer("first"), crash(), answer("after the crash"), hang(), answer("after the hang"),
       []() -> std::string { throw std::runtime_error("boom"); }, answer("after the throw"),
       []() -> std::string { ::_exit(5); }, answer("last")},
      options);
  REQUIRE(r.size() == 9);
  CHECK(r[0].ok());
  CHECK(r[0].output == "first");
  CHECK_FALSE(r[1].ok());
  CHECK(contains(r[1].failure, "crashed: signal 11"));
  CHECK(r[2].output == "after the crash");
  CHECK(contains(r[3].failure, "hung: no result within 1 s"));
  CHECK(r[4].output == "after the hang");
  CHECK(r[5].failure == "threw: boom");
  CHECK(r[6].output == "after the throw");
  CHECK(contains(r[7].failure, "exited with status 5"));
  CHECK(r[8].ok());
  CHECK(r[8].output == "last");
}

TEST_CASE("sandbox: large results come back intact, and the worker's writes stay there") {
  std::string big(5'000'000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 % 251);
  int touched = 0;
  const JobResult r = compiler::run_sandboxed([&] {
    touched = 1;
    return big;
  });
  REQUIRE(r.ok());
  CHECK(r.output == big);
  CHECK(touched == 0);  // the job ran in another process
  // In process, the same job runs here (and exceptions are still contained).
  SandboxOptions here;
  here.in_process = true;
  CHECK(compiler::run_sandboxed([&] { touched = 2; return std::string("x"); }, here).ok());
  CHECK(touched == 2);
  CHECK(compiler::run_sandboxed([]() -> std::string { throw std::runtime_error("no"); }, here)
            .failure == "threw: no");
}
