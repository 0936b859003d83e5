// Specification of a fleet's round (src/fleet/fleet_round.h): `trainlock fleet summarize --since T
// --node a,b` counts only the reports the named nodes started after the round began, judged by
// the start time each report states under its signature, never by the file's age. A named node
// without such a report is missing; another node's report never changes the exit code.
//
// Against a real Slurm: tests/node_gate_test.cc (SlurmNodeGate.*Round*), where the generated
// validation job records its round and passes it on.
#include <gtest/gtest.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "fleet/fleet.h"
#include "report/report_signing.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunResult;

constexpr const char* kRoundStart = "2026-12-07T12:00:00Z";
constexpr const char* kBefore = "2026-12-07T11:59:59Z";
constexpr const char* kDuring = "2026-12-07T12:05:00Z";

class FleetRoundSummary : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(testing::RunTrainlock({"keygen", (tmp_.path() / "fleet").string()}).exit_code, 0);
    private_key_ = testing::ReadFile(tmp_.path() / "fleet.key");
    fs::create_directories(Reports());
  }
  fs::path Reports() const { return tmp_.path() / "reports"; }

  // A report of `host` that started at `started`, passing or failing train.roundtrip, signed
  // with the fleet's key unless `sign` is false.
  json Report(const std::string& host, const std::string& started, bool passing = true) {
    json r = json::parse(
        testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
    r["host"]["hostname"] = host;
    r["started_at"] = started;
    if (!passing) {
      r["verdict"] = "fail";
      for (json& c : r["checks"])
        if (c["id"] == "train.roundtrip") c["status"] = "fail";
    }
    return r;
  }
  void Put(const std::string& host, json report, bool sign = true) {
    if (sign) SignReport(report, private_key_);
    testing::WriteFile(Reports() / (host + ".json"),
                       sign ? SignedReportText(report) : report.dump(2));
  }
  RunResult Summarize(std::vector<std::string> extra) {
    std::vector<std::string> args = {"fleet", "summarize", Reports().string(), "--since",
                                     kRoundStart};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunTrainlock(args);
  }
  std::string Key() const { return (tmp_.path() / "fleet.pub").string(); }

  testing::TempDir tmp_;
  std::string private_key_;
};

