// Specification of the golden digest (src/report/golden_digest.h): its format in the report, the
// key it is comparable under, the one rule that names a node computing differently
// (src/report/golden_compare.h), and `trainlock fleet summarize` comparing a round's reports key
// by key, and with `--lock` against the digest the lock pins for a key (src/report/golden_pin.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fleet/fleet.h"
#include "report/check_metrics.h"
#include "report/golden_compare.h"
#include "report/golden_digest.h"
#include "report/golden_pin.h"
#include "report/report.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunResult;

const std::string kA(64, 'a');
const std::string kB(64, 'b');
const std::string kC(64, 'c');

// ---- the rule ----

TEST(GoldenCompare, DigestsThatAgreeNameNoOne) {
  const GoldenVerdict v = CompareGolden({{"n1", kA}, {"n2", kA}, {"n3", kA}});
  EXPECT_TRUE(v.differing.empty());
  EXPECT_EQ(v.reason, "");
}

TEST(GoldenCompare, TheOneNodeAgainstTheMajorityIsNamedAsComputingDifferently) {
  const GoldenVerdict v = CompareGolden({{"n1", kA}, {"n2", kA}, {"n3", kB}, {"n4", kA}});
  EXPECT_EQ(v.differing, std::vector<std::string>{"n3"});
  EXPECT_EQ(v.reference, kA);
  EXPECT_NE(v.reason.find("n3 computed a golden digest other than the aaaaaaaaaaaa of the other "
                          "3 nodes under its key"),
            std::string::npos)
      << v.reason;
  EXPECT_NE(v.reason.find("computes differently, suspected silent data corruption (not a slow "
                          "or unhealthy node)"),
            std::string::npos)
      << v.reason;
}

