// How rank 0 folds every rank's entry into the merged report of a distributed validation:
// failures name their rank, a rank that sent nothing fails the training checks, a slow GPU is
// a straggler, and GPUs of one model that compute different bits fail train.roundtrip.
#include "comm/rank_merge.h"
#include "comm/rank_phase.h"
#include "passing_metrics.h"
#include "report/pass_rules.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace trainlock::validate {
namespace {

using nlohmann::json;

// A check its rule passes, with metrics as a healthy GPU's validator writes them.
CheckResult Passed(const std::string& id, const std::string& summary = "ok") {
  return Judged(id, testing_metrics::Passing().at(id), summary);
}

// Rank 0's report with every per-rank check passed.
Report LeadReport() {
  Report report;
  for (const std::string& id : PerRankCheckIds()) report.checks.push_back(Passed(id));
  return report;
}

const CheckResult& Check(const Report& report, const std::string& id) {
  for (const CheckResult& c : report.checks) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no check " + id);
}

// One rank's entry as RankEntry writes it, all checks passed, on an H200.
json Entry(int rank, const std::string& digest = "d1", double tokens_per_s = 1000,
           const std::string& model = "NVIDIA H200") {
  json checks = json::object();
  for (const std::string& id : PerRankCheckIds())
    checks[id] = {{"status", "pass"}, {"summary", "ok"}};
  return {{"rank", rank},
          {"local_rank", rank},
          {"host", "node1"},
          {"device", "cuda:" + std::to_string(rank)},
          {"checks", checks},
          {"train",
           {{"device_name", model},
            {"tokens_per_s", tokens_per_s},
            {"reference_digest", digest},
            {"bitwise_equal", true}}}};
}

const MergeOptions kGpu{true, 0.20};

TEST(RankMerge, AllRanksPassingAndAgreeingKeepsEveryCheckPassing) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0), Entry(1), Entry(2), Entry(3)}), kGpu);
  for (const std::string& id : PerRankCheckIds())
    EXPECT_EQ(Check(report, id).status, CheckStatus::kPass) << id;
  EXPECT_EQ(Check(report, "train.roundtrip").metrics["ranks_bitwise_identical"], true);
  EXPECT_NE(Check(report, "train.roundtrip").summary.find("identical bits on all 4 ranks"),
            std::string::npos);
  EXPECT_EQ(Check(report, "train.step").metrics["ranks"].size(), 4u);
}

TEST(RankMerge, ARanksFailedRoundTripFailsTheMergedCheckAndNamesTheRank) {
  Report report = LeadReport();
  json bad = Entry(2);
  bad["checks"]["train.roundtrip"] = {{"status", "fail"},
                                      {"summary", "resumed run diverges at step 5"}};
  MergeRankResults(report, json::array({Entry(0), Entry(1), bad}), kGpu);
  const CheckResult& c = Check(report, "train.roundtrip");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("rank 2 (cuda:2): resumed run diverges at step 5"), std::string::npos)
      << c.summary;
  EXPECT_FALSE(c.remedy.empty());
  EXPECT_EQ(Check(report, "train.step").status, CheckStatus::kPass);
}

TEST(RankMerge, ARankThatSentNoResultFailsTheTrainingChecksButNotTheCollectives) {
  Report report = LeadReport();
  json lost = MissingRankEntry(1, "no heartbeat for 20s: the process died or hangs");
  MergeRankResults(report, json::array({Entry(0), lost}), kGpu);
  for (const char* id : {"train.step", "train.roundtrip"}) {
    EXPECT_EQ(Check(report, id).status, CheckStatus::kFail) << id;
    EXPECT_NE(Check(report, id).summary.find("rank 1: no heartbeat for 20s"), std::string::npos)
        << Check(report, id).summary;
  }
  EXPECT_EQ(Check(report, "comm.allreduce").status, CheckStatus::kPass);
}

