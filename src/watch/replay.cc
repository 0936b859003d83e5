// Replaying a saved kernel log; see replay.h.
#include "watch/replay.h"

#include <cstdio>

#include "base/diagnostic.h"
#include "base/file_io.h"

namespace trainlock {
namespace {

std::string TimeText(const Decision& d) {
  if (!d.time_us) return "at line " + std::to_string(d.line);
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "at %lld.%06lld s",
                static_cast<long long>(*d.time_us / 1000000),
                static_cast<long long>(*d.time_us % 1000000));
  return buffer;
}

uint64_t CountClass(const ReplayResult& result, EventClass c) {
  return result.by_class[static_cast<int>(c)];
}

}  // namespace

bool ReplayResult::revoked() const {
  for (const Decision& d : decisions) {
    if (d.event_class == EventClass::kRevoke) return true;
  }
  return false;
}

std::optional<Decision> RecordJudge::Take(const KernelRecord& record, ReplayResult& result) {
  NvidiaLine line = ParseNvidiaLine(record.message);
  if (line.kind == LineKind::kOther) return std::nullopt;
  if (!record.from_kernel) {
    ++result.not_from_kernel;
    return std::nullopt;
  }
  if (line.kind == LineKind::kRefused) {
    ++result.refused;
    if (result.refused_lines.size() < kMaxRefusedLinesKept)
      result.refused_lines.push_back(record.line);
    return std::nullopt;
  }
  ++result.events;
  std::optional<Decision> decision = judge_.Judge(line.event, record.time_us, record.line);
  if (decision) ++result.by_class[static_cast<int>(decision->event_class)];
  return decision;
}

std::optional<Decision> RecordJudge::TakeEvent(const NvidiaEvent& event, int64_t time_us,
                                               ReplayResult& result) {
  ++result.events;
  std::optional<Decision> decision = judge_.Judge(event, time_us, 0);
  if (decision) ++result.by_class[static_cast<int>(decision->event_class)];
  return decision;
}

ReplayResult ReplayKernelLog(std::string_view text, const std::string& display,
                             const GpuEventTable& table) {
  ReplayResult result;
  RecordJudge judge(table);
  ReadKernelLog(
      text,
      [&](KernelRecord&& record) {
        if (auto decision = judge.Take(record, result))
          result.decisions.push_back(std::move(*decision));
      },
      result.log);
  if (result.log.first_nul_line != 0) {
    throw InputError(Diagnostic{display,
                                {static_cast<int>(result.log.first_nul_line), 1},
                                "a NUL byte: this is no kernel log",
                                "give a saved /dev/kmsg, dmesg or journalctl -k output"});
  }
  result.suppressed = judge.suppressed();
  return result;
}

ReplayResult ReplayKernelLogFile(const std::filesystem::path& file, const GpuEventTable& table) {
  return ReplayKernelLog(ReadInputFile(file, file.string()), file.string(), table);
}

std::string DecisionLine(const Decision& d) {
  const bool gpu = d.event.device == DeviceKind::kGpu;
  return std::string(EventClassName(d.event_class)) + (gpu ? " gpu " : " nvswitch ") + d.event.pci +
         (d.event.sxid ? " SXid " : " Xid ") + std::to_string(d.event.code) + " (" + d.name + ") " +
         TimeText(d);
}

std::string ReplaySummary(const ReplayResult& r) {
  return std::to_string(r.log.records) + " records, " + std::to_string(r.events) +
         " NVIDIA events: " + std::to_string(CountClass(r, EventClass::kRevoke)) + " revoke, " +
         std::to_string(CountClass(r, EventClass::kRevalidate)) + " revalidate, " +
         std::to_string(CountClass(r, EventClass::kInfo)) + " info, " +
         std::to_string(r.suppressed) + " repeats folded; " +
         std::to_string(r.refused + r.log.refused) + " records refused, " +
         std::to_string(r.log.truncated) + " truncated, " + std::to_string(r.not_from_kernel) +
         " not from the kernel";
}

nlohmann::json ReplayJson(const ReplayResult& r, const std::string& file) {
  nlohmann::json decisions = nlohmann::json::array();
  for (const Decision& d : r.decisions) {
    decisions.push_back({{"class", EventClassName(d.event_class)},
                         {"device", d.event.device == DeviceKind::kGpu ? "gpu" : "nvswitch"},
                         {"pci", d.event.pci},
                         {"kind", d.event.sxid ? "sxid" : "xid"},
                         {"code", d.event.code},
                         {"name", d.name},
                         {"listed", d.listed},
                         {"time_s", d.time_us ? nlohmann::json(*d.time_us / 1e6) : nullptr},
                         {"line", d.line},
                         {"text", d.event.text}});
  }
  std::vector<uint64_t> refused = r.log.refused_lines;
  refused.insert(refused.end(), r.refused_lines.begin(), r.refused_lines.end());
  return {{"file", file},
          {"revoked", r.revoked()},
          {"decisions", decisions},
          {"counts",
           {{"lines", r.log.lines},
            {"records", r.log.records},
            {"events", r.events},
            {"suppressed", r.suppressed},
            {"refused", r.refused + r.log.refused},
            {"refused_lines", refused},
            {"truncated", r.log.truncated},
            {"not_from_kernel", r.not_from_kernel}}}};
}

}  // namespace trainlock
