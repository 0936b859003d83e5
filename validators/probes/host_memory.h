// Host memory as the validator's workers see it: a process's peak resident set, the host's
// total, and whether the kernel's OOM killer ended a process of this cgroup. A worker killed
// by the OOM killer is a finding ("host memory exhausted" with the RSS it reached), not an
// unexplained exit 137.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace trainlock::validate {

// VmHWM of /proc/PID/status in bytes: the process's peak resident set; nullopt once it is gone.
std::optional<uint64_t> PeakRssBytes(pid_t pid);

// Physical memory of the host.
uint64_t HostMemoryBytes();

// MemAvailable of /proc/meminfo in bytes: what the host can give without swapping.
std::optional<uint64_t> AvailableMemoryBytes();

// What this process's cgroup (v2) and the cgroups above it may still take before their
// memory.max: the smallest over those with a limit of max - current + the page cache they could
// drop (memory.stat's file less shmem); nullopt when none has a limit or none is readable.
std::optional<uint64_t> CgroupFreeMemoryBytes();

// The oom_kill counter of this process's cgroup (v2 memory.events, or v1's
// memory.oom_control); nullopt when no counter is readable.
std::optional<uint64_t> CgroupOomKills();

// Samples a process's peak RSS (the largest of it and its children's) every 100 ms from
// construction until destruction, so that the value survives the process (a process the OOM killer
// ended has no /proc entry to read).
class RssSampler {
 public:
  explicit RssSampler(pid_t pid);
  ~RssSampler();
  RssSampler(const RssSampler&) = delete;
  RssSampler& operator=(const RssSampler&) = delete;
  uint64_t peak_bytes() const { return peak_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_{0};
  std::thread thread_;
};

// Why a worker that was SIGKILLed by someone other than the validator died: the OOM killer
// when the cgroup's oom_kill counter rose while it ran (or no counter exists and its peak RSS
// came within 10% of host memory), otherwise an outside SIGKILL.
std::string DescribeOutsideKill(const std::string& process, uint64_t peak_rss, uint64_t host_bytes,
                                std::optional<uint64_t> oom_kills_before,
                                std::optional<uint64_t> oom_kills_after);

}  // namespace trainlock::validate