TEST(RankMerge, WhenRankZerosStoreFailsEveryOtherRankIsMissingAndTheReportFails) {
  Report report = LeadReport();
  RankEnv rank0;
  rank0.rank = 0;
  rank0.world_size = 3;
  json entries = EntriesWithoutTheOthers(rank0, Entry(0), "the rank store failed: broken pipe");
  ASSERT_EQ(entries.size(), 3u);
  MergeRankResults(report, entries, kGpu);
  EXPECT_EQ(report.Verdict(), "fail");
  const CheckResult& c = Check(report, "train.roundtrip");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("rank 1: the rank store failed: broken pipe"), std::string::npos)
      << c.summary;
  EXPECT_NE(c.summary.find("rank 2: the rank store failed"), std::string::npos) << c.summary;
}

TEST(RankMerge, AGpuComputingDifferentBitsFromItsPeersFailsTheRoundTripNamingOnlyIt) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0), Entry(1), Entry(2, "d2"), Entry(3)}), kGpu);
  const CheckResult& c = Check(report, "train.roundtrip");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.metrics["ranks_bitwise_identical"], false);
  EXPECT_EQ(c.metrics["ranks_computing_differently"], json::array({2}));
  EXPECT_NE(c.summary.find("rank 2 (cuda:2) computed different bits"), std::string::npos)
      << c.summary;
  EXPECT_NE(c.remedy.find("dcgmi diag"), std::string::npos);
}

TEST(RankMerge, TwoGpusThatDisagreeWithNoMajorityAreBothNamed) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0, "d1"), Entry(1, "d2")}), kGpu);
  const CheckResult& c = Check(report, "train.roundtrip");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.metrics["ranks_computing_differently"], json::array({0, 1}));
}

TEST(RankMerge, GpusOfDifferentModelsAreNotComparedBitwise) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0, "d1"), Entry(1, "d2", 1000, "NVIDIA H100")}),
                   kGpu);
  EXPECT_EQ(Check(report, "train.roundtrip").status, CheckStatus::kPass);
  EXPECT_TRUE(Check(report, "train.roundtrip").metrics["ranks_bitwise_identical"].is_null());
}

TEST(RankMerge, RanksWhoseOwnResumeWasNotBitwiseAreNotCompared) {
  // Under a loss tolerance the kernels need not be deterministic: bits may differ anywhere.
  Report report = LeadReport();
  json a = Entry(0, "d1"), b = Entry(1, "d2");
  a["train"]["bitwise_equal"] = false;
  b["train"]["bitwise_equal"] = false;
  MergeRankResults(report, json::array({a, b}), kGpu);
  EXPECT_EQ(Check(report, "train.roundtrip").status, CheckStatus::kPass);
}

TEST(RankMerge, AGpuTrainingSlowerThanTheMarginBelowTheMedianIsAStraggler) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0), Entry(1), Entry(2, "d1", 700), Entry(3)}), kGpu);
  const CheckResult& c = Check(report, "train.step");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.metrics["slowest_rank"], 2);
  EXPECT_DOUBLE_EQ(c.metrics["slowest_to_median"].get<double>(), 0.7);
  EXPECT_NE(c.summary.find("slowest rank 2 (cuda:2) at 0.70x the median tokens/s: a straggler"),
            std::string::npos)
      << c.summary;
}

TEST(RankMerge, AGpuWithinTheMarginIsNamedAsSlowestButPasses) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0), Entry(1, "d1", 900)}), kGpu);
  EXPECT_EQ(Check(report, "train.step").status, CheckStatus::kPass);
  EXPECT_EQ(Check(report, "train.step").metrics["slowest_rank"], 1);
}

TEST(RankMerge, OnCpuASlowRankIsReportedButIsNotANodeFinding) {
  Report report = LeadReport();
  MergeRankResults(report, json::array({Entry(0), Entry(1, "d1", 500)}), {false, 0.20});
  EXPECT_EQ(Check(report, "train.step").status, CheckStatus::kPass);
  EXPECT_NE(Check(report, "train.step").summary.find("CPU processes share cores"),
            std::string::npos);
}

