// Starting, watching and stopping child processes; see subprocess.h.
#include "base/subprocess.h"

#include "base/scoped_fd.h"
#include "base/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>
#include <utility>

#include "base/program_path.h"

namespace trainlock {
namespace {

using std::chrono::milliseconds;

// How long one poll waits: the delay before a child's exit is noticed while its pipe is quiet.
constexpr milliseconds kPollSlice(20);
// How long the output of a finished child may take to arrive, when something it left behind
// still holds the pipe.
constexpr milliseconds kFinalDrain(500);

milliseconds Slice(ProcessClock::duration left) {
  return std::min(std::chrono::ceil<milliseconds>(left), kPollSlice);
}

std::string ErrorText(int error) {
  return std::strerror(error);
}

// A file descriptor closed when it goes out of scope (base/scoped_fd.h).
using Fd = ScopedFd;

// Moves a new descriptor above 0-2: in a parent whose stdin, stdout or stderr is closed, it
// could otherwise land on the very number the child's redirection overwrites.
Fd AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return Fd(fd);
  Fd low(fd);
  return Fd(::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
}

// Each returns 0, or the errno of what failed.
int MakePipe(Fd* read_end, Fd* write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno;
  *read_end = AboveStdio(fds[0]);
  *write_end = AboveStdio(fds[1]);
  return read_end->get() >= 0 && write_end->get() >= 0 ? 0 : errno;
}

int OpenForChild(const std::filesystem::path& file, int flags, Fd* fd, bool regular_only = false) {
  if (!regular_only) {
    *fd = AboveStdio(::open(file.c_str(), flags | O_CLOEXEC, 0644));
    return fd->get() < 0 ? errno : 0;
  }
  // Bounded: another process may plant a FIFO or a link at the name again and again.
  int e = EINVAL;
  for (int attempt = 0; attempt < kPlantedFileAttempts; ++attempt) {
    const int exclusive = attempt > 0 ? O_EXCL : 0;  // after a removal: only a file of ours
    *fd = AboveStdio(
        ::open(file.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | exclusive | O_CLOEXEC, 0644));
    e = fd->get() < 0 ? errno : 0;
    struct stat st {};
    if (e == 0 && ::fstat(fd->get(), &st) == 0 && S_ISREG(st.st_mode)) return 0;
    if (e == 0) {
      fd->Reset();
      e = EINVAL;  // not a regular file
    }
    // ENXIO: a FIFO no one reads; ELOOP: a symbolic link; EEXIST: planted again since.
    const bool planted = e == EINVAL || e == ENXIO || e == ELOOP || e == EEXIST;
    if (!planted || (flags & O_CREAT) == 0) return e;
    if (e != EEXIST && ::unlink(file.c_str()) != 0 && errno != ENOENT) return e;
  }
  return e;
}

// The descriptors the child's stdin, stdout and stderr become, opened by the parent so that
// an unopenable file is reported before anything starts.
struct ChildStreams {
  Fd in, out_file, err_file, pipe_write;

