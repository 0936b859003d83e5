// Folding every rank's results into rank 0's report; see rank_merge.h.
#include "comm/rank_merge.h"

#include <algorithm>
#include <map>

#include "base/text_format.h"
#include "report/check_metrics.h"
#include "report/golden_compare.h"
#include "report/pass_rules.h"
#include "report/report_view.h"

namespace trainlock::validate {
namespace {

using Json = nlohmann::json;

constexpr int kNamedRanksPerCheck = 3;  // beyond this a summary points at "ranks"

bool FailedStatus(const std::string& status) {
  return status == "fail" || status == "error";
}

CheckResult* FindCheck(Report& report, const std::string& id) {
  for (CheckResult& c : report.checks) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::string RankName(const Json& entry) {
  std::string name = "rank " + std::to_string(entry.value("rank", -1));
  const std::string device = StringMember(entry, "device");
  return device.empty() ? name : name + " (" + device + ")";
}

RankTrainMetrics TrainOf(const Json& entry) {
  return entry.contains("train") ? ReadMetrics<RankTrainMetrics>(entry["train"])
                                 : RankTrainMetrics{};
}

// The merged check judged again by its rule (pass_rules.h) over the metrics the merge added; a
// check that was not measured (skip, error) is left. `remedy` is said when the merge fails it.
void Rejudge(CheckResult& c, const std::string& remedy) {
  if (c.status == CheckStatus::kSkip || c.status == CheckStatus::kError) return;
  const double duration_s = c.duration_s;
  const bool passed = c.status == CheckStatus::kPass;
  c = Judged(c.id, std::move(c.metrics), c.summary, passed ? remedy : c.remedy);
  c.duration_s = duration_s;
}

// Appends one rank's failure to the merged check (metrics failed_ranks), which fails it.
void AddRankFailure(CheckResult& c, int* named, int rank, const std::string& sentence) {
  auto merged = ReadMetrics<NodeMergeMetrics>(c.metrics);
  Json failed = merged.failed_ranks.value_or(Json::array());
  if (failed.is_array()) failed.push_back(rank);
  merged.failed_ranks = failed;
  AddMetrics(&c.metrics, ToJson(merged));
  if (++*named <= kNamedRanksPerCheck) {
    c.summary += "; " + sentence;
  } else if (*named == kNamedRanksPerCheck + 1) {
    c.summary += "; more ranks failed (see \"ranks\")";
  }
  Rejudge(c, "see the failing rank's own report (report.rank-N.json) and its stderr");
}

// Another node whose lead did not judge the check (skipped it, or has no result for it): a check
// that passed on rank 0's node is a skip for the run, naming that node, never a pass for it.
void AddNodeNotJudged(CheckResult& c, int* named, const std::string& node, int rank,
                      const std::string& why) {
  if (c.status == CheckStatus::kPass) {
    c.status = CheckStatus::kSkip;
    c.remedy = "see that node's own report (report.rank-N.json)";
  }
  if (++*named > kNamedRanksPerCheck) return;
  c.summary += "; node " + node + " (rank " + std::to_string(rank) + ") not judged: " + why;
}

// A node check fails the merged report when it failed on any node, and is not a pass when any
// node did not judge it; the merged check lists every node's status under metrics.nodes and
// names each failing or unjudged node in its summary.
void MergeNodeCheck(Report& report, const std::string& id, const Json& entries) {
  CheckResult* c = FindCheck(report, id);
  if (!c) return;
  Json nodes = Json::array();
  int named = 0;
  bool node_error = false, node_failed = false;
  for (const Json& entry : entries) {
    const Json checks = entry.value("checks", Json::object());
    const bool other_lead = entry.value("local_rank", -1) == 0 && entry.value("rank", -1) != 0;
    if (!checks.is_object() || !checks.contains(id)) {
      if (other_lead) {
        const std::string error = StringMember(entry, "error");
        AddNodeNotJudged(*c, &named, StringMember(entry, "host"), entry.value("rank", -1),
                         error.empty() ? "its report has no " + id : error);
      }
      continue;
    }
    const bool own = entry.value("rank", -1) == 0;
    const std::string status =
        own ? CheckStatusName(c->status) : StringMember(checks[id], "status");
    const std::string summary = own ? c->summary : StringMember(checks[id], "summary");
    const std::string node = StringMember(entry, "host");
    nodes.push_back({{"node", node},
                     {"node_rank", entry.value("node_rank", 0)},
                     {"rank", entry.value("rank", -1)},
                     {"status", status},
                     {"summary", summary}});
    if (own) continue;
    if (!FailedStatus(status)) {
      if (status != "pass") AddNodeNotJudged(*c, &named, node, entry.value("rank", -1), summary);
      continue;
    }
    // Rank 0's node passed or skipped: the merged check now speaks for the failing nodes.
    if (c->status == CheckStatus::kPass || c->status == CheckStatus::kSkip) c->remedy.clear();
    (status == "error" ? node_error : node_failed) = true;
    if (++named > kNamedRanksPerCheck) continue;
    c->summary +=
        "; node " + node + " (rank " + std::to_string(entry.value("rank", -1)) + "): " + summary;
    const std::string remedy = StringMember(checks[id], "remedy");
    if (!remedy.empty())
      c->remedy += (c->remedy.empty() ? "" : "; ") + ("node " + node + ": " + remedy);
  }
  if (nodes.size() > 1) {
    NodeMergeMetrics merged;
    merged.nodes = nodes;
    AddMetrics(&c->metrics, ToJson(merged));
  }
  if (node_error) {
    c->status = CheckStatus::kError;  // a node could not measure it: the run's check neither
  } else if (node_failed && c->status != CheckStatus::kError) {
    const double duration_s = c->duration_s;  // `nodes` names the failing node: the rule fails it
    *c = Judged(c->id, std::move(c->metrics), c->summary, c->remedy);
    c->duration_s = duration_s;
  }
}

void NameFailingRanks(Report& report, const Json& entries) {
  for (const std::string& id : NodeCheckIds()) MergeNodeCheck(report, id, entries);
  for (const std::string& id : PerRankCheckIds()) {
    CheckResult* c = FindCheck(report, id);
    if (!c || c->status == CheckStatus::kSkip) continue;
    int named = 0;
    for (const Json& entry : entries) {
      if (entry.value("rank", -1) == 0) continue;  // the merged check is rank 0's own
      if (entry.contains("error")) {
        // Comm checks saw this rank already; the training checks have no result from it.
        if (id == "train.step" || id == "train.roundtrip") {
          AddRankFailure(*c, &named, entry.value("rank", -1),
                         RankName(entry) + ": " + StringMember(entry, "error"));
        }
        continue;
      }
      const Json checks = entry.value("checks", Json::object());
      const Json check = checks.is_object() ? checks.value(id, Json::object()) : Json::object();
      if (FailedStatus(StringMember(check, "status")))
        AddRankFailure(*c, &named, entry.value("rank", -1),
                       RankName(entry) + ": " + StringMember(check, "summary"));
    }
  }
}

// train.step: every rank's throughput and peak memory, and the slowest GPU against the median.
void CompareStepTimes(Report& report, const Json& entries, const MergeOptions& o) {
  CheckResult* c = FindCheck(report, "train.step");
  if (!c || c->status == CheckStatus::kSkip) return;
  std::vector<RankStepRow> per_rank;
  std::vector<std::pair<double, const Json*>> rates;
  for (const Json& entry : entries) {
    const RankTrainMetrics train = TrainOf(entry);
    const double rate = train.tokens_per_s.value_or(0.0);
    if (rate <= 0) continue;
    rates.emplace_back(rate, &entry);
    per_rank.push_back({entry.value("rank", -1), StringMember(entry, "device"), train.device_name,
                        train.tokens_per_s, train.step_time_s, train.peak_allocated_bytes,
                        train.peak_reserved_bytes});
  }
  if (rates.size() < 2) return;
  std::vector<double> sorted;
  for (const auto& r : rates) sorted.push_back(r.first);
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const auto slowest = *std::min_element(rates.begin(), rates.end());
  const double ratio = slowest.first / median;
  TrainStepMetrics compared;
  compared.ranks = per_rank;
  compared.slowest_rank = slowest.second->value("rank", -1);
  compared.slowest_to_median = ratio;
  AddMetrics(&c->metrics, ToJson(compared));
  c->summary += "; " + std::to_string(rates.size()) + " ranks trained, slowest " +
                RankName(*slowest.second) + " at " + Fixed(ratio, 2) + "x the median tokens/s";
  if (ratio < 1.0 - o.straggler_margin) {
    if (!o.gpu) {
      c->summary += " (CPU processes share cores: timing is not a node finding)";
    } else if (c->status == CheckStatus::kPass) {
      c->summary += ": a straggler";
      TrainStepMetrics margin;  // what the rule judges slowest_to_median by
      margin.straggler_margin = o.straggler_margin;
      AddMetrics(&c->metrics, ToJson(margin));
      Rejudge(*c, RankName(*slowest.second) +
                      " trains more slowly than its peers by more than the margin: check its "
                      "clocks, temperature and throttle reasons (env.health) and perf.* for that "
                      "GPU");
    }
  }
}

// The ranks whose digest is not the one most ranks share; all of them when there is no
// majority, both of two that differ: the rule the fleet and the gate apply to nodes
// (report/golden_compare.h), here to the ranks of one GPU model.
std::vector<const Json*> Deviants(const std::vector<const Json*>& group) {
  std::vector<GoldenWitness> witnesses;
  for (size_t i = 0; i < group.size(); ++i)
    witnesses.push_back({std::to_string(i), TrainOf(*group[i]).reference_digest.value_or("")});
  std::vector<const Json*> out;
  for (const std::string& index : CompareGolden(witnesses).differing)
    out.push_back(group[std::stoul(index)]);
  return out;
}

// train.roundtrip: ranks on GPUs of one model ran identical programs on identical inputs with
// deterministic kernels (each proved it by its own bitwise resume), so their uninterrupted
// runs must agree to the bit. A GPU that disagrees computes wrongly.
void CompareBits(Report& report, const Json& entries) {
  CheckResult* c = FindCheck(report, "train.roundtrip");
  if (!c || c->status == CheckStatus::kSkip) return;
  std::map<std::string, std::vector<const Json*>> by_model;
  for (const Json& entry : entries) {
    const RankTrainMetrics train = TrainOf(entry);
    if (train.bitwise_equal.value_or(false) && !train.reference_digest.value_or("").empty())
      by_model[train.device_name.value_or("")].push_back(&entry);
  }
  size_t compared = 0;
  std::vector<const Json*> deviants;
  for (const auto& [model, group] : by_model) {
    if (group.size() < 2) continue;
    compared += group.size();
    for (const Json* e : Deviants(group)) deviants.push_back(e);
  }
  RoundtripMetrics bits;
  if (compared == 0) {
    bits.ranks_bitwise_identical = std::optional<bool>();  // null: no two ranks to compare
    AddMetrics(&c->metrics, ToJson(bits));
    return;
  }
  bits.ranks_bitwise_identical = deviants.empty();
  AddMetrics(&c->metrics, ToJson(bits));
  if (deviants.empty()) {
    c->summary += "; identical bits on all " + std::to_string(compared) + " ranks";
    return;
  }
  std::string names;
  Json ranks = Json::array();
  for (const Json* e : deviants) {
    names += (names.empty() ? "" : ", ") + RankName(*e);
    ranks.push_back(e->value("rank", -1));
  }
  RoundtripMetrics differing;
  differing.ranks_computing_differently = ranks;
  AddMetrics(&c->metrics, ToJson(differing));
  c->summary += "; " + names + " computed different bits from the other GPUs of the same model " +
                "on identical inputs";
  const std::string remedy =
      "GPUs of one model with deterministic kernels must agree to the bit: take the named GPU "
      "out of service and run `dcgmi diag -r 3` on it (silent data corruption, clocks, or a "
      "driver or firmware difference)";
  Rejudge(*c, remedy);  // ranks_computing_differently fails it
  c->remedy = remedy;
}

}  // namespace

const std::vector<std::string>& PerRankCheckIds() {
  static const std::vector<std::string> kIds = {"comm.allreduce",  "comm.ddp",   "train.step",
                                                "train.roundtrip", "train.eval", "ckpt.portable"};
  return kIds;
}

const std::vector<std::string>& NodeCheckIds() {
  static const std::vector<std::string> kIds = {
      "env.driver",   "env.runtime", "env.arch",     "env.versions", "env.health",  "env.devices",
      "env.packages", "data.model",  "data.dataset", "ops.custom",   "perf.matmul", "perf.hbm"};
  return kIds;
}

Json RankEntry(const RankEnv& rank, const std::string& host, const std::string& device,
               const std::vector<CheckResult>& checks, const Json& devices) {
  Json own = Json::object();
  RankTrainMetrics train;
  auto listed = [](const std::vector<std::string>& ids, const std::string& id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  const bool node_lead = rank.local_rank == 0;
  for (const CheckResult& c : checks) {
    const bool node_check = node_lead && listed(NodeCheckIds(), c.id);
    if (!listed(PerRankCheckIds(), c.id) && !node_check) continue;
    own[c.id] = {{"status", CheckStatusName(c.status)}, {"summary", c.summary}};
    if (node_check && !c.remedy.empty()) own[c.id]["remedy"] = c.remedy;
    if (c.id == "train.step") {
      const auto step = ReadMetrics<TrainStepMetrics>(c.metrics);
      train.device_name = step.device_name;
      train.tokens_per_s = step.tokens_per_s;
      train.step_time_s = step.step_time_s;
      train.peak_allocated_bytes = step.peak_allocated_bytes;
      train.peak_reserved_bytes = step.peak_reserved_bytes;
    }
    if (c.id == "train.roundtrip") {
      const auto roundtrip = ReadMetrics<RoundtripMetrics>(c.metrics);
      train.reference_digest = roundtrip.reference_digest;
      train.bitwise_equal = roundtrip.bitwise_equal;
    }
  }
  Json entry = {{"rank", rank.rank},
                {"local_rank", rank.local_rank},
                {"node_rank", rank.node_rank},
                {"host", host},
                {"device", device},
                {"checks", own},
                {"train", ToJson(train)}};
  if (node_lead && rank.rank != 0) entry["devices"] = devices;
  return entry;
}

Json MissingRankEntry(int rank, const std::string& why) {
  return {{"rank", rank}, {"error", why}};
}

// The merged report lists the devices of every node: rank 0's own, then each other node's
// (named by "node") as its local rank 0 saw them.
void MergeNodeDevices(Report& report, const Json& entries) {
  for (const Json& entry : entries) {
    if (!entry.contains("devices") || !entry["devices"].is_array()) continue;
    for (Json device : entry["devices"]) {
      if (!device.is_object()) continue;
      device["node"] = StringMember(entry, "host");
      report.devices.push_back(device);
    }
  }
}

void MergeRankResults(Report& report, const Json& entries, const MergeOptions& options) {
  if (!entries.is_array()) return;
  MergeNodeDevices(report, entries);
  NameFailingRanks(report, entries);
  CompareStepTimes(report, entries, options);
  CompareBits(report, entries);
}

}  // namespace trainlock::validate
