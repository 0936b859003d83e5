// Child process handling; see subprocess.h.
#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace trainlock::validate {

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  int err = ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err < 0) throw std::runtime_error(stderr_file.string() + ": " + std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the coordinator
    ::dup2(pipe_fds[1], 1);
    ::dup2(err, 2);
    int null_in = ::open("/dev/null", O_RDONLY);
    ::dup2(null_in, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  ::close(err);
  stdout_fd_ = pipe_fds[0];
}

Child::~Child() {
  if (!status_) Kill();
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

std::optional<std::string> Child::ReadLine(std::chrono::steady_clock::time_point deadline) {
  while (true) {
    if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stdout_fd_ < 0) return std::nullopt;
    pollfd p{stdout_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return std::nullopt;
    if (ready <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;  // end of output
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<int> Child::Wait(std::chrono::steady_clock::time_point deadline) {
  while (!status_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      Kill();
      return std::nullopt;
    }
    // Drain stdout so a chatty child never blocks on a full pipe.
    pollfd p{stdout_fd_, POLLIN, 0};
    if (stdout_fd_ >= 0 && ::poll(&p, 1, 20) > 0) {
      char chunk[4096];
      ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
      if (n > 0) buffer_.append(chunk, static_cast<size_t>(n));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return status_;
}

void Child::Kill() {
  if (status_ || pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string TailOfFile(const std::filesystem::path& file, int lines) {
  std::ifstream in(file);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::filesystem::path SelfExecutable() {
  return std::filesystem::read_symlink("/proc/self/exe");
}

}  // namespace trainlock::validate