TEST(GoldenCompare, TwoThatDisagreeAreBothNamed) {
  const GoldenVerdict v = CompareGolden({{"n1", kA}, {"n2", kB}});
  EXPECT_EQ(v.differing, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_TRUE(v.reason.starts_with("these two disagree: n1 and n2")) << v.reason;
}

TEST(GoldenCompare, WithoutAMajorityEveryNodeIsNamed) {
  const GoldenVerdict v = CompareGolden({{"n1", kA}, {"n2", kA}, {"n3", kB}, {"n4", kB}});
  EXPECT_EQ(v.differing.size(), 4u);
  EXPECT_EQ(v.reference, "");
}

TEST(GoldenCompare, ASingleNodeIsComparedWithNoOne) {
  EXPECT_TRUE(CompareGolden({{"n1", kA}}).differing.empty());
}

TEST(GoldenCompare, APinDecidesAgainstEvenAMajority) {
  const GoldenVerdict v = CompareGolden({{"n1", kA}, {"n2", kA}, {"n3", kC}}, kC);
  EXPECT_EQ(v.differing, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_NE(v.reason.find("not the cccccccccccc the lock pins for its key"), std::string::npos)
      << v.reason;
}

// ---- the format ----

GoldenDigest Sample() {
  GoldenDigest g;
  g.digest = kA;
  g.key.gpu = "NVIDIA H200";
  g.key.compute_capability = "9.0";
  g.key.driver = "580.95.05";
  g.key.torch = "2.11.0";
  g.key.engine = "native";
  g.key.lock_sha256 = kB;
  g.key.config_sha256 = kC;
  return g;
}

TEST(GoldenDigestFormat, TheReportMemberReadsBackAsWritten) {
  const GoldenDigest g = Sample();
  const json member = ToJson(g);
  EXPECT_EQ(member["key_sha256"], GoldenKeyId(g.key));
  EXPECT_EQ(GoldenSchemaProblem(member), "");
  const std::optional<GoldenDigest> back = ReadGolden(member);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->digest, g.digest);
  EXPECT_EQ(back->key, g.key);
}

TEST(GoldenDigestFormat, EveryPartOfTheKeyChangesItsName) {
  const GoldenKey base = Sample().key;
  for (std::string GoldenKey::*member :
       {&GoldenKey::gpu, &GoldenKey::compute_capability, &GoldenKey::driver, &GoldenKey::cuda,
        &GoldenKey::cublas, &GoldenKey::cudnn, &GoldenKey::nccl, &GoldenKey::torch,
        &GoldenKey::engine, &GoldenKey::image_digest, &GoldenKey::lock_sha256,
        &GoldenKey::config_sha256}) {
    GoldenKey other = base;
    other.*member += "x";
    EXPECT_NE(GoldenKeyId(other), GoldenKeyId(base));
  }
}

TEST(GoldenDigestFormat, TheSchemaRefusesAMalformedMember) {
  json member = ToJson(Sample());
  member["digest"] = "not hex";
  EXPECT_NE(GoldenSchemaProblem(member), "");
  member = ToJson(Sample());
  member["key"].erase("driver");
  EXPECT_EQ(GoldenSchemaProblem(member), "key.driver must be a string");
  EXPECT_EQ(GoldenSchemaProblem(json()), "");  // null: no golden digest
}

// A report as the validator finishes it: train.roundtrip passed bitwise with its golden digest.
Report FinishedReport(bool bitwise) {
  Report r;
  r.lock_sha256 = kB;
  r.config_sha256 = kC;
  r.torch_version = "1.13.1";
  r.build = "cuda";
  r.devices = json::array({{{"index", 0},
                            {"name", "NVIDIA H200"},
                            {"uuid", "GPU-1"},
                            {"memory_bytes", 1},
                            {"compute_capability", "9.0"}}});
  TrainStepMetrics step;
  step.device_name = "NVIDIA H200";
  // As the validator writes them: the driver in env.driver (NVML), the libraries in
  // env.versions.
  EnvVersionMetrics driver;
  driver.driver_version = "580.95.05";
  driver.cuda_driver_version = "13.0";
  EnvVersionMetrics versions;
  versions.cuda_runtime = "13.0";
  versions.nccl = "2.27.3";
  RoundtripMetrics roundtrip;
  roundtrip.bitwise_equal = bitwise;
  roundtrip.golden_digest = kA;
  r.checks = {{"env.driver", CheckStatus::kPass, 0, "", "", ToJson(driver)},
              {"env.versions", CheckStatus::kPass, 0, "", "", ToJson(versions)},
              {"train.step", CheckStatus::kPass, 0, "", "", ToJson(step)},
              {"train.roundtrip", bitwise ? CheckStatus::kPass : CheckStatus::kFail, 0, "x", "",
               ToJson(roundtrip)}};
  return r;
}

TEST(GoldenOfReport, ABitwiseRoundTripGivesTheDigestWithTheKeyOfTheDeviceThatTrained) {
  const std::optional<GoldenDigest> g = GoldenOfReport(FinishedReport(true));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->digest, kA);
  EXPECT_EQ(g->key.gpu, "NVIDIA H200");
  EXPECT_EQ(g->key.compute_capability, "9.0");
  EXPECT_EQ(g->key.driver, "580.95.05");
  EXPECT_EQ(g->key.cuda, "13.0");
  EXPECT_EQ(g->key.nccl, "2.27.3");
  EXPECT_EQ(g->key.torch, "1.13.1");
  EXPECT_EQ(g->key.engine, "native");
  EXPECT_EQ(g->key.lock_sha256, kB);
  EXPECT_EQ(g->key.config_sha256, kC);
}

TEST(GoldenOfReport, ARoundTripThatDidNotResumeBitwiseHasNone) {
  EXPECT_FALSE(GoldenOfReport(FinishedReport(false)));
}

TEST(GoldenOfReport, EveryReportCarriesTheMemberNullWhenThereIsNone) {
  Report r = FinishedReport(false);
  EXPECT_TRUE(r.ToJson().contains("golden"));
  EXPECT_TRUE(r.ToJson()["golden"].is_null());
  r.golden = GoldenOfReport(FinishedReport(true));
  EXPECT_EQ(r.ToJson()["golden"]["digest"], kA);
}