  int Target(Stream stream, const Fd& file) const {
    switch (stream) {
      case Stream::kInherit:
        return -1;
      case Stream::kPipe:
        return pipe_write.get();
      case Stream::kFile:
        return file.get();
    }
    return -1;
  }
};

// Why a child could not start, and the errno behind it.
struct StartFailure {
  std::string why;
  int error;
};

// Opens what the child's streams need (before fork, so that a failure is reported before
// anything starts): /dev/null, the output files, the pipe.
std::optional<StartFailure> OpenStreams(const SpawnOptions& o, ChildStreams* streams,
                                        Fd* pipe_read) {
  constexpr int kAppend = O_WRONLY | O_CREAT | O_APPEND;
  const struct {
    bool wanted;
    std::filesystem::path file;
    int flags;
    Fd* fd;
  } files[] = {{o.null_stdin, "/dev/null", O_RDONLY, &streams->in},
               {o.out == Stream::kFile, o.out_file, kAppend, &streams->out_file},
               {o.err == Stream::kFile, o.err_file, kAppend, &streams->err_file}};
  for (const auto& f : files) {
    if (!f.wanted) continue;
    const bool regular_only = f.fd != &streams->in && o.files_regular_only;
    if (int e = OpenForChild(f.file, f.flags, f.fd, regular_only)) {
      const std::string why = !regular_only ? ErrorText(e)
                              : e == ELOOP  ? "is a symbolic link; refused"
                              : e == EINVAL ? "not a regular file; refused"
                                            : ErrorText(e);
      return StartFailure{f.file.string() + ": " + why, e};
    }
  }
  if (o.out == Stream::kPipe || o.err == Stream::kPipe) {
    if (int e = MakePipe(pipe_read, &streams->pipe_write)) {
      return StartFailure{"pipe failed: " + ErrorText(e), e};
    }
  }
  return std::nullopt;
}

// This process's environment with `changes` applied, as NAME=VALUE entries.
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& changes,
                                          bool clean) {
  std::vector<std::string> env;
  for (char** entry = clean ? nullptr : environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (changes.count(std::string(text.substr(0, text.find('=')))) == 0) env.emplace_back(text);
  }
  for (const auto& [name, value] : changes) env.push_back(name + "=" + value);
  return env;
}

// The PATH that argv[0] is looked up on: the child's own.
std::string ChildPath(const std::map<std::string, std::string>& changes, bool clean) {
  if (auto it = changes.find("PATH"); it != changes.end()) return it->second;
  if (clean) return kDefaultPath;
  const char* path = std::getenv("PATH");
  return path ? path : kDefaultPath;
}

std::vector<char*> Pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Everything the child does between fork() and exec(), prepared before fork(): the child then
// only makes async-signal-safe system calls and allocates nothing, which is what POSIX allows
// in the child of a threaded process.
struct ExecPlan {
  ExecPlan(const SpawnOptions& o, const ChildStreams& streams)
      : files(o.program.empty() ? ProgramCandidates(o.argv[0], ChildPath(o.env, o.clean_env))
                                : std::vector<std::string>{o.program}),
        env(ChildEnvironment(o.env, o.clean_env)),
        file_ptrs(Pointers(files)),
        argv(Pointers(o.argv)),
        envp(Pointers(env)),
        cwd(o.cwd.empty() ? nullptr : o.cwd.c_str()),
        in_fd(streams.in.get()),
        out_fd(streams.Target(o.out, streams.out_file)),
        err_fd(streams.Target(o.err, streams.err_file)),
        own_group(o.own_group),
        die_with_parent(o.die_with_parent) {
    // A file without #! runs under the shell, as execvp does: /bin/sh FILE ARGS...
    shell_argv = {const_cast<char*>("/bin/sh"), nullptr};
    shell_argv.insert(shell_argv.end(), argv.begin() + 1, argv.end());
  }

