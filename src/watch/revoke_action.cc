// Revoking a node through its scheduler, behind the circuit breaker; see revoke_action.h.
#include "watch/revoke_action.h"

#include <optional>
#include <set>
#include <vector>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "base/text_format.h"
#include "fleet/fleet.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

// What the scheduler says of its nodes, for the breaker.
struct FleetCount {
  bool known = false;
  std::string why;  // when not known
  int64_t gpu_nodes = 0;
  int64_t revoked_in_window = 0;  // other nodes revoked by trainlock within the window
};

std::vector<std::string> SchedulerFields(std::string_view text, char separator) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      fields.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return fields;
}

// A label key in a kubectl JSONPath: its dots escaped ("trainlock\\.io/revoked-at").
std::string JsonPathKey(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '.') out += '\\';
    out += c;
  }
  return out;
}

ProcessRun RunScheduler(const std::vector<std::string>& argv, double timeout_s) {
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.null_stdin = true;
  RunLimits limits;
  limits.timeout_s = timeout_s;
  return RunProcess(spawn, limits);
}

std::string RunFailure(const std::vector<std::string>& argv, const ProcessRun& run) {
  if (!run.started) return argv[0] + " could not start: " + run.start_error;
  if (run.timed_out) return argv[0] + " " + argv[1] + " timed out";
  std::string output = run.output;
  if (const size_t nl = output.find('\n'); nl != std::string::npos) output.resize(nl);
  return argv[0] + " " + argv[1] + " exited " + std::to_string(run.exit_code) +
         (output.empty() ? "" : ": " + output);
}

bool WithinWindow(std::optional<int64_t> at_us, int64_t now_us, int64_t window_s) {
  return at_us && now_us - *at_us <= window_s * 1000000 && *at_us <= now_us + 300000000;
}

// "20261207T190239Z", the revoked-at label (a label value holds no ':') and back.
std::string CompactUtc(int64_t at_us) {
  const std::string full = UtcMicrosText(at_us);  // 2026-12-07T19:02:39.123456Z
  return full.substr(0, 4) + full.substr(5, 2) + full.substr(8, 5) + full.substr(14, 2) +
         full.substr(17, 2) + "Z";
}

std::optional<int64_t> ParseCompactUtc(std::string_view text) {
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return std::nullopt;
  const std::string full = std::string(text.substr(0, 4)) + "-" + std::string(text.substr(4, 2)) +
                           "-" + std::string(text.substr(6, 2)) + "T" +
                           std::string(text.substr(9, 2)) + ":" + std::string(text.substr(11, 2)) +
                           ":" + std::string(text.substr(13, 2)) + ".000000Z";
  return ParseUtcMicros(full);
}

// sinfo: one line a node and partition, "NAME|GRES|REASON". A node counts as a GPU node when
// its generic resources name a gpu; a cluster that configures none counts every node.
FleetCount CountSlurm(const RevokeOptions& o, int64_t now_us) {
  const std::vector<std::string> argv = {"sinfo", "--noheader", "--Node", "--format=%N|%G|%300E"};
  const ProcessRun run = RunScheduler(argv, o.command_timeout_s);
  FleetCount count;
  if (run.exit_code != 0) {
    count.why = RunFailure(argv, run);
    return count;
  }
  std::set<std::string> seen;
  int64_t nodes = 0;
  for (const std::string& line : SchedulerFields(run.output, '\n')) {
    const std::vector<std::string> fields = SchedulerFields(line, '|');
    if (fields.size() < 3 || !seen.insert(fields[0]).second) continue;
    ++nodes;
    if (fields[1].find("gpu") != std::string::npos) ++count.gpu_nodes;
    const std::string reason = TrimBlanks(fields[2]);
    const std::string prefix = std::string(kNodeGateReasonPrefix) + " revoked ";
    const size_t at = reason.find(" at ");
    if (fields[0] == o.node || !reason.starts_with(prefix) || at == std::string::npos) continue;
    if (WithinWindow(ParseUtcMicros(std::string_view(reason).substr(at + 4, 27)), now_us,
                     o.breaker_window_s))
      ++count.revoked_in_window;
  }
  if (count.gpu_nodes == 0) count.gpu_nodes = nodes;
  count.known = nodes > 0;
  if (!count.known) count.why = "sinfo listed no node";
  return count;
}

