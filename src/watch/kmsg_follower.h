// Following the kernel log as it is written: /dev/kmsg (each read() returns one record, EPIPE
// when the kernel overwrote records before they were read), or for tests and benchmarks any
// FIFO or file in the same kmsg or dmesg form. Never blocks: the caller polls with a timeout,
// and each poll reads a bounded number of times into a bounded buffer.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "base/scoped_fd.h"
#include "watch/kernel_log.h"

namespace trainlock {

// What one Poll saw.
enum class FollowState {
  kIdle,   // nothing came within the timeout (or a signal woke the wait)
  kRead,   // something was read (records, if complete, went to the sink)
  kEnded,  // the end of the input: a FIFO's writers closed it, a regular file's end
};

class KmsgFollower {
 public:
  // Opens `path` for reading without blocking. Throws Failure (exit 3) when it cannot.
  explicit KmsgFollower(const std::filesystem::path& path);

  // Waits up to `timeout` for input, then reads what is there (at most kMaxReadsPerPoll reads)
  // and hands each complete record to `sink`. A readable `wake_fd` (another source's, -1 for
  // none) ends the wait too, as kIdle when the log has nothing: the caller looks at that source.
  FollowState Poll(std::chrono::milliseconds timeout,
                   const std::function<void(KernelRecord&&)>& sink, int wake_fd = -1);

  const KernelLogCounts& counts() const { return counts_; }
  // EPIPE reads: records the kernel overwrote in its ring buffer before this reader got them.
  uint64_t overwritten() const { return overwritten_; }

 private:
  void Deliver(std::string_view text, const std::function<void(KernelRecord&&)>& sink);

  std::string display_;
  ScopedFd fd_;
  std::string pending_;  // a line not yet ended by its newline (FIFO and file input)
  KernelLogCounts counts_;
  uint64_t overwritten_ = 0;
};

// One poll reads at most this many times: a flood of records yields to the caller's loop
// (stop signals, timeouts) between polls.
inline constexpr int kMaxReadsPerPoll = 256;

}  // namespace trainlock