// ---- fleet summarize compares a round's reports ----

class FleetGolden : public ::testing::Test {
 protected:
  void Put(const std::string& node, const std::string& digest, const std::string& gpu = "") {
    json r = json::parse(
        testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
    r["host"]["hostname"] = node;
    GoldenDigest g = Sample();
    g.digest = digest;
    if (!gpu.empty()) g.key.gpu = gpu;
    r["golden"] = ToJson(g);
    testing::WriteFile(tmp_.path() / (node + ".json"), r.dump(2));
  }
  RunResult Summarize() {
    return testing::RunTrainlock({"fleet", "summarize", tmp_.path().string()});
  }
  // examples/tiny's lock with `digest` pinned under the reports' key (Sample's), as `lock
  // --golden` writes it; the lock the reports name is the key's, so the pin is accepted as its.
  std::string LockPinning(const std::string& digest) {
    const fs::path dir = testing::CopyExample("tiny", lock_tmp_.path() / "tiny");
    GoldenDigest pin = Sample();
    pin.digest = digest;
    const fs::path lock = dir / "trainlock.lock";
    testing::WriteFile(lock, LockTextWithGoldenPin(testing::ReadFile(lock), "trainlock.lock",
                                                   pin.key.lock_sha256, pin));
    return lock.string();
  }
  RunResult SummarizeWithLock(const std::string& lock) {
    return testing::RunTrainlock({"fleet", "summarize", tmp_.path().string(), "--lock", lock});
  }
  testing::TempDir tmp_;
  testing::TempDir lock_tmp_;
};

TEST_F(FleetGolden, OfFourNodesTheOneThatComputesDifferentlyIsNamedAndFailsTheRound) {
  for (const char* node : {"gpu-1", "gpu-2", "gpu-4"}) Put(node, kA);
  Put("gpu-3", kB);
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-3  fail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("computes differently (golden digest, below)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu-3 computed a golden digest other than the aaaaaaaaaaaa of the other 3 "
                       "nodes under its key"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu-1  pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 nodes: 3 passed, 1 failed"), std::string::npos) << r.out;
}

TEST_F(FleetGolden, AgreeingNodesPass) {
  for (const char* node : {"gpu-1", "gpu-2", "gpu-3"}) Put(node, kA);
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 nodes agree on aaaaaaaaaaaa"), std::string::npos) << r.out;
}

TEST_F(FleetGolden, TwoNodesThatDisagreeAreBothNamed) {
  Put("gpu-1", kA);
  Put("gpu-2", kB);
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("these two disagree: gpu-1 and gpu-2"), std::string::npos) << r.out;
}

// Another GPU model computes other bits, legitimately: its key is its own.
TEST_F(FleetGolden, ANodeUnderAKeyOfItsOwnIsNeverComparedWithAnotherKey) {
  Put("gpu-1", kA);
  Put("gpu-2", kA);
  Put("h100-1", kB, "NVIDIA H100 80GB HBM3");
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("h100-1 alone under its key, compared with no other"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("2 nodes agree on aaaaaaaaaaaa"), std::string::npos) << r.out;
}

TEST_F(FleetGolden, JsonNamesTheNodeThatComputesDifferently) {
  for (const char* node : {"gpu-1", "gpu-2", "gpu-4"}) Put(node, kA);
  Put("gpu-3", kB);
  RunResult r = testing::RunTrainlock({"fleet", "summarize", tmp_.path().string(), "--json"});
  const json out = json::parse(r.out);
  ASSERT_EQ(out["golden"].size(), 1u);
  EXPECT_EQ(out["golden"][0]["differing"], json({"gpu-3"}));
  EXPECT_EQ(out["golden"][0]["digest"], kA);
  EXPECT_EQ(out["nodes"][2]["node"], "gpu-3");
  EXPECT_NE(out["nodes"][2]["computes_differently"].get<std::string>().find("silent data"),
            std::string::npos);
}

// ---- fleet summarize --lock: the lock's pin judges a key, as at the gate ----

// One new node, validated alone: without the lock nothing compares it; with the lock's pin it is
// named by the gate's rule and fails the round.
TEST_F(FleetGolden, WithTheLockOneNewNodeIsNamedAgainstThePinWithoutTheOthers) {
  Put("gpu-9", kB);
  ASSERT_EQ(Summarize().exit_code, 0) << "alone under its key, compared with nothing";
  RunResult r = SummarizeWithLock(LockPinning(kA));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-9  fail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("computes differently from the lock's golden digest (suspected silent data "
                       "corruption)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu-9 computed golden digest bbbbbbbbbbbb, not the aaaaaaaaaaaa the lock "
                       "pins for its key"),
            std::string::npos)
      << r.out;
}

