// `trainlock fleet summarize DIR`: one row per node report in a directory (fleet.h).
//
// A fleet run leaves one report per node; what the operator needs is which nodes failed and
// on what. A file that is not a valid report is a row of its own ("unreadable", counted as a
// failure) rather than the end of the summary: one corrupt upload must not hide the others.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <system_error>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/text_format.h"
#include "fleet/fleet.h"
#include "report/report.h"
#include "report/report_file.h"
#include "report/report_render.h"
#include "report/report_signing.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

std::string FileStem(const fs::path& file) {
  return file.stem().string();
}

NodeSummary UnreadableRow(const fs::path& file, std::string reason) {
  NodeSummary row;
  row.node = FileStem(file);
  row.file = file.filename().string();
  row.status = "unreadable";
  row.reason = std::move(reason);
  return row;
}

std::string FirstProblem(const InputError& e) {
  const auto& items = e.diagnostics().items();
  if (items.empty()) return e.what();
  std::string text = items.front().Format();
  if (items.size() > 1) text += " (and " + std::to_string(items.size() - 1) + " more)";
  return text;
}

void ReadDevices(const ReportView& report, NodeSummary& row) {
  row.gpu_count = static_cast<int>(report.devices.size());
  std::vector<std::string> models;
  for (const DeviceView& device : report.devices) {
    std::string name = device.name.empty() ? "?" : device.name;
    if (std::find(models.begin(), models.end(), name) == models.end()) models.push_back(name);
  }
  for (const std::string& model : models)
    row.gpu_model += (row.gpu_model.empty() ? "" : " + ") + model;
}

// The checks that fail the node (IsFailingCheck against the report's own required list).
void ReadFailingChecks(const ReportView& report, NodeSummary& row) {
  for (const CheckView& check : report.checks) {
    if (IsFailingCheck(check.status, report.IsRequired(check.id)))
      row.failing.push_back({check.id, check.status});
  }
}

NodeSummary ReportRow(const fs::path& file, const ReportView& report) {
  NodeSummary row;
  row.file = file.filename().string();
  row.node = report.host.hostname;
  if (row.node.empty()) row.node = FileStem(file);
  ReadDevices(report, row);
  ReadFailingChecks(report, row);
  row.duration_s = report.duration_s;
  row.started_at = report.started_at;
  row.lock_sha256 = report.lock_sha256;
  row.golden = report.golden;
  row.status = report.verdict == "pass" && row.failing.empty() ? "pass" : "fail";
  if (report.verdict == "error") {
    // Not judged: the environment could not run the validation; no check of it is a finding.
    row.status = "error";
    row.reason = "not judged: " + report.environment_error;
    row.failing.clear();
  }
  return row;
}

// A row, and whether the file is one rank's part of a distributed run (IsPartialReport).
std::pair<NodeSummary, bool> SummarizeFile(const fs::path& file, const std::string& display,
                                           const FleetRound& round) {
  try {
    const ReportView report = ViewOfReport(ReadReportFile(file, display));
    NodeSummary row = ReportRow(file, report);
    row.untrusted = UntrustedStartReason(round, ReadInputFile(file, display), report.is_signed);
    return {std::move(row), report.partial};
  } catch (const InputError& e) {
    return {UnreadableRow(file, FirstProblem(e)), false};
  } catch (const std::exception& e) {
    return {
        UnreadableRow(file, display + ": error: not a " + kReportSchema + " report: " + e.what()),
        false};
  }
}

// The rank reports of a node whose merged report never came: one failing row naming them.
NodeSummary PartialRow(const std::string& node, const std::vector<NodeSummary>& ranks) {
  NodeSummary row = ranks.front();
  row.status = "partial";
  row.failing.clear();
  std::string files;
  for (const NodeSummary& rank : ranks) files += (files.empty() ? "" : ", ") + rank.file;
  row.file = files;
  row.reason = "only rank reports (" + files + "): " + node +
               "'s merged report was never written; only a merged report passes";
  return row;
}

