// Child processes: the one way trainlock starts a program (an image engine, the project's
// smoke command, the validator's ranks and workers). Arguments go to the program as they are,
// without a shell; the environment, working directory, process group and output streams are
// set up without running anything after fork() that is unsafe in a threaded parent (the
// validator has LibTorch's thread pools by then). Every wait can have a deadline, and stopping
// a child is SIGTERM, a grace, then SIGKILL, to its whole group when it has one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/output_tail.h"
#include "base/stop_signals.h"

namespace trainlock {

using ProcessClock = std::chrono::steady_clock;

// The exit code of a child that could not be started, as a shell reports it.
inline constexpr int kCannotStart = 127;

// The exit code a shell shows for a wait(2) status: the status, or 128 + N after signal N.
int ExitCodeOf(int wait_status);

// Where one of the child's output streams goes.
enum class Stream {
  kInherit,  // this process's own
  kPipe,     // read by this process into the tail; stdout and stderr share the one pipe
  kFile,     // appended to a file (created when missing)
};

// How often a file planted at an output file's name is removed before the start fails.
inline constexpr int kPlantedFileAttempts = 8;

// ReadLine's longest line: a child's stdout cannot make the reader hold more than this.
inline constexpr size_t kMaxReadLineBytes = (size_t{1} << 20) + 1;

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH unless it has a slash
  std::string program;            // run this file instead of looking up argv[0]
  // Added to this process's environment, replacing a variable of the same name. A PATH here
  // is also where argv[0] is looked up.
  std::map<std::string, std::string> env;
  // The child's environment is `env` alone, nothing inherited from this process (an engine
  // that must not see the caller's PYTHONPATH, PYTHONUSERBASE or LD_PRELOAD).
  bool clean_env = false;
  std::filesystem::path cwd;  // empty: this process's
  bool own_group = false;     // a process group of its own: stopping it stops all it started
  // With own_group, while the child runs: SIGTERM, SIGINT and SIGHUP to this process go to the
  // child's group too (StopSignalForwarding), which a terminal's Ctrl-C no longer reaches; the
  // signal is remembered (stop_signal()) for the caller to end by once it has cleaned up.
  bool forward_stop_signals = false;
  // Also a PID namespace of its own where the kernel permits one (CLONE_NEWPID, else with
  // CLONE_NEWUSER): its first process is a small init of ours that runs the program, and when
  // it ends the kernel ends every process left in the namespace, including one that left the
  // group with setsid. Where none can be made, the group alone; containment() says which.
  bool own_pid_namespace = false;
  bool die_with_parent = false;  // SIGKILLed when the thread that started it ends
  bool null_stdin = false;       // stdin from /dev/null instead of this process's
  Stream out = Stream::kPipe;
  Stream err = Stream::kPipe;
  std::filesystem::path out_file;  // for Stream::kFile
  std::filesystem::path err_file;
  // out_file and err_file must be (or become) regular files, opened without following a
  // symlink or blocking on a FIFO: in a directory an untrusted process writes to, one could
  // plant either (a FIFO there would block the open forever). What is planted at the name (a
  // FIFO, a link, a device) is removed, the name itself and never what it points to, and a
  // regular file created in its place; a name replaced again each time, kPlantedFileAttempts
  // times, is a start failure.
  bool files_regular_only = false;
  size_t tail_lines = 100;  // what the tail keeps of the pipe
  size_t tail_line_bytes = 4096;
};

