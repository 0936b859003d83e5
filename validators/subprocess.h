// Child processes for the validator's round trip: spawn (no shell), read a line from the
// child's stdout, wait with a deadline, SIGKILL. Every wait is bounded: no hang.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trainlock::validate {

class Child {
 public:
  // Starts `argv` with stdout on a pipe (readable with ReadLine) and stderr appended to
  // `stderr_file`. Throws std::runtime_error when the process cannot be started.
  Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // The next stdout line, or nullopt at end of output or when the deadline passes.
  std::optional<std::string> ReadLine(std::chrono::steady_clock::time_point deadline);
  // Waits for exit until the deadline; on timeout kills the child and returns nullopt.
  // Returns the exit code, or 128 + signal for a signalled child.
  std::optional<int> Wait(std::chrono::steady_clock::time_point deadline);
  void Kill();  // SIGKILL, then reap

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  std::optional<int> status_;
};

// The last `lines` lines of a text file ("" when unreadable), for error summaries.
std::string TailOfFile(const std::filesystem::path& file, int lines);

// The running executable's path (/proc/self/exe).
std::filesystem::path SelfExecutable();

}  // namespace trainlock::validate