  std::vector<std::string> files;  // what to try to execute, in order
  std::vector<std::string> env;
  std::vector<char*> file_ptrs, argv, envp, shell_argv;
  const char* cwd;
  int in_fd, out_fd, err_fd;  // -1: keep this process's
  bool own_group, die_with_parent;
};

// What failed in the child before exec, sent to the parent on a close-on-exec pipe: the
// parent reads end-of-file when exec succeeded.
struct ChildFailure {
  enum Step : int { kRedirect, kChdir, kExec, kInit } step;
  int error;
};

[[noreturn]] void ReportAndExit(int status_fd, ChildFailure::Step step, int error) {
  const ChildFailure failure{step, error};
  (void)!::write(status_fd, &failure, sizeof failure);
  ::_exit(kCannotStart);
}

bool Redirect(int fd, int target) {
  return fd < 0 || ::dup2(fd, target) == target;
}

// The child after fork(). Tries each candidate file as execvp would: a missing one passes to
// the next, a denied one too but is remembered, any other error ends the search.
[[noreturn]] void ExecChild(ExecPlan& plan, int status_fd) {
  if (plan.own_group) ::setpgid(0, 0);
  if (plan.die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!Redirect(plan.in_fd, STDIN_FILENO) || !Redirect(plan.out_fd, STDOUT_FILENO) ||
      !Redirect(plan.err_fd, STDERR_FILENO)) {
    ReportAndExit(status_fd, ChildFailure::kRedirect, errno);
  }
  if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) {
    ReportAndExit(status_fd, ChildFailure::kChdir, errno);
  }
  bool denied = false;
  int missing = ENOENT;
  for (char* file : plan.file_ptrs) {
    if (file == nullptr) break;
    ::execve(file, plan.argv.data(), plan.envp.data());
    if (errno == ENOEXEC) {
      plan.shell_argv[1] = file;
      ::execve(plan.shell_argv[0], plan.shell_argv.data(), plan.envp.data());
    }
    const int error = errno;
    if (error == EACCES) {
      denied = true;
    } else if (error == ENOENT || error == ENOTDIR || error == ESTALE || error == ENODEV ||
               error == ETIMEDOUT) {
      missing = error;
    } else {
      ReportAndExit(status_fd, ChildFailure::kExec, error);
    }
  }
  ReportAndExit(status_fd, ChildFailure::kExec, denied ? EACCES : missing);
}

// fork() as the bare system call, with clone flags: no stack, so the child goes on with a copy
// of this one as after fork. Unlike glibc's fork it runs no atfork handlers, which in a child
// of a threaded process could wait forever on a lock another thread held at the copy.
pid_t RawFork(unsigned long flags) {
  return static_cast<pid_t>(::syscall(SYS_clone, flags | SIGCHLD, 0L, 0L, 0L, 0L));
}

// The descriptors of a child in a PID namespace of its own: `sync` ends (end-of-file) once the
// parent has written the user namespace's ID maps; `report` gets one byte when the program has
// ended, 'L' when it left processes running, '-' when not.
struct InitFds {
  int sync_read = -1, sync_write = -1, report_write = -1;
};

// Closes every descriptor from 3 up except `keep`: init never execs, so close-on-exec does not
// close the parent's other pipes in it, and holding them would keep their readers waiting.
void CloseAllExcept(int keep) {
  const auto close_range = [](unsigned first, unsigned last) {
    if (first > last) return;
    if (::syscall(SYS_close_range, first, last, 0u) == 0) return;
    for (unsigned fd = first; fd <= std::min(last, 4095u); ++fd) ::close(static_cast<int>(fd));
  };
  close_range(3, static_cast<unsigned>(keep) - 1);
  close_range(static_cast<unsigned>(keep) + 1, ~0u);
}