// The node did not report this round: its passing file of an earlier one (written just now, so
// its mtime is of the round) is not its pass.
TEST_F(FleetRoundSummary, AnOldPassingReportOfANamedNodeIsMissingNotAPass) {
  Put("gpu-a", Report("gpu-a", kDuring));
  Put("gpu-b", Report("gpu-b", kBefore));
  RunResult r = Summarize({"--node", "gpu-a,gpu-b", "--key", Key()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-b  missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("started 2026-12-07T11:59:59Z, before the round began at "
                       "2026-12-07T12:00:00Z"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 node: 1 passed, 0 failed, 1 missing"), std::string::npos) << r.out;
}

TEST_F(FleetRoundSummary, AnUnrelatedNodesFailingReportDoesNotChangeTheExitCode) {
  Put("gpu-a", Report("gpu-a", kDuring));
  Put("gpu-z", Report("gpu-z", kDuring, false));
  RunResult r = Summarize({"--node", "gpu-a", "--key", Key()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-z (gpu-z.json, fail): not in this round: the round does not name "
                       "node gpu-z"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("1 node: 1 passed, 0 failed"), std::string::npos) << r.out;
}

// The control of the test above: without the round, the same directory fails.
TEST_F(FleetRoundSummary, WithoutARoundEveryReportCountsAsBefore) {
  Put("gpu-a", Report("gpu-a", kDuring));
  Put("gpu-z", Report("gpu-z", kDuring, false));
  RunResult r = testing::RunTrainlock({"fleet", "summarize", Reports().string(), "--nodes", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

TEST_F(FleetRoundSummary, AFailingReportOfTheRoundFailsIt) {
  Put("gpu-a", Report("gpu-a", kDuring, false));
  RunResult r = Summarize({"--node", "gpu-a", "--key", Key()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-a  fail"), std::string::npos) << r.out;
}

// A crafted start time: the old report's started_at moved into the round after signing.
TEST_F(FleetRoundSummary, AStartTimeChangedAfterSigningIsNotTrusted) {
  json old = Report("gpu-a", kBefore);
  SignReport(old, private_key_);
  old["started_at"] = kDuring;
  testing::WriteFile(Reports() / "gpu-a.json", SignedReportText(old));
  RunResult r = Summarize({"--node", "gpu-a", "--key", Key()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-a  missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("its start time is not trusted: signature: does not verify"),
            std::string::npos)
      << r.out;
}

TEST_F(FleetRoundSummary, AnUnsignedReportCountsOnlyWithAllowUnsigned) {
  Put("gpu-a", Report("gpu-a", kDuring), false);
  RunResult keyed = Summarize({"--node", "gpu-a", "--key", Key()});
  EXPECT_EQ(keyed.exit_code, 1) << keyed.out;
  EXPECT_NE(keyed.out.find("signature: missing"), std::string::npos) << keyed.out;
  RunResult allowed = Summarize({"--node", "gpu-a", "--allow-unsigned"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
}

TEST_F(FleetRoundSummary, ASinceWithoutAKeyOrAllowUnsignedIsBadInput) {
  Put("gpu-a", Report("gpu-a", kDuring));
  RunResult r = Summarize({"--node", "gpu-a"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--since: error: needs --key"), std::string::npos) << r.err;
}

TEST_F(FleetRoundSummary, ASinceThatIsNotRfc3339IsBadInput) {
  Put("gpu-a", Report("gpu-a", kDuring));
  RunResult r = testing::RunTrainlock(
      {"fleet", "summarize", Reports().string(), "--since", "yesterday", "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--since: error: not an RFC 3339 time: 'yesterday'"), std::string::npos)
      << r.err;
}

// The generated Slurm job has the signing key at hand, not its .pub.
TEST_F(FleetRoundSummary, TheSigningKeyVerifiesThroughItsPublicHalf) {
  Put("gpu-a", Report("gpu-a", kDuring));
  RunResult r = Summarize({"--node", "gpu-a", "--key", (tmp_.path() / "fleet.key").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(FleetRoundSummary, JsonNamesTheMissingNodesAndTheReportsOutsideTheRound) {
  Put("gpu-b", Report("gpu-b", kBefore));
  Put("gpu-z", Report("gpu-z", kDuring, false));
  RunResult r = Summarize({"--node", "gpu-a,gpu-b", "--key", Key(), "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["missing_nodes"], json({"gpu-a", "gpu-b"}));
  EXPECT_EQ(out["missing"], 2);
  ASSERT_EQ(out["not_in_round"].size(), 2u);
  EXPECT_EQ(out["not_in_round"][1]["node"], "gpu-z");
  EXPECT_EQ(out["round"]["since"], kRoundStart);
  EXPECT_EQ(out["all_passed"], false);
}

// ---- the rule itself ----

TEST(FleetRoundRule, AReportCountsWhenANamedNodeStartedItAtOrAfterTheStart) {
  FleetRound round;
  round.since_s = 1000;
  round.since = "1970-01-01T00:16:40Z";
  round.nodes = {"gpu-a"};
  EXPECT_EQ(NotInRound(round, "gpu-a", "1970-01-01T00:16:40Z", ""), "");
  EXPECT_NE(NotInRound(round, "gpu-a", "1970-01-01T00:16:39Z", ""), "");
  EXPECT_NE(NotInRound(round, "gpu-b", "1970-01-01T00:16:41Z", ""), "");
  EXPECT_NE(NotInRound(round, "gpu-a", "1970-01-01T00:16:41Z", "signature: missing"), "");
  EXPECT_NE(NotInRound(round, "gpu-a", "", ""), "");
}

TEST(FleetRoundRule, WithoutAStartOrNamesEveryTrustedReportCounts) {
  EXPECT_EQ(NotInRound(FleetRound{}, "any", "", ""), "");
  EXPECT_EQ(UntrustedStartReason(FleetRound{}, "{}", false), "");
}

TEST(FleetRoundRule, TheExpectedCountIsNeverBelowTheNamedNodes) {
  FleetRound round;
  round.nodes = {"a", "b", "c"};
  EXPECT_EQ(round.Expected(), 3);
  round.expected_nodes = 4;  // a pod that never ran names no node
  EXPECT_EQ(round.Expected(), 4);
}

// ---- the generated jobs pass their round on ----

TEST(FleetRoundJobs, TheSlurmJobRecordsItsStartAndNodesAndSummarizesThem) {
  testing::TempDir tmp;
  const fs::path project = testing::CopyExample("h200-pilot", tmp.path() / "p");
  RunResult r = testing::RunTrainlock(
      {"fleet", "slurm", project.string(), "--nodes", "2", "--sign-key", "/shared/fleet.key",
       "--image", "registry.example/h200-pilot@sha256:" + std::string(64, '0')});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t start = r.out.find("ROUND_START=$(date -u +%Y-%m-%dT%H:%M:%SZ)");
  const size_t srun = r.out.find("\nsrun ");
  ASSERT_NE(start, std::string::npos) << r.out;
  EXPECT_LT(start, srun) << "the round must start before any node validates";
  EXPECT_NE(r.out.find("ROUND_NODES=$(scontrol show hostnames"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--since \"$ROUND_START\" --node \"$ROUND_NODES\" --key \"$SIGN_KEY\""),
            std::string::npos)
      << r.out;
}

TEST(FleetRoundJobs, TheKubernetesJobsHeaderSummarizesFromItsCreationOnItsPodsNodes) {
  testing::TempDir tmp;
  const fs::path project = testing::CopyExample("h200-pilot", tmp.path() / "p");
  RunResult r =
      testing::RunTrainlock({"fleet", "k8s", project.string(), "--nodes", "2", "--image",
                             "registry.example/h200-pilot@sha256:" + std::string(64, '0')});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("since=$(kubectl get job trainlock-validate-h200-pilot -o "
                       "jsonpath='{.metadata.creationTimestamp}')"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("jsonpath='{.items[*].spec.nodeName}'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainlock fleet summarize --nodes 2 --since \"$since\" --node \"$nodes\" "
                       "--allow-unsigned reports"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trainlock
