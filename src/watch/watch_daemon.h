// The long-running watch of a node (`trainlock watch` without --replay): follows the kernel
// log as it is written (kmsg_follower.h) and NVML's events and readings (nvml_source.h), judges
// each record with the event table as the replay does (replay.h's RecordJudge; an XidCritical
// event of NVML through the same judge, so one fault both report is one decision), keeps the node's
// revocation record (node_record.h) and, on a revoking event the node's report does not already
// postdate, revokes the node through its scheduler (revoke_action.h). SIGTERM, SIGINT and SIGHUP
// end it between two polls.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

#include "compat/gpu_events.h"
#include "watch/node_record.h"
#include "watch/revoke_action.h"

namespace trainlock {

// --nvml: auto (NVML when it loads: one line on stderr when not, then the kernel log only),
// off, require (the watch does not start without it: exit 3).
enum class NvmlMode { kAuto, kOff, kRequire };

struct WatchDaemonOptions {
  std::filesystem::path kmsg;       // /dev/kmsg, or a FIFO or file in its form (--kmsg)
  std::filesystem::path state_dir;  // where the node's record lives
  RevokeOptions revoke;             // the node's name, its reports, the scheduler, the breaker
  NvmlMode nvml = NvmlMode::kAuto;
  std::chrono::milliseconds nvml_interval{10000};  // how often NVML's readings are taken
};

// An event's UTC time from its kernel time (microseconds since boot as printk counts them,
// CLOCK_MONOTONIC's clock): now less how long ago it was logged; now when it has none or lies
// in the future. A record read again after a restart gets the same time, give or take the
// clocks' drift, so it is recognised (IsRecordedAgain).
int64_t EventUtcMicros(std::optional<int64_t> kernel_time_us);

// Whether `event` is already the record's revocation or older than it (read again from the
// kernel's buffer after a restart): within kSameEventSlackUs of the recorded one, same device
// and code, or before it. Such an event changes nothing and revokes nothing again.
inline constexpr int64_t kSameEventSlackUs = 2000000;
bool IsRecordedAgain(const NodeRecord& record, const RecordedEvent& event);

// Follows the log until its end (a FIFO's writers gone, a file's end: exit 0, after a last
// reading of NVML) or a stop signal (128 + the signal). Decisions and actions go to `out`, one line
// each; a tripped breaker to `err` and syslog. Throws Failure (exit 3) when the log cannot be read
// or NVML is required and cannot be used, InputError (exit 2) for a record under state_dir that
// does not read.
int RunWatchDaemon(const WatchDaemonOptions& options, const GpuEventTable& table, std::ostream& out,
                   std::ostream& err);

}  // namespace trainlock