// Process 1 of the child's PID namespace, in the child after clone(): starts the program in
// its own group, reaps what the program orphans (init inherits them) until the program ends,
// then says whether any still ran and exits with the program's code. Its exit makes the kernel
// SIGKILL everything left in the namespace, setsid or not. Async-signal-safe calls only.
[[noreturn]] void RunInit(ExecPlan& plan, int status_fd, const InitFds& fds) {
  // Forked from a validator that may be process 1 itself, it never execs: without this it would
  // keep that process's stop handler and end at the parent's SIGTERM, giving the program no grace.
  RestoreDefaultStopSignals();
  ::close(fds.sync_write);
  char byte;
  while (::read(fds.sync_read, &byte, 1) < 0 && errno == EINTR) {
  }
  ::setpgid(0, 0);
  if (plan.die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  plan.own_group = false;        // the program stays in init's group, which the parent signals
  plan.die_with_parent = false;  // it dies with init, and init with the parent
  const pid_t program = RawFork(0);
  if (program == 0) ExecChild(plan, status_fd);
  if (program < 0) ReportAndExit(status_fd, ChildFailure::kInit, errno);
  CloseAllExcept(fds.report_write);
  int status = 0;
  for (;;) {
    int s = 0;
    const pid_t r = ::waitpid(-1, &s, 0);
    if (r == program) {
      status = s;
      break;
    }
    if (r < 0 && errno != EINTR) break;
  }
  pid_t r;
  while ((r = ::waitpid(-1, nullptr, WNOHANG)) > 0) {
  }
  const char left = r == 0 ? 'L' : '-';  // 0: children that have not ended
  (void)!::write(fds.report_write, &left, 1);
  ::kill(-1, SIGKILL);  // in a PID namespace: everyone in it but init
  ::_exit(ExitCodeOf(status));
}

// fork() into a new PID namespace. Tries CLONE_NEWPID alone (privileged: the program keeps its
// capabilities over the host's files), then with CLONE_NEWUSER (unprivileged). -1 with errno
// when neither is allowed (a container's seccomp profile, no user namespaces); `user` says
// whether a user namespace was made.
pid_t ForkIntoPidNamespace(bool* user) {
  *user = false;
  const pid_t pid = RawFork(CLONE_NEWPID);
  if (pid >= 0 || (errno != EPERM && errno != EINVAL)) return pid;
  *user = true;
  return RawFork(CLONE_NEWUSER | CLONE_NEWPID);
}

// Maps this process's user and group to themselves in the child's new user namespace, so that
// the program runs as whoever started it rather than as the overflow IDs. Best effort: without
// the maps it still runs.
void MapOwnIds(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  const auto put = [&](const char* file, const std::string& text) {
    Fd fd(::open((proc + file).c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() >= 0) (void)!::write(fd.get(), text.data(), text.size());
  };
  const std::string uid = std::to_string(::geteuid()), gid = std::to_string(::getegid());
  put("uid_map", uid + " " + uid + " 1");
  put("setgroups", "deny");  // before gid_map, or the kernel refuses it
  put("gid_map", gid + " " + gid + " 1");
}

// A child started as init of a new PID namespace (pid -1 when none could be made), the read
// end of its report, and what contains it.
struct NamespaceChild {
  pid_t pid = -1;
  Fd report;
  std::string containment;
};

NamespaceChild SpawnInPidNamespace(ExecPlan& plan, int status_fd) {
  NamespaceChild child;
  Fd sync_read, sync_write, report_write;
  int e = MakePipe(&sync_read, &sync_write);
  if (e == 0) e = MakePipe(&child.report, &report_write);
  bool user = false;
  if (e == 0) {
    child.pid = ForkIntoPidNamespace(&user);
    if (child.pid == 0)
      RunInit(plan, status_fd, {sync_read.get(), sync_write.get(), report_write.get()});
    if (child.pid < 0) e = errno;
  }
  if (child.pid < 0) {
    child.pid = -1;
    child.report.Reset();
    child.containment = "process-group only: cannot create a PID namespace: " + ErrorText(e);
    return child;
  }
  child.containment = "pid-namespace";
  if (user) MapOwnIds(child.pid);
  sync_write.Reset();  // init goes on
  ::fcntl(child.report.get(), F_SETFL, O_NONBLOCK);
  return child;
}

// Reads the child's report from the status pipe; false at end-of-file (exec succeeded).
bool ReadChildFailure(int status_fd, ChildFailure* failure) {
  ssize_t n;
  while ((n = ::read(status_fd, failure, sizeof *failure)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(sizeof *failure);
}

std::string Describe(const ChildFailure& failure, const SpawnOptions& o) {
  const std::string why = ErrorText(failure.error);
  switch (failure.step) {
    case ChildFailure::kRedirect:
      return "cannot redirect the output: " + why;
    case ChildFailure::kChdir:
      return "cannot enter " + o.cwd.string() + ": " + why;
    case ChildFailure::kExec:
      return "cannot execute " + (o.program.empty() ? o.argv[0] : o.program) + ": " + why;
    case ChildFailure::kInit:
      return "cannot start a process in its PID namespace: " + why;
  }
  return why;
}

}  // namespace

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return -1;
}

Subprocess::Subprocess(const SpawnOptions& options)
    : own_group_(options.own_group || options.own_pid_namespace),
      tail_(options.tail_lines, options.tail_line_bytes) {
  Spawn(options);
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_) Kill();
  if (out_fd_ >= 0) ::close(out_fd_);
  if (init_report_fd_ >= 0) ::close(init_report_fd_);
  if (err_file_fd_ >= 0) ::close(err_file_fd_);
}

void Subprocess::Fail(const std::string& why, int error) {
  start_error_ = why;
  start_errno_ = error;
  exit_code_ = kCannotStart;
}

void Subprocess::Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Fail("no command", EINVAL);
  ChildStreams streams;
  Fd pipe_read, status_read, status_write;
  if (std::optional<StartFailure> failure = OpenStreams(o, &streams, &pipe_read)) {
    return Fail(failure->why, failure->error);
  }
  if (int e = MakePipe(&status_read, &status_write)) return Fail("pipe failed: " + ErrorText(e), e);
  ExecPlan plan(o, streams);
  plan.own_group = own_group_;
  // Before the fork: a Ctrl-C from now on is held until the group exists, never lost.
  if (o.forward_stop_signals && own_group_) forwarding_ = std::make_unique<StopSignalForwarding>();
  containment_ = own_group_ ? "process-group only" : "none";
  if (o.own_pid_namespace) {
    NamespaceChild child = SpawnInPidNamespace(plan, status_write.get());
    pid_ = child.pid;
    containment_ = child.containment;
    init_report_fd_ = child.report.release();
  }
  if (pid_ < 0) {
    pid_ = ::fork();
    if (pid_ == 0) ExecChild(plan, status_write.get());
  }
  if (pid_ < 0) {
    const int e = errno;
    pid_ = -1;
    return Fail("fork failed: " + ErrorText(e), e);
  }
  if (own_group_) ::setpgid(pid_, pid_);  // here too, so the group exists before any kill
  if (forwarding_) forwarding_->To(pid_);
  status_write.Reset();
  streams.pipe_write.Reset();  // else the pipe never ends
  if (o.err == Stream::kFile && streams.err_file.get() >= 0)
    err_file_fd_ = ::fcntl(streams.err_file.get(), F_DUPFD_CLOEXEC, 3);
  out_fd_ = pipe_read.release();
  if (struct stat st{}; out_fd_ >= 0 && ::fstat(out_fd_, &st) == 0) pipe_inode_ = st.st_ino;
  ChildFailure failure{};
  if (ReadChildFailure(status_read.get(), &failure)) {
    Reap(true);
    Fail(Describe(failure, o), failure.error);
  }
}