// The pin decides, not the majority: three nodes that agree on another digest are all named.
TEST_F(FleetGolden, WithTheLockAMajorityThatDiffersFromThePinIsNamed) {
  for (const char* node : {"gpu-1", "gpu-2", "gpu-3"}) Put(node, kB);
  Put("gpu-4", kA);
  RunResult r = SummarizeWithLock(LockPinning(kA));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("gpu-1, gpu-2 and gpu-3 computed golden digest bbbbbbbbbbbb"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu-4  pass"), std::string::npos) << r.out;
}

TEST_F(FleetGolden, WithTheLockNodesThatComputedThePinPass) {
  Put("gpu-1", kA);
  Put("gpu-2", kA);
  RunResult r = SummarizeWithLock(LockPinning(kA));
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 nodes computed the aaaaaaaaaaaa the lock pins"), std::string::npos)
      << r.out;
  RunResult j = testing::RunTrainlock(
      {"fleet", "summarize", tmp_.path().string(), "--lock", LockPinning(kA), "--json"});
  EXPECT_EQ(json::parse(j.out)["golden"][0]["pinned"], true) << j.out;
}

// A key the lock pins nothing for is compared among its nodes as without the lock.
TEST_F(FleetGolden, WithTheLockAKeyItDoesNotPinIsComparedAmongItsNodes) {
  Put("h100-1", kA, "NVIDIA H100 80GB HBM3");
  Put("h100-2", kB, "NVIDIA H100 80GB HBM3");
  RunResult r = SummarizeWithLock(LockPinning(kA));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("these two disagree: h100-1 and h100-2"), std::string::npos) << r.out;
}

// The gate refuses a report without a golden digest where the lock pins some; the round's
// summary fails that node by the same rule, and says why, not that it computes differently.
TEST_F(FleetGolden, WithTheLockAPassingReportWithoutAGoldenDigestFailsItsNodeAsAtTheGate) {
  Put("gpu-1", kA);
  json r = json::parse(testing::ReadFile(tmp_.path() / "gpu-1.json"));
  r["host"]["hostname"] = "gpu-2";
  r["golden"] = nullptr;
  testing::WriteFile(tmp_.path() / "gpu-2.json", r.dump(2));
  ASSERT_EQ(Summarize().exit_code, 0) << "without the lock nothing asks for a digest";
  RunResult out = SummarizeWithLock(LockPinning(kA));
  EXPECT_EQ(out.exit_code, 1) << out.out << out.err;
  EXPECT_NE(out.out.find("gpu-2  fail"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("the lock pins golden digests and the report carries none"),
            std::string::npos)
      << out.out;
  EXPECT_EQ(out.out.find("gpu-2 computed"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("gpu-1  pass"), std::string::npos) << out.out;
}

TEST_F(FleetGolden, ALockThatIsNotThereIsBadInput) {
  Put("gpu-1", kA);
  RunResult r = SummarizeWithLock((lock_tmp_.path() / "trainlock.lock").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("trainlock.lock"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainlock
