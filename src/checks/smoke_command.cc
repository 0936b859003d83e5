// Running the project's smoke command with a timeout and a clean process group; see
// smoke_command.h.
#include "checks/smoke_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <sstream>

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr auto kTermGrace = std::chrono::seconds(2);
constexpr size_t kMaxLineBytes = 4096;  // a line longer than this is cut in the tail

// Keeps the last N lines of a stream without holding all of it.
class OutputTail {
 public:
  explicit OutputTail(size_t lines) : max_lines_(lines) {}
  void Add(const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      if (data[i] == '\n') {
        Push();
      } else if (current_.size() < kMaxLineBytes) {
        current_ += data[i];
      }
    }
  }
  std::string Text() {
    if (!current_.empty()) Push();
    std::string out;
    for (const std::string& line : lines_) out += line + "\n";
    return out;
  }
  int total() const { return total_; }

 private:
  void Push() {
    lines_.push_back(std::move(current_));
    current_.clear();
    ++total_;
    if (lines_.size() > max_lines_) lines_.pop_front();
  }
  size_t max_lines_;
  std::deque<std::string> lines_;
  std::string current_;
  int total_ = 0;
};

// The child side after fork(): its own process group, the working directory, the added
// environment, stdout+stderr on the pipe, then exec. Only async-signal-safe calls after fork
// matter little here (the validator is single-threaded at this point), but exit with _exit.
[[noreturn]] void ExecChild(const ExtCommand& command, const fs::path& cwd, int write_fd,
                            int status_fd) {
  ::setpgid(0, 0);
  ::dup2(write_fd, STDOUT_FILENO);
  ::dup2(write_fd, STDERR_FILENO);
  ::close(write_fd);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
  // Failures before exec go to the close-on-exec status pipe: the parent reads end-of-file
  // when exec succeeded, and the reason when it did not.
  auto fail = [status_fd](const std::string& msg) {
    (void)!::write(status_fd, msg.data(), msg.size());
    ::_exit(127);
  };
  if (::chdir(cwd.c_str()) != 0) fail("cannot enter " + cwd.string() + ": " + std::strerror(errno));
  for (const auto& [name, value] : command.env) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  fail("cannot execute " + command.argv[0] + ": " + std::strerror(errno));
  ::_exit(127);
}

// Reads what is available on `fd` until `deadline` or end of file; false at end of file.
bool Drain(int fd, OutputTail& tail, Clock::time_point deadline) {
  char buffer[8192];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return true;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) return true;
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    tail.Add(buffer, static_cast<size_t>(n));
  }
}

// Why exec failed, read from the child's status pipe; "" when it succeeded.
std::string ExecFailure(int status_fd) {
  std::string why;
  char buffer[512];
  ssize_t n;
  while ((n = ::read(status_fd, buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    why.append(buffer, static_cast<size_t>(n));
  }
  ::close(status_fd);
  return why;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

SmokeRun RunSmokeCommand(const ExtCommand& command, const fs::path& project_dir) {
  SmokeRun run;
  OutputTail tail(static_cast<size_t>(command.tail_lines));
  const fs::path cwd = command.cwd.empty() ? project_dir : project_dir / command.cwd;
  int fds[2], exec_status[2];
  if (command.argv.empty()) {
    run.output_tail = "no command";
    return run;
  }
  if (::pipe2(fds, O_CLOEXEC) != 0 || ::pipe2(exec_status, O_CLOEXEC) != 0) {
    run.output_tail = std::string("pipe failed: ") + std::strerror(errno);
    return run;
  }
  const auto start = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) ExecChild(command, cwd, fds[1], exec_status[1]);
  ::close(fds[1]);
  ::close(exec_status[1]);
  if (pid < 0) {
    ::close(fds[0]);
    ::close(exec_status[0]);
    run.output_tail = std::string("fork failed: ") + std::strerror(errno);
    return run;
  }
  ::setpgid(pid, pid);  // also here, so the group exists before any kill below
  if (std::string why = ExecFailure(exec_status[0]); !why.empty()) {
    ::waitpid(pid, nullptr, 0);
    ::close(fds[0]);
    run.output_tail = why;
    return run;
  }
  run.started = true;
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(command.timeout_s));
  int status = 0;
  bool exited = false;
  bool open = true;
  while (!exited) {
    if (open)
      open = Drain(fds[0], tail, std::min(deadline, Clock::now() + std::chrono::milliseconds(200)));
    else
      ::usleep(20000);
    exited = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!exited && Clock::now() >= deadline) {
      run.timed_out = true;
      ::kill(-pid, SIGTERM);
      const auto grace_end = Clock::now() + kTermGrace;
      while (!exited && Clock::now() < grace_end) {
        if (open)
          open = Drain(fds[0], tail, Clock::now() + std::chrono::milliseconds(50));
        else
          ::usleep(20000);
        exited = ::waitpid(pid, &status, WNOHANG) == pid;
      }
      if (!exited) {
        ::kill(-pid, SIGKILL);
        exited = ::waitpid(pid, &status, 0) == pid;
      }
    }
  }
  run.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  run.exit_code = ExitCodeOf(status);
  // Whatever the command left running in its group dies with the check.
  run.left_processes = ::kill(-pid, 0) == 0;
  ::kill(-pid, SIGKILL);
  if (open) Drain(fds[0], tail, Clock::now() + std::chrono::milliseconds(500));
  ::close(fds[0]);
  run.output_lines = tail.total();
  run.output_tail = tail.Text();
  return run;
}

CheckResult SmokeCommandCheck(const ExtCommand& command, const SmokeRun& run) {
  CheckResult c{"ext.command",           CheckStatus::kPass, run.duration_s, "", "",
                nlohmann::json::object()};
  std::string line;
  for (const std::string& a : command.argv) line += (line.empty() ? "" : " ") + a;
  c.metrics = {{"argv", command.argv},
               {"cwd", command.cwd.empty() ? "." : command.cwd},
               {"exit_code", run.exit_code},
               {"timed_out", run.timed_out},
               {"timeout_s", command.timeout_s},
               {"duration_s", run.duration_s},
               {"output_lines", run.output_lines},
               {"output_tail", run.output_tail},
               {"left_processes_killed", run.left_processes}};
  std::ostringstream s;
  s.precision(3);
  if (!run.started) {
    c.status = CheckStatus::kError;
    s << "could not start `" << line << "`: " << run.output_tail;
    c.remedy = "check [ext.command] argv in the lock and that the program exists in the image";
  } else if (run.timed_out) {
    c.status = CheckStatus::kFail;
    s << "`" << line << "` ran past its " << command.timeout_s
      << " s timeout and was killed with its process group";
    c.remedy =
        "see output_tail; make the smoke command finish in time (fewer steps) or raise "
        "[ext.command] timeout-s";
  } else if (run.exit_code != 0) {
    c.status = CheckStatus::kFail;
    s << "`" << line << "` exited with " << run.exit_code << " after " << run.duration_s << " s";
    c.remedy = "see output_tail in the metrics for the command's last output";
  } else {
    s << "`" << line << "` exited 0 in " << run.duration_s << " s";
  }
  c.summary = s.str();
  if (!c.summary.empty() && c.summary.back() == '\n') c.summary.pop_back();
  return c;
}

}  // namespace trainlock
