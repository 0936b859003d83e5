// The kernel log as records: /dev/kmsg's records ("PRI,SEQ,TIMESTAMP_US,FLAGS;MESSAGE" with
// continuation lines " KEY=VALUE" under it, bytes escaped as \xNN) and dmesg/journal text lines
// ("[  12.345678] NVRM: ...", "May 18 19:02:39 host kernel: NVRM: ..."). Bounded: a record
// keeps at most kMaxRecordBytes and says it was cut; nothing read is ever unbounded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainlock {

// The kernel's own record limit is about 1 KiB (PRINTK_MESSAGE_MAX is 2 KiB); 8 KiB leaves room
// for continuation lines and escapes and still bounds a hostile line.
inline constexpr size_t kMaxRecordBytes = 8192;
// How many refused lines a reading keeps to name (the rest are only counted).
inline constexpr size_t kMaxRefusedLinesKept = 10;

struct KernelRecord {
  uint64_t line = 0;               // 1-based line of the source where the record starts
  std::optional<int64_t> time_us;  // kernel time since boot, when the source gives it
  std::string message;             // unescaped; at most kMaxRecordBytes
  std::vector<std::pair<std::string, std::string>> dict;  // kmsg " KEY=VALUE" lines
  bool truncated = false;  // a line or the record was longer than the cap
  // The kernel's own (syslog facility 0): userspace cannot write one to /dev/kmsg (the kernel
  // gives its writes LOG_USER), so only these can carry a driver's Xid. Text lines have no
  // facility; a journal line names its source ("kernel:") and others are not kernel lines.
  bool from_kernel = true;
};

// What reading refused or cut, for the summary.
struct KernelLogCounts {
  uint64_t lines = 0;
  uint64_t records = 0;
  uint64_t truncated = 0;
  uint64_t refused = 0;                 // a kmsg header whose numbers overflow or do not parse
  std::vector<uint64_t> refused_lines;  // the first few, to name them
  uint64_t first_nul_line = 0;          // 0 = none: a NUL byte means it is no text log at all
};

// Splits `text` into records, handing each to `sink` in order.
void ReadKernelLog(std::string_view text, const std::function<void(KernelRecord&&)>& sink,
                   KernelLogCounts& counts);

// One /dev/kmsg record (what one read() of /dev/kmsg returns, continuation lines included);
// nullopt when its header is not a kmsg header. `line` numbers it for messages.
std::optional<KernelRecord> ParseKmsgRecord(std::string_view record, uint64_t line);

}  // namespace trainlock