// One started child; destroying it SIGKILLs (its group, when it has one) and reaps a child
// still running, so none outlives its owner.
class Subprocess {
 public:
  // Starts the child. Never throws: a child that cannot start (no such program, a missing
  // working directory, an output file that cannot be opened) has started() false,
  // start_error() saying why and exit code 127.
  explicit Subprocess(const SpawnOptions& options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  bool started() const { return start_error_.empty(); }
  const std::string& start_error() const { return start_error_; }
  int start_errno() const { return start_errno_; }  // the errno behind start_error()
  pid_t pid() const { return pid_; }                // -1 when it failed before a process existed
  // What keeps the child's processes from outliving it: "pid-namespace", "process-group only"
  // with why no namespace ("process-group only: cannot create a PID namespace: ..."), or
  // "none" without a group of its own.
  const std::string& containment() const { return containment_; }
  // The file the child's stderr goes to (Stream::kFile), open in this process: the very file
  // the child writes, whatever is renamed or removed at its name later; -1 without one.
  int err_file_fd() const { return err_file_fd_; }

  // The next line on the pipe, without its newline; nullopt at the end of the output or at the
  // deadline. For a child that speaks a line protocol on stdout.
  // A line longer than kMaxReadLineBytes comes back as its first kMaxReadLineBytes bytes, and
  // the rest of it up to its newline is discarded: no tail of it ever reads as a line.
  std::optional<std::string> ReadLine(ProcessClock::time_point deadline);
  // Whether the pipe has ended (every process holding its write end closed it or exited).
  bool output_ended() const { return out_fd_ < 0; }
  // Whether the child itself has exited (reaped; what it started may still run).
  bool Exited() { return Reap(false); }
  // SIGKILLs every process of this user that still holds the write end of the pipe (found
  // through /proc/*/fd): a child that left the process group with setsid and kept stdout. True
  // when there was one. For a child without a PID namespace of its own.
  bool KillPipeHolders();
  // Waits for the child to exit until `deadline`, reading the pipe into the tail meanwhile so
  // that a chatty child never blocks. Returns its exit code, or nullopt at the deadline (the
  // child still runs). ProcessClock::time_point::max() waits as long as it takes.
  std::optional<int> Wait(ProcessClock::time_point deadline);
  // Ends the child: SIGTERM, up to `grace` for it to exit, then SIGKILL (to the group when it
  // has one); reaps it and returns the exit code. A zero grace is SIGKILL at once.
  int Stop(std::chrono::milliseconds grace);
  void Kill() { Stop(std::chrono::milliseconds(0)); }
  // After the child exited: true when its own group still holds processes it left behind,
  // which are then SIGKILLed. False without a group of its own.
  bool KillLeftovers();
  // Reads what the pipe still holds into the tail, until its end or `until`.
  void DrainOutput(ProcessClock::time_point until);
  const OutputTail& tail() const { return tail_; }
  // The stop signal forwarded to the child (forward_stop_signals), 0 when none came.
  int stop_signal() const { return forwarding_ ? forwarding_->received() : 0; }

 private:
  void Spawn(const SpawnOptions& options);
  bool Reap(bool block);
  // Reads what the pipe has into `buffer`, waiting up to `wait`; 0 when nothing came. Closes
  // the pipe at its end.
  size_t ReadChunk(std::chrono::milliseconds wait, char* buffer, size_t size);
  void ReadIntoTail(std::chrono::milliseconds wait);
  void Fail(const std::string& why, int error);

  pid_t pid_ = -1;
  bool own_group_ = false;
  std::string containment_ = "none";
  int out_fd_ = -1;          // the read end of the pipe, -1 without one or once it ended
  int init_report_fd_ = -1;  // with a PID namespace: our init's word on leftovers
  int err_file_fd_ = -1;     // the child's stderr file (Stream::kFile), kept open
  std::string start_error_;
  int start_errno_ = 0;
  std::optional<int> exit_code_;
  std::string unread_;       // what ReadLine read past the line it returned
  size_t scanned_ = 0;       // how much of unread_ is known to hold no newline
  bool discarding_ = false;  // dropping the rest of an over-long line up to its newline
  uint64_t pipe_inode_ = 0;  // the pipe's inode, for KillPipeHolders
  OutputTail tail_;
  std::unique_ptr<StopSignalForwarding> forwarding_;  // forward_stop_signals
};

// How long a RunProcess may take.
struct RunLimits {
  double timeout_s = 0;                        // 0: no limit
  std::chrono::milliseconds term_grace{2000};  // between SIGTERM and SIGKILL
};

// A child run to its end.
struct ProcessRun {
  bool started = false;
  std::string start_error;  // why it could not be started
  int exit_code = kCannotStart;
  bool timed_out = false;       // stopped because it ran past the timeout
  double duration_s = 0;        // from the start until it exited or was stopped
  bool left_processes = false;  // its own group (or PID namespace) outlived it and was killed
  std::string containment;      // Subprocess::containment()
  std::string output;           // the tail of the pipe
  int output_lines = 0;         // lines on the pipe in all
  int stop_signal = 0;          // Subprocess::stop_signal()
};

// Starts a child, waits for it within the limits, and kills what it left in its own group.
ProcessRun RunProcess(const SpawnOptions& options, const RunLimits& limits = {});

}  // namespace trainlock
