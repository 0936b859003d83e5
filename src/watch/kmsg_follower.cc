// Following the kernel log; see kmsg_follower.h.
#include "watch/kmsg_follower.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/exit_code.h"
#include "base/failure.h"

namespace trainlock {
namespace {

// /dev/kmsg refuses (EINVAL) a read into a buffer smaller than the record; the kernel's records
// are at most about 8 KiB with their continuation lines.
constexpr size_t kReadBufferBytes = 2 * kMaxRecordBytes;

}  // namespace

KmsgFollower::KmsgFollower(const std::filesystem::path& path) : display_(path.string()) {
  fd_ = ScopedFd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd_.valid()) {
    throw Failure(display_ + ": cannot open the kernel log: " + std::strerror(errno) +
                      " (/dev/kmsg needs root or CAP_SYSLOG where kernel.dmesg_restrict is 1)",
                  kExitEnvironment);
  }
}

// Splits what was read into whole lines: the lines up to the last newline go to the record
// reader (a /dev/kmsg read is one whole record with its continuation lines); the rest waits for
// its newline, cut at the record cap so that a writer without newlines cannot grow it.
void KmsgFollower::Deliver(std::string_view text, const std::function<void(KernelRecord&&)>& sink) {
  pending_.append(text);
  const size_t last = pending_.rfind('\n');
  if (last == std::string::npos) {
    if (pending_.size() <= kMaxRecordBytes) return;
    pending_.push_back('\n');  // cut: read as far as it goes, the reader counts it truncated
  }
  const size_t end = last == std::string::npos ? pending_.size() : last + 1;
  const uint64_t lines_before = counts_.lines;
  KernelLogCounts chunk;
  ReadKernelLog(
      std::string_view(pending_).substr(0, end),
      [&](KernelRecord&& record) {
        record.line += lines_before;
        sink(std::move(record));
      },
      chunk);
  counts_.lines += chunk.lines;
  counts_.records += chunk.records;
  counts_.truncated += chunk.truncated;
  counts_.refused += chunk.refused;
  for (uint64_t line : chunk.refused_lines) {
    if (counts_.refused_lines.size() < kMaxRefusedLinesKept)
      counts_.refused_lines.push_back(line + lines_before);
  }
  pending_.erase(0, end);
}

FollowState KmsgFollower::Poll(std::chrono::milliseconds timeout,
                               const std::function<void(KernelRecord&&)>& sink, int wake_fd) {
  pollfd waiting[2] = {{fd_.get(), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  const int ready = ::poll(waiting, wake_fd >= 0 ? 2 : 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return FollowState::kIdle;  // timeout, or EINTR: the caller looks at signals
  if (waiting[0].revents == 0) return FollowState::kIdle;  // only the other source woke it
  std::string buffer(kReadBufferBytes, '\0');
  FollowState state = FollowState::kIdle;
  for (int i = 0; i < kMaxReadsPerPoll; ++i) {
    const ssize_t n = ::read(fd_.get(), buffer.data(), buffer.size());
    if (n > 0) {
      Deliver(std::string_view(buffer.data(), static_cast<size_t>(n)), sink);
      state = FollowState::kRead;
      continue;
    }
    if (n == 0) {
      if (!pending_.empty()) Deliver("\n", sink);
      return FollowState::kEnded;
    }
    if (errno == EPIPE) {  // the kernel overwrote records we had not read: count them, go on
      ++overwritten_;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return state;
    throw Failure(display_ + ": reading the kernel log: " + std::strerror(errno), kExitEnvironment);
  }
  return state;
}

}  // namespace trainlock
