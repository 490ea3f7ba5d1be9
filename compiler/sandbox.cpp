// Sandboxed execution in forked workers; see sandbox.hpp.
#include "compiler/sandbox.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <thread>

#include "support/diagnostic.hpp"

namespace kiln::compiler {

namespace {

using Clock = std::chrono::steady_clock;

// A frame on the pipe: status (0 result, 1 exception message), payload length, payload.
constexpr char kResult = 0;
constexpr char kThrew = 1;
constexpr std::size_t kHeader = 1 + sizeof(std::uint64_t);

// Runs one job, turning an exception into its failure.
JobResult run_here(const Job& job) {
  JobResult r;
  try {
    r.output = job();
  } catch (const std::exception& e) {
    r.failure = std::string("threw: ") + e.what();
  } catch (...) {
    r.failure = "threw an exception that is not a std::exception";
  }
  return r;
}

// Writes all of `data` or ends the worker (the parent is gone, or killed it).
void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(3);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// The worker: runs jobs[first...] in order, one frame each, then exits.
[[noreturn]] void serve(const std::vector<Job>& jobs, std::size_t first, int fd) {
  // A crash must end the worker so that the parent sees the signal: handlers that the compiler (or
  // a test framework) installed for these signals do not run here.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS}) {
    ::signal(sig, SIG_DFL);
  }
  // A crashing candidate leaves no core file behind.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  // A fresh thread: its OpenMP team starts empty (see sandbox.hpp).
  std::thread runner([&] {
    for (std::size_t i = first; i < jobs.size(); ++i) {
      const JobResult r = run_here(jobs[i]);
      const std::string& payload = r.ok() ? r.output : r.failure;
      char header[kHeader];
      header[0] = r.ok() ? kResult : kThrew;
      const std::uint64_t size = payload.size();
      std::memcpy(header + 1, &size, sizeof size);
      write_all(fd, header, kHeader);
      write_all(fd, payload.data(), payload.size());
    }
  });
  runner.join();
  ::_exit(0);
}

struct Worker {
  pid_t pid = -1;
  int fd = -1;
};

Worker start_worker(const std::vector<Job>& jobs, std::size_t first) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0) {
    throw support::UserError(std::string("sandbox: cannot make a pipe: ") + std::strerror(errno));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw support::UserError(std::string("sandbox: cannot fork a worker: ") +
                             std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    serve(jobs, first, fds[1]);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

enum class Read { Frame, Closed, TimedOut };

// Reads one frame before `deadline`.
Read read_frame(int fd, Clock::time_point deadline, char& status, std::string& payload) {
  std::string buffer;
  std::size_t wanted = kHeader;
  while (buffer.size() < wanted) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                            Clock::now());
    if (left.count() <= 0) return Read::TimedOut;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return Read::TimedOut;
    char chunk[1 << 16];
    const std::size_t room = std::min(sizeof chunk, wanted - buffer.size());
    const ssize_t n = ::read(fd, chunk, room);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::Closed;
    buffer.append(chunk, static_cast<std::size_t>(n));
    if (buffer.size() == kHeader && wanted == kHeader) {
      std::uint64_t size = 0;
      std::memcpy(&size, buffer.data() + 1, sizeof size);
      wanted = kHeader + size;
      buffer.reserve(wanted);
    }
  }
  status = buffer[0];
  payload = buffer.substr(kHeader);
  return Read::Frame;
}

// Why a worker that stopped answering ended.
std::string ending(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return "crashed: signal " + std::to_string(sig) + " (" + (name ? name : "unknown") + ")";
  }
  if (WIFEXITED(wait_status)) {
    return "the worker exited with status " + std::to_string(WEXITSTATUS(wait_status)) +
           " before answering";
  }
  return "the worker stopped before answering";
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

void reap(pid_t pid, int* status = nullptr) {
  int s = 0;
  while (::waitpid(pid, &s, 0) < 0 && errno == EINTR) {
  }
  if (status) *status = s;
}

}  // namespace

std::vector<JobResult> run_sandboxed(const std::vector<Job>& jobs, const SandboxOptions& options) {
  std::vector<JobResult> results(jobs.size());
  if (options.in_process) {
    for (std::size_t i = 0; i < jobs.size(); ++i) results[i] = run_here(jobs[i]);
    return results;
  }
  KILN_ASSERT(options.time_limit_seconds > 0, "sandbox: the time limit must be positive");
  const auto limit = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.time_limit_seconds));
  std::size_t next = 0;
  while (next < jobs.size()) {
    const Worker worker = start_worker(jobs, next);
    bool alive = true;
    while (alive && next < jobs.size()) {
      char status = kResult;
      std::string payload;
      const Read read = read_frame(worker.fd, Clock::now() + limit, status, payload);
      JobResult& r = results[next++];
      if (read == Read::Frame) {
        (status == kResult ? r.output : r.failure) = std::move(payload);
        continue;
      }
      alive = false;
      int wait_status = 0;
      if (read == Read::TimedOut) {
        ::kill(worker.pid, SIGKILL);
        reap(worker.pid);
        r.failure = "hung: no result within " + seconds_text(options.time_limit_seconds) +
                    " s, killed";
      } else {
        reap(worker.pid, &wait_status);
        r.failure = ending(wait_status);
      }
    }
    ::close(worker.fd);
    if (alive) reap(worker.pid);  // it exits after its last job
  }
  return results;
}

JobResult run_sandboxed(const Job& job, const SandboxOptions& options) {
  return run_sandboxed(std::vector<Job>{job}, options).front();
}

}  // namespace kiln::compiler