bool Subprocess::Reap(bool block) {
  if (exit_code_) return true;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return false;
  // r < 0: someone else reaped it (SIGCHLD ignored); it is gone with no code to tell.
  exit_code_ = r == pid_ ? ExitCodeOf(status) : -1;
  return true;
}

size_t Subprocess::ReadChunk(milliseconds wait, char* buffer, size_t size) {
  pollfd p{out_fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(wait.count()));
  if (ready == 0 || (ready < 0 && errno == EINTR)) return 0;
  const ssize_t n = ready < 0 ? -1 : ::read(out_fd_, buffer, size);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (n <= 0) {  // the end of the output, or a pipe that cannot be read: either way, done
    ::close(out_fd_);
    out_fd_ = -1;
    return 0;
  }
  return static_cast<size_t>(n);
}

void Subprocess::ReadIntoTail(milliseconds wait) {
  if (out_fd_ < 0) {
    std::this_thread::sleep_for(wait);
    return;
  }
  char buffer[8192];
  tail_.Add(buffer, ReadChunk(wait, buffer, sizeof buffer));
}

std::optional<std::string> Subprocess::ReadLine(ProcessClock::time_point deadline) {
  char buffer[4096];
  while (true) {
    // Only what came since the last look is searched: a long line costs linear time.
    const size_t nl = unread_.find('\n', scanned_);
    scanned_ = nl == std::string::npos ? unread_.size() : 0;  // 0 once the front is erased
    if (discarding_) {  // the rest of a line already returned cut: dropped up to its newline
      unread_.erase(0, nl == std::string::npos ? unread_.size() : nl + 1);
      scanned_ = 0;
      discarding_ = nl == std::string::npos;
      if (!discarding_) continue;
    } else if (nl != std::string::npos) {
      std::string line = unread_.substr(0, nl);
      unread_.erase(0, nl + 1);
      return line;
    } else if (unread_.size() > kMaxReadLineBytes) {  // no newline in sight: cut, never grow
      std::string line = unread_.substr(0, kMaxReadLineBytes);
      unread_.erase(0, kMaxReadLineBytes);
      scanned_ = 0;
      discarding_ = true;
      return line;
    }
    const auto left = deadline - ProcessClock::now();
    if (left <= ProcessClock::duration::zero() || out_fd_ < 0) return std::nullopt;
    unread_.append(buffer, ReadChunk(Slice(left), buffer, sizeof buffer));
  }
}