std::vector<fs::path> JsonFiles(const fs::path& dir, const std::string& display) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    const bool exists = fs::exists(dir, ec);
    throw InputError(Diagnostic{display,
                                {},
                                exists ? "not a directory" : "cannot read: no such directory",
                                "give the directory the nodes wrote their <node>.json reports to"});
  }
  std::vector<fs::path> files;
  fs::directory_iterator it(dir, ec);
  if (ec) throw InputError(Diagnostic{display, {}, "cannot read: " + ec.message(), ""});
  for (const fs::directory_entry& entry : it) {
    if (entry.path().extension() == ".json" && entry.is_regular_file(ec)) {
      files.push_back(entry.path());
    }
  }
  if (files.empty()) {
    throw InputError(Diagnostic{display,
                                {},
                                "no *.json reports in it",
                                "each node writes <node>.json there; did the job run?"});
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Moves each row that does not count in the round to `outside`, saying why.
void SortOutTheRound(FleetSummary& summary, std::vector<NodeSummary>& rows) {
  for (NodeSummary& row : rows) {
    row.not_in_round = NotInRound(summary.round, row.node, row.started_at, row.untrusted);
    (row.not_in_round.empty() ? summary.nodes : summary.outside).push_back(std::move(row));
  }
}

bool NodeThenFile(const NodeSummary& a, const NodeSummary& b) {
  return a.node != b.node ? a.node < b.node : a.file < b.file;
}

}  // namespace

int FleetSummary::passed() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [](const NodeSummary& n) { return n.status == "pass"; }));
}

int FleetSummary::failed() const {
  return static_cast<int>(nodes.size()) - passed();
}

int FleetSummary::reported() const {
  std::set<std::string> names;
  for (const NodeSummary& n : nodes) names.insert(n.node);
  return static_cast<int>(names.size());
}

std::vector<std::string> FleetSummary::MissingNodes() const {
  std::vector<std::string> missing;
  for (const std::string& name : round.nodes) {
    const bool counted = std::any_of(nodes.begin(), nodes.end(),
                                     [&name](const NodeSummary& n) { return n.node == name; });
    if (!counted) missing.push_back(name);
  }
  std::sort(missing.begin(), missing.end());
  return missing;
}

int FleetSummary::missing() const {
  return std::max(static_cast<int>(MissingNodes().size()), round.Expected() - reported());
}

std::vector<std::pair<std::string, int>> FleetSummary::Locks() const {
  std::map<std::string, int> counts;
  for (const NodeSummary& n : nodes) {
    if (n.status != "unreadable") ++counts[n.lock_sha256];
  }
  std::vector<std::pair<std::string, int>> locks(counts.begin(), counts.end());
  std::stable_sort(locks.begin(), locks.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return locks;
}

FleetSummary SummarizeReports(const fs::path& dir, const std::string& display,
                              const FleetRound& round, const Lockfile* lock) {
  // A key that is no public key is the user's input at fault, before any report is judged.
  if (round.public_key_pem) PublicKeyId(*round.public_key_pem);
  FleetSummary summary;
  summary.dir = display;
  summary.round = round;
  std::vector<NodeSummary> merged_rows, rank_rows;
  for (const fs::path& file : JsonFiles(dir, display)) {
    auto [row, partial] =
        SummarizeFile(file, (fs::path(display) / file.filename()).string(), round);
    (partial ? rank_rows : merged_rows).push_back(std::move(row));
  }
  SortOutTheRound(summary, merged_rows);
  std::map<std::string, std::vector<NodeSummary>> ranks_of_node;
  for (NodeSummary& rank : rank_rows) {
    summary.rank_reports.push_back(rank.file);
    rank.not_in_round = NotInRound(round, rank.node, rank.started_at, rank.untrusted);
    if (rank.not_in_round.empty()) ranks_of_node[rank.node].push_back(std::move(rank));
  }
  for (const auto& entry : ranks_of_node) {
    const std::string& node = entry.first;  // a lambda may not capture a structured binding
    const bool merged = std::any_of(summary.nodes.begin(), summary.nodes.end(),
                                    [&node](const NodeSummary& n) { return n.node == node; });
    if (!merged) summary.nodes.push_back(PartialRow(node, entry.second));
  }
  std::sort(summary.rank_reports.begin(), summary.rank_reports.end());
  std::sort(summary.nodes.begin(), summary.nodes.end(), NodeThenFile);
  std::sort(summary.outside.begin(), summary.outside.end(), NodeThenFile);
  CompareRoundGolden(summary, lock);
  return summary;
}

}  // namespace trainlock
