// Child process handling; see subprocess.h.
#include "support/worker_process.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "base/failure.h"

namespace trainlock::validate {
namespace {

SpawnOptions WorkerSpawnOptions(const std::vector<std::string>& argv,
                                const std::filesystem::path& stderr_file,
                                const ChildIsolation& isolation) {
  SpawnOptions o;
  o.env = isolation.env;
  o.clean_env = isolation.clean_env;
  o.own_group = isolation.own_group;
  o.own_pid_namespace = isolation.own_pid_namespace;
  o.cwd = isolation.cwd;
  o.argv = argv;
  o.program = argv.at(0);    // a path: never looked up on PATH
  o.die_with_parent = true;  // never outlive the coordinator
  o.null_stdin = true;
  o.out = Stream::kPipe;
  o.err = Stream::kFile;
  o.err_file = stderr_file;
  // The work directory is one an engine writes to: what another process planted at this name
  // (a FIFO, a link) is replaced by a regular file when the child's stderr is opened.
  o.files_regular_only = true;
  return o;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
             const std::map<std::string, std::string>& env, bool own_group)
    : Child(argv, stderr_file, ChildIsolation{env, false, own_group, false, {}}) {}

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
             const ChildIsolation& isolation)
    : process_(WorkerSpawnOptions(argv, stderr_file, isolation)) {
  if (process_.pid() < 0) throw Failure(process_.start_error(), kExitEnvironment);
  // The very file the child writes: a name the engine removes or replaces later changes nothing.
  const int err_file = process_.err_file_fd();
  stderr_watch_fd_ = err_file >= 0 ? ::fcntl(err_file, F_DUPFD_CLOEXEC, 3) : -1;  // -1: unwatched
}

Child::~Child() {
  if (stderr_watch_fd_ >= 0) ::close(stderr_watch_fd_);
}

uint64_t Child::StderrBytes() const {
  struct stat st {};
  if (stderr_watch_fd_ < 0 || ::fstat(stderr_watch_fd_, &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_size);
}

std::optional<int> Child::Wait(std::chrono::steady_clock::time_point deadline) {
  constexpr auto kWatchSlice = std::chrono::milliseconds(200);
  while (true) {
    const auto slice = std::min(deadline, std::chrono::steady_clock::now() + kWatchSlice);
    if (std::optional<int> code = process_.Wait(slice)) {
      // A fast writer fills hundreds of MiB between two looks, and may then end by itself
      // (its own file-size limit, SIGXFSZ): it passed the cap all the same.
      stderr_capped_ = StderrBytes() > kMaxChildStderrBytes;
      return code;
    }
    if (StderrBytes() > kMaxChildStderrBytes) {
      stderr_capped_ = true;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  Kill();
  return std::nullopt;
}

std::string TailOfFile(const std::filesystem::path& file, int lines) {
  // Opened without following a link or blocking on a FIFO, and read only if a regular file:
  // the engine whose stderr this is may have replaced it with either.
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 || lines <= 0) {
    if (fd >= 0) ::close(fd);
    return "";
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return "";
  }
  const std::streamoff size = st.st_size;
  // Only the end is read: an engine's stderr may be hundreds of MiB, in one line or many.
  const std::streamoff from = std::max<std::streamoff>(0, size - kTailWindowBytes);
  std::string window(static_cast<size_t>(size - from), '\0');
  const ssize_t got = ::pread(fd, window.data(), window.size(), from);
  ::close(fd);
  window.resize(got > 0 ? static_cast<size_t>(got) : 0);
  if (!window.empty() && window.back() == '\n') window.pop_back();
  std::deque<std::string> tail;
  size_t end = window.size();
  while (static_cast<int>(tail.size()) < lines) {
    const size_t newline = end == 0 ? std::string::npos : window.rfind('\n', end - 1);
    const size_t begin = newline == std::string::npos ? 0 : newline + 1;
    // A line that began before the window is kept only when it is all there is.
    if (newline == std::string::npos && from > 0 && !tail.empty()) break;
    std::string line = window.substr(begin, end - begin);
    if (line.size() > kTailLineBytes) line = "..." + line.substr(line.size() - kTailLineBytes);
    tail.push_front(std::move(line));
    if (newline == std::string::npos) break;
    end = newline;
  }
  std::string out;
  for (const std::string& l : tail) out += (out.empty() ? "" : "\n") + l;
  return out;
}

}  // namespace trainlock::validate
