// The watch's NVML source: on a thread of its own, NVML's events of every GPU (XidCritical,
// double- and single-bit ECC; nvmlEventSetWait_v2 with a bounded wait, so a stop is seen within
// kNvmlEventWaitMs) and, at an interval, each GPU's memory health read against the baseline of
// the node's last passing report (gpu_health_reading.h). What it sees is handed to the watch's
// single-threaded loop through a bounded queue and a pipe the loop polls beside the kernel log:
// a full queue makes the NVML thread wait (NVML keeps its events meanwhile), never grow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compat/gpu_events.h"
#include "watch/nvml_baseline.h"

namespace trainlock {

// How long one wait for an NVML event lasts: the longest a stop waits to be seen by the thread.
inline constexpr unsigned kNvmlEventWaitMs = 250;
// How many observations wait for the loop at most.
inline constexpr size_t kMaxNvmlQueue = 64;

// What NVML showed of one GPU.
struct NvmlObservation {
  unsigned index = 0;
  std::string pci;
  bool xid = false;  // an XidCritical event: `code` is its Xid (999: NVML did not know it)
  int64_t code = 0;
  NvmlCondition condition = NvmlCondition::kDbeEvent;  // when not an Xid
  std::string detail;  // NVML's reading, for people and the record's line
};

class NvmlSource {
 public:
  // Loads NVML (base/nvml_library.h); unavailable_reason() says why it cannot be used.
  NvmlSource();
  ~NvmlSource();
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  const std::string& unavailable_reason() const { return unavailable_reason_; }

  // Opens every GPU, registers the events each supports (one that supports none is named in
  // the notes, its readings still taken) and starts the thread.
  void Start(std::chrono::milliseconds interval, NvmlBaseline baseline);
  // The GPUs opened, and one line per thing the watch should say once (events not supported).
  size_t gpu_count() const;
  std::vector<std::string> notes() const;

  // The fd that is readable when observations wait (-1 before Start).
  int wake_fd() const;
  // The observations handed over since the last call, oldest first.
  std::vector<NvmlObservation> Take();
  // A last reading of every GPU and every event NVML still holds, each handed to `sink`, then
  // the thread ends: at the end of a --kmsg file, so that what NVML shows by then is judged too.
  void Finish(const std::function<void(NvmlObservation&&)>& sink);
  // Ends the thread. One stuck in a driver call is left behind after two seconds, NVML still
  // loaded: the process is ending.
  void Stop();

  struct Shared;  // what the thread and the loop share (nvml_source.cc)

 private:
  void EndThread(bool finish, const std::function<void(NvmlObservation&&)>& sink);

  std::string unavailable_reason_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
};

}  // namespace trainlock
