// How `trainlock fleet summarize` shows a summary (fleet.h): the table of the round's reports and
// its missing nodes, the reports that do not count in the round, the warnings and the footer,
// and the same as JSON.
#include <algorithm>
#include <map>

#include "base/terminal_text.h"
#include "base/text_format.h"
#include "fleet/fleet.h"
#include "report/report_render.h"

namespace trainlock {
namespace {

std::string GpuText(const NodeSummary& row) {
  if (row.status == "unreadable") return "-";
  if (row.gpu_count == 0) return "none";
  return std::to_string(row.gpu_count) + " x " + row.gpu_model;
}

// What fails the node: its failing checks, and computing differently from its key's peers.
std::string FailingText(const NodeSummary& row) {
  if (row.status == "unreadable" || row.status == "error" || row.status == "partial")
    return row.reason;
  const std::string golden =
      row.golden_problem.empty() ? ""
      : !row.golden              ? row.golden_problem  // no digest to compare: the gate's reason
      : row.golden_against_pin
          ? "computes differently from the lock's golden digest (suspected silent data "
            "corruption)"
          : "computes differently (golden digest, below)";
  if (row.failing.empty() && !golden.empty()) return golden;
  if (row.failing.empty()) return row.status == "pass" ? "-" : "(verdict fail)";
  std::string text = golden;
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

// A golden key for a person: its short id and the parts that are known.
std::string KeyText(const GoldenGroup& group) {
  const GoldenKey& k = group.key;
  std::string text = k.gpu + (k.compute_capability.empty() ? "" : " " + k.compute_capability);
  for (const auto& [label, value] : {std::pair<const char*, const std::string&>{"driver", k.driver},
                                     {"CUDA", k.cuda},
                                     {"torch", k.torch},
                                     {"engine", k.engine}}) {
    if (!value.empty()) text += std::string(", ") + label + " " + value;
  }
  if (!k.image_digest.empty()) text += ", image " + ShortSha(k.image_digest);
  return "key " + ShortSha(group.key_sha256) + " (" + text + ")";
}

// The golden digests key by key: agreeing, differing (naming the nodes), or one alone.
std::string GoldenText(const FleetSummary& summary) {
  if (summary.golden_groups.empty()) return "";
  std::string out = "golden digests:\n";
  for (const GoldenGroup& g : summary.golden_groups) {
    out += "  " + TerminalLine(KeyText(g)) + ": ";
    if (g.pinned && g.verdict.differing.empty()) {
      out += Plural(static_cast<int>(g.nodes.size()), "node") + " computed the " +
             ShortSha(g.digest) + " the lock pins\n";
    } else if (g.nodes.size() == 1 && !g.pinned) {
      out += TerminalLine(g.nodes.front()) + " alone under its key, compared with no other (" +
             ShortSha(g.digest) + ")\n";
    } else if (g.verdict.differing.empty()) {
      out += Plural(static_cast<int>(g.nodes.size()), "node") + " agree on " + ShortSha(g.digest) +
             "\n";
    } else {
      out += TerminalLine(g.verdict.reason) + "\n";
    }
  }
  return out + "\n";
}

nlohmann::json GoldenJson(const FleetSummary& summary) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GoldenGroup& g : summary.golden_groups) {
    groups.push_back({{"key_sha256", g.key_sha256},
                      {"key", ToJson(GoldenDigest{g.digest, g.key})["key"]},
                      {"nodes", g.nodes},
                      {"digest", g.digest.empty() ? nlohmann::json() : nlohmann::json(g.digest)},
                      {"pinned", g.pinned},
                      {"differing", g.verdict.differing},
                      {"reason", g.verdict.reason}});
  }
  return groups;
}

// Why a node the round names has no row: no report at all, or which of its reports did not count.
std::string MissingReason(const FleetSummary& summary, const std::string& node) {
  for (const NodeSummary& n : summary.outside) {
    if (n.node == node) return "no report of this round (" + n.file + ": " + n.not_in_round + ")";
  }
  return "no report of this round";
}

// The reports that do not count, each with why; "" when every report counts.
std::string OutsideText(const FleetSummary& summary) {
  if (summary.outside.empty()) return "";
  std::string out = "not counted in this round (" +
                    Plural(static_cast<int>(summary.outside.size()), "report") + "):\n";
  for (const NodeSummary& n : summary.outside)
    out += "  " + TerminalLine(n.node) + " (" + TerminalLine(n.file) + ", " + n.status +
           "): " + TerminalLine(n.not_in_round) + "\n";
  return out + "\n";
}

std::string NodeList(const std::vector<std::string>& nodes) {
  std::string list;
  for (const std::string& node : nodes) list += (list.empty() ? "" : ",") + node;
  return list;
}

// The round's line, "" when the summary judged every report as before rounds.
std::string RoundText(const FleetRound& round) {
  if (!round.since_s && round.nodes.empty()) return "";
  std::string out = "round:";
  if (round.since_s) out += " since " + TerminalLine(round.since);
  if (!round.nodes.empty()) out += " nodes " + TerminalLine(NodeList(round.nodes));
  return out + "\n";
}

nlohmann::json RoundJson(const FleetRound& round) {
  if (!round.since_s && round.nodes.empty()) return nullptr;
  return {{"since", round.since_s ? nlohmann::json(round.since) : nlohmann::json()},
          {"nodes", round.nodes}};
}

}  // namespace

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
    warnings.push_back(std::to_string(round.Expected()) + " nodes expected, " +
                       std::to_string(reported()) + " reported: " + std::to_string(missing()) +
                       " missing");
  }
  return warnings;
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
  for (const std::string& node : summary.MissingNodes())
    rows.push_back(
        {TerminalLine(node), "missing", "-", "-", "-", TerminalLine(MissingReason(summary, node))});
  std::stable_sort(rows.begin() + 1, rows.end(),
                   [](const auto& a, const auto& b) { return a[0] < b[0]; });
  std::string out =
      Columns(rows) + "\n" + GoldenText(summary) + OutsideText(summary) + RoundText(summary.round);
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
      if (!n.golden_problem.empty())
        row[n.golden ? "computes_differently" : "golden_missing"] = n.golden_problem;
      if (n.status == "error") row["reason"] = n.reason;
    }
    nodes.push_back(row);
  }
  for (const std::string& node : summary.MissingNodes())
    nodes.push_back(
        {{"node", node}, {"verdict", "missing"}, {"reason", MissingReason(summary, node)}});
  nlohmann::json outside = nlohmann::json::array();
  for (const NodeSummary& n : summary.outside)
    outside.push_back(
        {{"node", n.node}, {"file", n.file}, {"verdict", n.status}, {"reason", n.not_in_round}});
  nlohmann::json locks = nlohmann::json::array();
  for (const auto& [sha, count] : summary.Locks())
    locks.push_back({{"lock_sha256", sha}, {"nodes", count}});
  const int expected = summary.round.Expected();
  return {{"dir", summary.dir},
          {"nodes", nodes},
          {"total", summary.nodes.size()},
          {"reported_nodes", summary.reported()},
          {"rank_reports", summary.rank_reports},
          {"passed", summary.passed()},
          {"failed", summary.failed()},
          {"expected_nodes", expected > 0 ? nlohmann::json(expected) : nlohmann::json()},
          {"missing", summary.missing()},
          {"missing_nodes", summary.MissingNodes()},
          {"not_in_round", outside},
          {"round", RoundJson(summary.round)},
          {"golden", GoldenJson(summary)},
          {"locks", locks},
          {"warnings", summary.Warnings()},
          {"all_passed", summary.all_passed()}};
}

}  // namespace trainlock
