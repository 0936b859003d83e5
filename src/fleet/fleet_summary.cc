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
#include "base/text_format.h"
#include "fleet/fleet.h"
#include "report/report.h"
#include "report/report_file.h"
#include "report/report_render.h"
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
std::pair<NodeSummary, bool> SummarizeFile(const fs::path& file, const std::string& display) {
  try {
    const ReportView report = ViewOfReport(ReadReportFile(file, display));
    return {ReportRow(file, report), report.partial};
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

std::string GpuText(const NodeSummary& row) {
  if (row.status == "unreadable") return "-";
  if (row.gpu_count == 0) return "none";
  return std::to_string(row.gpu_count) + " x " + row.gpu_model;
}

std::string FailingText(const NodeSummary& row) {
  if (row.status == "unreadable" || row.status == "error" || row.status == "partial")
    return row.reason;
  if (row.failing.empty()) return row.status == "pass" ? "-" : "(verdict fail)";
  std::string text;
  for (const FailingCheck& check : row.failing) {
    std::string item = check.id;
    if (check.status == "error") item += " (error)";
    if (check.status == "skip") item += " (skipped)";
    text += (text.empty() ? "" : ", ") + item;
  }
  return text;
}

std::string Plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Rows of cells printed as left-aligned columns; the last column is not padded.
std::string Columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
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

int FleetSummary::missing() const {
  return std::max(0, expected_nodes - reported());
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

std::vector<std::string> FleetSummary::Warnings() const {
  std::vector<std::string> warnings;
  if (auto locks = Locks(); locks.size() > 1) {
    std::string text =
        "the reports validated " + std::to_string(locks.size()) + " different locks:";
    for (size_t i = 0; i < locks.size(); ++i) {
      text += (i ? ", " : " ") + ShortSha(locks[i].first) + " (" + Plural(locks[i].second, "node") +
              ")";
    }
    warnings.push_back(text);
  }
  std::map<std::string, std::vector<std::string>> files_of_node;
  for (const NodeSummary& n : nodes) files_of_node[n.node].push_back(n.file);
  for (const auto& [node, files] : files_of_node) {
    if (files.size() < 2) continue;
    std::string list;
    for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
    warnings.push_back("node " + node + " has " + std::to_string(files.size()) + " reports (" +
                       list + ")");
  }
  if (missing() > 0) {
    warnings.push_back(std::to_string(expected_nodes) + " nodes expected, " +
                       std::to_string(reported()) + " reported: " + std::to_string(missing()) +
                       " missing");
  }
  return warnings;
}

FleetSummary SummarizeReports(const fs::path& dir, const std::string& display, int expected_nodes) {
  FleetSummary summary;
  summary.dir = display;
  summary.expected_nodes = expected_nodes;
  std::map<std::string, std::vector<NodeSummary>> ranks_of_node;
  for (const fs::path& file : JsonFiles(dir, display)) {
    auto [row, partial] = SummarizeFile(file, (fs::path(display) / file.filename()).string());
    if (partial) {
      ranks_of_node[row.node].push_back(std::move(row));
    } else {
      summary.nodes.push_back(std::move(row));
    }
  }
  for (const auto& entry : ranks_of_node) {
    const std::string& node = entry.first;  // a lambda may not capture a structured binding
    const bool merged = std::any_of(summary.nodes.begin(), summary.nodes.end(),
                                    [&node](const NodeSummary& n) { return n.node == node; });
    if (!merged) summary.nodes.push_back(PartialRow(node, entry.second));
    for (const NodeSummary& rank : entry.second) summary.rank_reports.push_back(rank.file);
  }
  std::sort(summary.rank_reports.begin(), summary.rank_reports.end());
  std::sort(summary.nodes.begin(), summary.nodes.end(),
            [](const NodeSummary& a, const NodeSummary& b) {
              return a.node != b.node ? a.node < b.node : a.file < b.file;
            });
  return summary;
}

std::string RenderFleetSummaryText(const FleetSummary& summary) {
  std::vector<std::vector<std::string>> rows = {
      {"NODE", "VERDICT", "GPUS", "DURATION", "LOCK", "FAILING CHECKS"}};
  for (const NodeSummary& n : summary.nodes) {
    const bool readable = n.status != "unreadable";
    rows.push_back({TerminalLine(n.node), n.status, TerminalLine(GpuText(n)),
                    readable ? FormatSeconds(n.duration_s) : "-",
                    readable ? TerminalLine(ShortSha(n.lock_sha256)) : "-",
                    TerminalLine(FailingText(n))});
  }
  std::string out = Columns(rows) + "\n";
  for (const std::string& warning : summary.Warnings())
    out += "warning: " + TerminalLine(warning) + "\n";
  if (!summary.rank_reports.empty()) {
    out += "(" + Plural(static_cast<int>(summary.rank_reports.size()), "rank report") +
           " set aside: a node's merged report is the one that counts)\n";
  }
  out += Plural(summary.reported(), "node");
  if (summary.nodes.size() != static_cast<size_t>(summary.reported()))
    out += " in " + Plural(static_cast<int>(summary.nodes.size()), "report");
  out += ": " + std::to_string(summary.passed()) + " passed, " + std::to_string(summary.failed()) +
         " failed";
  if (summary.missing() > 0) out += ", " + std::to_string(summary.missing()) + " missing";
  return out + "\n";
}

nlohmann::json FleetSummaryJson(const FleetSummary& summary) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeSummary& n : summary.nodes) {
    nlohmann::json failing = nlohmann::json::array();
    for (const FailingCheck& c : n.failing) failing.push_back({{"id", c.id}, {"status", c.status}});
    nlohmann::json row = {{"node", n.node}, {"file", n.file}, {"verdict", n.status}};
    if (n.status == "unreadable" || n.status == "partial") {
      row["reason"] = n.reason;
    } else {
      row["gpus"] = {{"count", n.gpu_count}, {"model", n.gpu_model}};
      row["duration_s"] = n.duration_s;
      row["started_at"] = n.started_at;
      row["lock_sha256"] = n.lock_sha256;
      row["failing_checks"] = failing;
      if (n.status == "error") row["reason"] = n.reason;
    }
    nodes.push_back(row);
  }
  nlohmann::json locks = nlohmann::json::array();
  for (const auto& [sha, count] : summary.Locks())
    locks.push_back({{"lock_sha256", sha}, {"nodes", count}});
  return {{"dir", summary.dir},
          {"nodes", nodes},
          {"total", summary.nodes.size()},
          {"reported_nodes", summary.reported()},
          {"rank_reports", summary.rank_reports},
          {"passed", summary.passed()},
          {"failed", summary.failed()},
          {"expected_nodes",
           summary.expected_nodes > 0 ? nlohmann::json(summary.expected_nodes) : nlohmann::json()},
          {"missing", summary.missing()},
          {"locks", locks},
          {"warnings", summary.Warnings()},
          {"all_passed", summary.all_passed()}};
}

}  // namespace trainlock