TEST(RankMerge, ASkippedMergedCheckStaysSkipped) {
  Report report = LeadReport();
  for (CheckResult& c : report.checks) c.status = CheckStatus::kSkip;
  json bad = Entry(1);
  bad["checks"]["train.step"]["status"] = "fail";
  MergeRankResults(report, json::array({Entry(0), bad, MissingRankEntry(2, "gone")}), kGpu);
  for (const CheckResult& c : report.checks) EXPECT_EQ(c.status, CheckStatus::kSkip) << c.id;
}

TEST(RankMerge, ManyFailingRanksAreNamedUpToThreeThenCounted) {
  Report report = LeadReport();
  json entries = json::array({Entry(0)});
  for (int r = 1; r <= 6; ++r) {
    json e = Entry(r);
    e["checks"]["train.eval"] = {{"status", "error"}, {"summary", "boom"}};
    entries.push_back(e);
  }
  MergeRankResults(report, entries, kGpu);
  const std::string& summary = Check(report, "train.eval").summary;
  EXPECT_NE(summary.find("rank 3 (cuda:3): boom"), std::string::npos);
  EXPECT_EQ(summary.find("rank 4 (cuda:4)"), std::string::npos);
  EXPECT_NE(summary.find("more ranks failed"), std::string::npos);
}

TEST(RankEntry, CarriesThePerRankChecksAndTheTrainingNumbersTheMergeCompares) {
  RankEnv rank{.rank = 3,
               .world_size = 8,
               .local_rank = 3,
               .node_rank = 0,
               .master_addr = "127.0.0.1",
               .master_port = 29500,
               .launcher = "torchrun"};
  CheckResult step = Passed("train.step", "step 0.1 s");
  step.metrics = {{"device_name", "NVIDIA H200"}, {"tokens_per_s", 1234.5}, {"flops", 1.0}};
  CheckResult roundtrip = Passed("train.roundtrip");
  roundtrip.metrics = {{"reference_digest", "abc"}, {"bitwise_equal", true}, {"pids", {}}};
  const json entry = RankEntry(rank, "node7", "cuda:3", {Passed("env.driver"), step, roundtrip});
  EXPECT_EQ(entry["rank"], 3);
  EXPECT_EQ(entry["host"], "node7");
  EXPECT_EQ(entry["device"], "cuda:3");
  EXPECT_FALSE(entry["checks"].contains("env.driver"));  // rank 0 runs the node's checks
  EXPECT_EQ(entry["checks"]["train.step"]["summary"], "step 0.1 s");
  EXPECT_EQ(entry["train"]["tokens_per_s"], 1234.5);
  EXPECT_EQ(entry["train"]["reference_digest"], "abc");
  EXPECT_FALSE(entry["train"].contains("flops"));
}

TEST(RankEntry, ANodesLocalRankZeroCarriesItsNodeChecksAndDevices) {
  RankEnv rank{.rank = 8,
               .world_size = 16,
               .local_rank = 0,
               .node_rank = 1,
               .master_addr = "10.0.0.1",
               .master_port = 29500,
               .launcher = "torchrun"};
  CheckResult health = Passed("env.health");
  health.status = CheckStatus::kFail;
  health.remedy = "reseat the GPU";
  const json devices = json::array({{{"index", 0}, {"name", "NVIDIA H200"}}});
  const json entry = RankEntry(rank, "node-b", "cuda:0", {health, Passed("perf.hbm")}, devices);
  EXPECT_EQ(entry["node_rank"], 1);
  EXPECT_EQ(entry["checks"]["env.health"]["status"], "fail");
  EXPECT_EQ(entry["checks"]["env.health"]["remedy"], "reseat the GPU");
  EXPECT_TRUE(entry["checks"].contains("perf.hbm"));
  EXPECT_EQ(entry["devices"], devices);
}

// A two-node job: rank 0 on node-a, rank 1 the local rank 0 of node-b.
json NodeLead(int rank, const std::string& host, const std::string& status) {
  json e = Entry(rank);
  e["local_rank"] = 0;
  e["node_rank"] = rank;
  e["host"] = host;
  e["checks"]["data.model"] = {{"status", status},
                               {"summary", status == "pass" ? "ok" : "config.json missing"}};
  e["checks"]["data.model"]["remedy"] = "run trainlock fetch";
  if (rank != 0) e["devices"] = json::array({{{"index", 0}, {"name", "NVIDIA H200"}}});
  return e;
}