// kubectl: "NAME<TAB>REVOKED-AT<TAB>GPUS" a node.
FleetCount CountKubernetes(const RevokeOptions& o, int64_t now_us) {
  const std::string jsonpath =
      std::string("jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.metadata.labels.") +
      JsonPathKey(kNodeLabelRevokedAt) +
      "}{\"\\t\"}{.status.capacity.nvidia\\.com/gpu}{\"\\n\"}{end}";
  const std::vector<std::string> argv = {"kubectl", "get", "nodes", "-o", jsonpath};
  const ProcessRun run = RunScheduler(argv, o.command_timeout_s);
  FleetCount count;
  if (run.exit_code != 0) {
    count.why = RunFailure(argv, run);
    return count;
  }
  int64_t nodes = 0;
  for (const std::string& line : SchedulerFields(run.output, '\n')) {
    const std::vector<std::string> fields = SchedulerFields(line, '\t');
    if (fields.empty() || fields[0].empty()) continue;
    ++nodes;
    if (fields.size() > 2 && !fields[2].empty() && fields[2] != "0") ++count.gpu_nodes;
    if (fields[0] != o.node && fields.size() > 1 &&
        WithinWindow(ParseCompactUtc(fields[1]), now_us, o.breaker_window_s))
      ++count.revoked_in_window;
  }
  if (count.gpu_nodes == 0) count.gpu_nodes = nodes;
  count.known = nodes > 0;
  if (!count.known) count.why = "kubectl listed no node";
  return count;
}

// The scheduler's commands that revoke the node; the first that fails says why.
std::string RunRevocation(const RevokeOptions& o, const RecordedEvent& event,
                          const NodeReport& report) {
  std::vector<std::vector<std::string>> commands;
  if (o.scheduler == Scheduler::kSlurm) {
    commands.push_back({"scontrol", "update", "NodeName=" + o.node, "State=DRAIN",
                        "Reason=" + RevocationReason(event, report)});
  } else {
    commands.push_back({"kubectl", "label", "node", o.node, "--overwrite",
                        std::string(kNodeLabelValidated) + "=revoked",
                        std::string(kNodeLabelRevokedAt) + "=" + CompactUtc(event.at_us)});
    commands.push_back({"kubectl", "taint", "node", o.node, "--overwrite",
                        std::string(kNodeGateTaint) + "=revoked:NoSchedule"});
  }
  for (const std::vector<std::string>& argv : commands) {
    const ProcessRun run = RunScheduler(argv, o.command_timeout_s);
    if (run.exit_code != 0) return RunFailure(argv, run);
  }
  return "";
}

}  // namespace

NodeReport ReadNodeReport(const std::filesystem::path& reports_dir, const std::string& node) {
  NodeReport report;
  if (reports_dir.empty()) return report;
  report.path = reports_dir / (node + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(report.path, ec)) return report;
  report.present = true;
  try {
    const std::string text = ReadInputFile(report.path, report.path.string());
    report.sha256 = Sha256Hex(text);
    std::string problem;
    if (std::optional<nlohmann::json> json = TryParseJsonText(text, &problem))
      report.started_at = ViewOfReport(*json).started_at;
  } catch (const InputError&) {
    report.present = false;  // unreadable: named as no report
  }
  return report;
}

std::string RevocationReason(const RecordedEvent& event, const NodeReport& report) {
  return std::string(kNodeGateReasonPrefix) + " revoked " + RecordedEventText(event) + " report " +
         (report.sha256.empty() ? std::string("none") : "sha256:" + report.sha256);
}

bool BreakerTrips(int64_t gpu_nodes, int64_t revoked_in_window, double fraction) {
  return static_cast<double>(revoked_in_window + 1) > fraction * static_cast<double>(gpu_nodes);
}

RevokeOutcome RevokeThroughScheduler(const RevokeOptions& o, const RecordedEvent& event,
                                     int64_t now_us) {
  RevokeOutcome outcome;
  if (o.scheduler == Scheduler::kNone) return outcome;
  const FleetCount count =
      o.scheduler == Scheduler::kSlurm ? CountSlurm(o, now_us) : CountKubernetes(o, now_us);
  if (!count.known) {
    outcome.breaker_tripped = true;
    outcome.message =
        "not revoked through the scheduler: the circuit breaker cannot count the "
        "revoked nodes (" +
        count.why + ")";
    return outcome;
  }
  const std::string counted =
      std::to_string(count.revoked_in_window) + " of " + std::to_string(count.gpu_nodes) +
      " GPU nodes already revoked by trainlock within " + std::to_string(o.breaker_window_s) + " s";
  if (BreakerTrips(count.gpu_nodes, count.revoked_in_window, o.breaker_fraction)) {
    outcome.breaker_tripped = true;
    outcome.message = "CIRCUIT BREAKER: not revoked through the scheduler: " + counted +
                      ", and one more passes --breaker-fraction " +
                      ShortNumber(o.breaker_fraction) +
                      "; look at the event table before "
                      "draining by hand";
    return outcome;
  }
  const NodeReport report = ReadNodeReport(o.reports_dir, o.node);
  if (std::string failed = RunRevocation(o, event, report); !failed.empty()) {
    outcome.message = "not revoked through the scheduler: " + failed;
    return outcome;
  }
  outcome.revoked = true;
  outcome.message = std::string(o.scheduler == Scheduler::kSlurm ? "drained"
                                                                 : "labelled and "
                                                                   "tainted") +
                    " (" + counted + ")";
  return outcome;
}

}  // namespace trainlock
