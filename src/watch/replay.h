// Replaying a saved kernel log (kmsg records or dmesg/journal lines) through the event table:
// what `trainlock watch --replay FILE` prints, and what the replay suite
// (tests/fixtures/kmsg/) compares with each trace's expected outcome.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/gpu_events.h"
#include "watch/event_judge.h"
#include "watch/kernel_log.h"

namespace trainlock {

struct ReplayResult {
  std::vector<Decision> decisions;
  KernelLogCounts log;
  uint64_t events = 0;      // NVIDIA events recognised
  uint64_t suppressed = 0;  // repeats folded into an earlier decision
  uint64_t refused = 0;     // NVIDIA lines that did not parse (log.refused not included)
  std::vector<uint64_t> refused_lines;
  uint64_t not_from_kernel = 0;  // NVIDIA-looking kmsg records written by userspace
  bool revoked() const;
};

// Replays `text`, read from `display`; throws InputError naming display:line for a file that
// is no text log (a NUL byte).
ReplayResult ReplayKernelLog(std::string_view text, const std::string& display,
                             const GpuEventTable& table);

// Reads `file` (at most kMaxInputFileBytes; InputError when it cannot be read) and replays it.
ReplayResult ReplayKernelLogFile(const std::filesystem::path& file, const GpuEventTable& table);

// "revoke gpu 0000:3b:00 Xid 79 (fallen off the bus) at 12.345678 s" ("at line N" without a
// kernel time).
std::string DecisionLine(const Decision& decision);
// The counts in one line: "3 records, 2 NVIDIA events: 1 revoke, 0 revalidate, ...".
std::string ReplaySummary(const ReplayResult& result);
nlohmann::json ReplayJson(const ReplayResult& result, const std::string& file);

}  // namespace trainlock