TEST(RankMerge, ANodeCheckFailingOnAnotherNodeFailsTheMergedCheckNamingThatNode) {
  Report report = LeadReport();
  report.checks.push_back(Passed("data.model"));
  MergeRankResults(
      report, json::array({NodeLead(0, "node-a", "pass"), NodeLead(1, "node-b", "fail")}), kGpu);
  const CheckResult& c = Check(report, "data.model");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("node node-b (rank 1): config.json missing"), std::string::npos);
  EXPECT_NE(c.remedy.find("node node-b: run trainlock fetch"), std::string::npos);
  ASSERT_EQ(c.metrics["nodes"].size(), 2u);
  EXPECT_EQ(c.metrics["nodes"][1]["node"], "node-b");
  EXPECT_EQ(c.metrics["nodes"][1]["status"], "fail");
}

TEST(RankMerge, NodeChecksPassingOnEveryNodeStayPassingAndListEachNode) {
  Report report = LeadReport();
  report.checks.push_back(Passed("data.model"));
  MergeRankResults(
      report, json::array({NodeLead(0, "node-a", "pass"), NodeLead(1, "node-b", "pass")}), kGpu);
  const CheckResult& c = Check(report, "data.model");
  EXPECT_EQ(c.status, CheckStatus::kPass);
  EXPECT_EQ(c.metrics["nodes"][0]["node"], "node-a");
  EXPECT_EQ(c.metrics["nodes"][1]["node"], "node-b");
}

// A node whose lead skipped a node check (no NVML, MIG mode) was not judged: the merged check is
// no pass for it.
TEST(RankMerge, ANodeCheckSkippedOnAnotherNodeIsASkipNamingThatNode) {
  Report report = LeadReport();
  report.checks.push_back(Passed("data.model"));
  MergeRankResults(
      report, json::array({NodeLead(0, "node-a", "pass"), NodeLead(1, "node-b", "skip")}), kGpu);
  const CheckResult& c = Check(report, "data.model");
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_NE(c.summary.find("node node-b (rank 1) not judged: config.json missing"),
            std::string::npos)
      << c.summary;
}

TEST(RankMerge, ANodeLeadWithoutTheCheckIsNotCountedAsPassingIt) {
  Report report = LeadReport();
  report.checks.push_back(Passed("data.model"));
  json lead = NodeLead(1, "node-b", "pass");
  lead["checks"].erase("data.model");
  MergeRankResults(report, json::array({NodeLead(0, "node-a", "pass"), lead}), kGpu);
  const CheckResult& c = Check(report, "data.model");
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_NE(c.summary.find("node node-b (rank 1) not judged: its report has no data.model"),
            std::string::npos)
      << c.summary;
}

TEST(RankMerge, ANodeFailingAfterAnUnjudgedOneFailsTheMergedCheck) {
  Report report = LeadReport();
  report.checks.push_back(Passed("data.model"));
  MergeRankResults(report,
                   json::array({NodeLead(0, "node-a", "pass"), NodeLead(1, "node-b", "skip"),
                                NodeLead(2, "node-c", "fail")}),
                   kGpu);
  EXPECT_EQ(Check(report, "data.model").status, CheckStatus::kFail);
}

TEST(RankMerge, TheMergedReportListsTheDevicesOfEveryOtherNodeNamedByNode) {
  Report report = LeadReport();
  MergeRankResults(
      report, json::array({NodeLead(0, "node-a", "pass"), NodeLead(1, "node-b", "pass")}), kGpu);
  // Rank 0's own devices are already the report's; the other node's are added with their node.
  int from_b = 0;
  for (const json& d : report.devices) from_b += d.value("node", "") == "node-b";
  EXPECT_EQ(from_b, 1);
}

}  // namespace
}  // namespace trainlock::validate
