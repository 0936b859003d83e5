// The validator's worker processes (round trip, node probe, custom ops): each is this
// executable again, stdout a pipe it announces progress on, stderr appended to a file, killed
// when the validator dies. A thin layer over base/subprocess.h. Every wait is bounded: no hang.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <ios>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace trainlock::validate {

// How an engine process is set apart from the coordinator (coordinator/engine_command.h).
struct ChildIsolation {
  std::map<std::string, std::string> env;  // added to this process's, or the whole of it
  bool clean_env = false;                  // env is the child's whole environment
  bool own_group = false;
  // A PID namespace of its own where the kernel permits one: every process the child starts
  // ends with it, setsid or not (base/subprocess.h).
  bool own_pid_namespace = false;
  std::filesystem::path cwd;  // empty: this process's
};

class Child {
 public:
  // Starts `argv` with stdout on a pipe (readable with ReadLine) and stderr appended to
  // `stderr_file`. Throws std::runtime_error when no process could be made; a program that
  // cannot be executed is a child that exits with 127. `env` is added to this process's
  // environment; with `own_group` the child leads a process group that Kill() ends whole (an
  // engine that starts ranks of its own).
  Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
        const std::map<std::string, std::string>& env = {}, bool own_group = false);
  Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
        const ChildIsolation& isolation);

  pid_t pid() const { return process_.pid(); }
  // The next stdout line, or nullopt at end of output or when the deadline passes. A line
  // longer than the subprocess's cap comes back cut (base/subprocess.h).
  std::optional<std::string> ReadLine(std::chrono::steady_clock::time_point deadline) {
    return process_.ReadLine(deadline);
  }
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits for exit until the deadline; on timeout, or once its stderr passed
  // kMaxChildStderrBytes (stderr_capped()), kills the child and returns nullopt. Returns the exit
  // code, or 128 + signal for a signalled child; stderr_capped() is also true for a child that
  // ended by itself after passing the cap between two looks.
  std::optional<int> Wait(std::chrono::steady_clock::time_point deadline);
  // The bytes the child has written to its stderr file, read through a descriptor opened when
  // it started: a child that unlinks the file still fills the same inode, and is still counted.
  uint64_t StderrBytes() const;
  bool stderr_capped() const { return stderr_capped_; }
  void Kill() { process_.Kill(); }  // SIGKILL, then reap
  bool OutputEnded() const { return process_.output_ended(); }
  bool Exited() { return process_.Exited(); }
  // After the child exited: SIGKILLs what it left in its group and what still holds its
  // stdout (a daemon that left the group with setsid); true when there was anything.
  bool KillLeftovers() {
    const bool group = process_.KillLeftovers();
    return process_.KillPipeHolders() || group;
  }
  const std::string& containment() const { return process_.containment(); }

 private:
  Subprocess process_;
  int stderr_watch_fd_ = -1;
  bool stderr_capped_ = false;
};

// The most a worker or engine may write to its stderr file: past it the process is stopped, so
// nothing in the work directory grows without bound.
inline constexpr uint64_t kMaxChildStderrBytes = uint64_t{256} << 20;

// The last `lines` lines of a text file ("" when unreadable), for error summaries: read from
// the file's last kTailWindowBytes only, each line cut to its last kTailLineBytes.
inline constexpr std::streamoff kTailWindowBytes = 64 << 10;
inline constexpr size_t kTailLineBytes = 1000;
std::string TailOfFile(const std::filesystem::path& file, int lines);

}  // namespace trainlock::validate