std::optional<int> Subprocess::Wait(ProcessClock::time_point deadline) {
  while (!Reap(false)) {
    const auto left = deadline - ProcessClock::now();
    if (left <= ProcessClock::duration::zero()) return std::nullopt;
    if (out_fd_ < 0 && deadline == ProcessClock::time_point::max()) {
      Reap(true);  // nothing to read and no deadline: block in waitpid
    } else {
      ReadIntoTail(Slice(left));
    }
  }
  return exit_code_;
}

int Subprocess::Stop(milliseconds grace) {
  if (Reap(false)) return *exit_code_;
  const pid_t target = own_group_ ? -pid_ : pid_;
  if (grace.count() > 0) {
    ::kill(target, SIGTERM);
    if (std::optional<int> code = Wait(ProcessClock::now() + grace)) return *code;
  }
  ::kill(target, SIGKILL);
  Reap(true);
  return *exit_code_;
}

bool Subprocess::KillLeftovers() {
  if (!own_group_ || pid_ <= 0 || !exit_code_) return false;
  bool left = ::kill(-pid_, 0) == 0;
  ::kill(-pid_, SIGKILL);
  char word = 0;
  if (init_report_fd_ >= 0 && ::read(init_report_fd_, &word, 1) == 1 && word == 'L') left = true;
  return left;
}

bool Subprocess::KillPipeHolders() {
  if (pipe_inode_ == 0) return false;
  const std::string want = "pipe:[" + std::to_string(pipe_inode_) + "]";
  const pid_t self = ::getpid();
  bool found = false;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      if (std::filesystem::read_symlink(fd.path(), link_ec).string() != want) continue;
      found = ::kill(pid, SIGKILL) == 0 || found;
      break;
    }
  }
  return found;
}

void Subprocess::DrainOutput(ProcessClock::time_point until) {
  while (out_fd_ >= 0) {
    const auto left = until - ProcessClock::now();
    if (left <= ProcessClock::duration::zero()) return;
    ReadIntoTail(Slice(left));
  }
}

ProcessRun RunProcess(const SpawnOptions& options, const RunLimits& limits) {
  ProcessRun run;
  const auto start = ProcessClock::now();
  Subprocess child(options);
  if (!child.started()) {
    run.start_error = child.start_error();
    return run;
  }
  run.started = true;
  run.containment = child.containment();
  const auto deadline = limits.timeout_s > 0
                            ? start + std::chrono::duration_cast<ProcessClock::duration>(
                                          std::chrono::duration<double>(limits.timeout_s))
                            : ProcessClock::time_point::max();
  std::optional<int> code = child.Wait(deadline);
  if (!code) {
    run.timed_out = true;
    code = child.Stop(limits.term_grace);
  }
  run.exit_code = *code;
  run.duration_s = std::chrono::duration<double>(ProcessClock::now() - start).count();
  run.left_processes = child.KillLeftovers();  // before the drain: they may hold the pipe
  child.DrainOutput(ProcessClock::now() + kFinalDrain);
  run.output = child.tail().Text();
  run.output_lines = child.tail().total();
  run.stop_signal = child.stop_signal();
  return run;
}

}  // namespace trainlock
