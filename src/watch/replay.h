// Replaying a saved kernel log (kmsg records or dmesg/journal lines) through the event table:
// what `trainlock watch --replay FILE` prints, and what the replay suite
// (tests/fixtures/kmsg/) compares with each trace's expected outcome.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
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
  // Decisions by class (revoke, revalidate, info): what the summary counts, also where the
  // live watch keeps no list of its decisions.
  uint64_t by_class[3] = {0, 0, 0};
  bool revoked() const;
};

// Judges kernel records one at a time, for the replay and the live watch alike: each record's
// NVIDIA line, counted in `result` (refused, not from the kernel, events), judged through one
// EventJudge so storms fold across records.
class RecordJudge {
 public:
  explicit RecordJudge(const GpuEventTable& table) : judge_(table) {}
  // The decision `record` makes; nullopt for no event, a refused or forged line, or a repeat.
  std::optional<Decision> Take(const KernelRecord& record, ReplayResult& result);
  // The decision for an event another source saw (NVML's XidCritical event), at kernel time
  // `time_us`: the same judge, so one fault both sources report is one decision.
  std::optional<Decision> TakeEvent(const NvidiaEvent& event, int64_t time_us,
                                    ReplayResult& result);
  uint64_t suppressed() const { return judge_.suppressed(); }

 private:
  EventJudge judge_;
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
