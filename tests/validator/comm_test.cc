// comm.allreduce and comm.ddp over Gloo with 2, 3 and 4 CPU processes, started the three ways
// an operator starts them (trainlock-validate --nproc, torchrun's variables, srun's); every
// rank's own round trip; and the failures a single process never shows: a rank that dies
// mid-collective, one that never joins.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "comm/collectives.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunResult;

const json& CheckOf(const json& report, const std::string& id) {
  for (const json& c : report["checks"]) {
    if (c["id"] == id) return c;
  }
  static const json kNone;
  return kNone;
}

std::string Tiny() {
  return (testing::SourceDir() / "examples/tiny").string();
}

// The arguments every rank gets: only the collectives, small messages, bounded waits.
std::vector<std::string> CommArgs(const fs::path& out, int timeout_s = 60) {
  // --device cpu: Gloo also on the GPU machine, where 3 or 4 ranks would share 2 GPUs.
  return {"validate",
          Tiny(),
          "--out",
          out.string(),
          "--device",
          "cpu",
          "--only",
          "comm.allreduce,comm.ddp",
          "--comm-max-mib",
          "2",
          "--threads",
          "1",
          "--join-timeout",
          std::to_string(timeout_s),
          "--collective-timeout",
          std::to_string(timeout_s)};
}

// torch wheels ship no Gloo headers: a validator built against one has no CPU collectives.
bool BuiltWithoutGloo(const fs::path& report) {
  return fs::exists(report) &&
         testing::ReadFile(report).find("built without Gloo") != std::string::npos;
}
#define SKIP_WITHOUT_GLOO(report) \
  if (BuiltWithoutGloo(report)) GTEST_SKIP() << "this validator was built without Gloo"

void ExpectBothCommChecksPass(const json& report, int world) {
  const json& allreduce = CheckOf(report, "comm.allreduce");
  EXPECT_EQ(allreduce["status"], "pass") << allreduce["summary"];
  EXPECT_EQ(allreduce["metrics"]["world_size"], world);
  EXPECT_EQ(allreduce["metrics"]["backend"], "gloo");
  EXPECT_TRUE(allreduce["metrics"]["sums_exact"].get<bool>());
  ASSERT_EQ(allreduce["metrics"]["sizes"].size(), 2u);  // 1 MiB and 2 MiB
  for (const json& size : allreduce["metrics"]["sizes"]) {
    EXPECT_NEAR(size["busbw_gbps"].get<double>(),
                size["algbw_gbps"].get<double>() * 2.0 * (world - 1) / world, 1e-9);
  }
  const json& ddp = CheckOf(report, "comm.ddp");
  EXPECT_EQ(ddp["status"], "pass") << ddp["summary"];
  EXPECT_TRUE(ddp["metrics"]["gradients_equal_within_tolerance"].get<bool>());
  EXPECT_EQ(ddp["metrics"]["step_s_per_rank"].size(), static_cast<size_t>(world));
}

class CommStandalone : public ::testing::TestWithParam<int> {};

TEST_P(CommStandalone, NprocRanksPassOverGlooAndEachWritesItsReport) {
  const int world = GetParam();
  testing::TempDir dir;
  std::vector<std::string> args = CommArgs(dir.path() / "report.json");
  args.insert(args.begin() + 2, {"--nproc", std::to_string(world)});
  RunResult run = testing::RunTrainlock(args);
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  ExpectBothCommChecksPass(merged, world);
  EXPECT_EQ(merged["rank"]["launcher"], "standalone");
  EXPECT_EQ(merged["ranks"].size(), static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    EXPECT_TRUE(fs::exists(dir.path() / ("report.rank-" + std::to_string(r) + ".json"))) << r;
}

INSTANTIATE_TEST_SUITE_P(TwoThreeFour, CommStandalone, ::testing::Values(2, 3, 4));

TEST(CommStandaloneTraining, EveryRankRunsTheRoundTripItselfAndTheRanksAgreeToTheBit) {
  testing::TempDir dir;
  std::vector<std::string> args = CommArgs(dir.path() / "report.json");
  args.erase(args.begin() + 6, args.begin() + 8);  // no --only: the round trip on every rank
  args.insert(args.begin() + 2, {"--nproc", "2"});
  RunResult run = testing::RunProgram("trainlock", args);
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  const json& roundtrip = CheckOf(merged, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "pass") << roundtrip;
  EXPECT_EQ(roundtrip["metrics"]["ranks_bitwise_identical"], true);
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("identical bits on all 2 ranks"),
            std::string::npos);
  EXPECT_EQ(CheckOf(merged, "train.step")["metrics"]["ranks"].size(), 2u);
  const json& rank1 = merged["ranks"][1];
  EXPECT_EQ(rank1["checks"]["train.roundtrip"]["status"], "pass") << rank1;
  EXPECT_EQ(rank1["train"]["reference_digest"], merged["ranks"][0]["train"]["reference_digest"]);
  // Rank 1's own report: its round trip, not the node's checks.
  json own = json::parse(testing::ReadFile(dir.path() / "report.rank-1.json"));
  EXPECT_EQ(CheckOf(own, "train.roundtrip")["status"], "pass");
  EXPECT_EQ(CheckOf(own, "env.driver")["status"], "skip");
  // Each rank's own report is marked partial and names its target; the merged one is whole.
  EXPECT_EQ(own["partial"], true) << own.dump();
  EXPECT_FALSE(merged.contains("partial"));
  EXPECT_EQ(merged["target"], merged["validator"]["build"]);
}

// Starts one trainlock-validate per rank at once with `env_of(rank)` and waits for all.
std::vector<RunResult> RunRanks(int world, const std::vector<std::string>& args,
                                const std::function<std::vector<std::string>(int)>& env_of) {
  std::vector<std::future<RunResult>> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(std::async(
        std::launch::async, [&, r] { return testing::RunProgram("trainlock", args, env_of(r)); }));
  }
  std::vector<RunResult> results;
  for (auto& f : ranks) results.push_back(f.get());
  return results;
}

class CommTorchrun : public ::testing::TestWithParam<int> {};

TEST_P(CommTorchrun, RanksFromTorchrunsVariablesPassOverGloo) {
  const int world = GetParam();
  testing::TempDir dir;
  const int port = testing::FreeLoopbackPort();
  auto results = RunRanks(world, CommArgs(dir.path() / "report.json"), [&](int r) {
    return std::vector<std::string>{"RANK=" + std::to_string(r),
                                    "LOCAL_RANK=" + std::to_string(r),
                                    "WORLD_SIZE=" + std::to_string(world),
                                    "LOCAL_WORLD_SIZE=" + std::to_string(world),
                                    "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + std::to_string(port)};
  });
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(results[static_cast<size_t>(r)].exit_code, 0)
        << r << results[static_cast<size_t>(r)].err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  ExpectBothCommChecksPass(merged, world);
  EXPECT_EQ(merged["rank"]["launcher"], "torchrun");
}

INSTANTIATE_TEST_SUITE_P(TwoAndFour, CommTorchrun, ::testing::Values(2, 4));

// Two nodes simulated on one machine: each rank is its node's local rank 0 (torchrun's
// GROUP_RANK, a node name of its own) with its own copy of the project; node-b lost the pinned
// config.json. Every node's checks run on that node, and the merged report names node-b.
TEST(CommTwoNodes, EachNodeMeasuresItselfAndTheMergedReportNamesTheFailingNode) {
  testing::TempDir dir;
  const std::string model = "\n[model]\nsource = \"local\"\npath = \"model\"\n";
  const std::string config = R"({"model_type": "llama"})";
  testing::WriteFile(dir.path() / "config.json", config);
  uint64_t size = 0;
  const std::string sha = Sha256FileHex(dir.path() / "config.json", &size);
  const std::string pinned = model + "[[model.files]]\npath = \"config.json\"\nsha256 = \"" + sha +
                             "\"\nsize = " + std::to_string(size) + "\n";
  std::vector<fs::path> projects;
  for (const char* node : {"node-a", "node-b"}) {
    projects.push_back(
        testing::TinyWith(dir.path() / node, model + "files = [\"config.json\"]\n", "", pinned));
    fs::create_directories(projects.back() / "model");
  }
  testing::WriteFile(projects[0] / "model/config.json", config);
  const int port = testing::FreeLoopbackPort();
  std::vector<std::future<RunResult>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = CommArgs(projects[r].parent_path() / "report.json");
    args[1] = projects[r].string();
    args[7] = "data.model,comm.allreduce";
    const std::vector<std::string> env = {"RANK=" + std::to_string(r),
                                          "LOCAL_RANK=0",
                                          "GROUP_RANK=" + std::to_string(r),
                                          "WORLD_SIZE=2",
                                          "LOCAL_WORLD_SIZE=1",
                                          "MASTER_ADDR=127.0.0.1",
                                          "MASTER_PORT=" + std::to_string(port),
                                          std::string("TRAINLOCK_NODE_NAME=node-") + "ab"[r]};
    ranks.push_back(std::async(
        std::launch::async, [args, env] { return testing::RunProgram("trainlock", args, env); }));
  }
  std::vector<RunResult> results;
  for (auto& f : ranks) results.push_back(f.get());
  const fs::path merged_path = dir.path() / "node-a/report.json";
  SKIP_WITHOUT_GLOO(merged_path);
  EXPECT_EQ(results[0].exit_code, 1) << results[0].err;
  json merged = json::parse(testing::ReadFile(merged_path));
  const json& data = CheckOf(merged, "data.model");
  EXPECT_EQ(data["status"], "fail") << data;
  EXPECT_NE(data["summary"].get<std::string>().find("node node-b (rank 1)"), std::string::npos)
      << data["summary"];
  ASSERT_EQ(data["metrics"]["nodes"].size(), 2u) << data;
  EXPECT_EQ(data["metrics"]["nodes"][0]["status"], "pass");
  EXPECT_EQ(data["metrics"]["nodes"][1]["node"], "node-b");
  EXPECT_EQ(merged["ranks"][0]["host"], "node-a");
  EXPECT_EQ(merged["ranks"][1]["host"], "node-b");
  EXPECT_EQ(merged["ranks"][1]["node_rank"], 1);
  // node-b's own report: it ran its node's checks itself and left ext.command to rank 0.
  json own = json::parse(testing::ReadFile(dir.path() / "node-b/report.rank-1.json"));
  EXPECT_EQ(CheckOf(own, "data.model")["status"], "fail");
  EXPECT_EQ(CheckOf(merged, "comm.allreduce")["status"], "pass");
}

TEST(CommSlurm, RanksFromSrunsVariablesPassOverGloo) {
  testing::TempDir dir;
  const int port = testing::FreeLoopbackPort();
  auto results = RunRanks(2, CommArgs(dir.path() / "report.json"), [&](int r) {
    return std::vector<std::string>{
        "SLURM_PROCID=" + std::to_string(r), "SLURM_LOCALID=" + std::to_string(r), "SLURM_NTASKS=2",
        "SLURM_LAUNCH_NODE_IPADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)};
  });
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  EXPECT_EQ(results[0].exit_code, 0) << results[0].err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  ExpectBothCommChecksPass(merged, 2);
  EXPECT_EQ(merged["rank"]["launcher"], "slurm");
}

TEST(CommFailure, ARankKilledMidCollectiveIsNamedByTheOthersWithinTheTimeout) {
  testing::TempDir dir;
  std::vector<std::string> args = CommArgs(dir.path() / "report.json", 10);
  args.insert(args.begin() + 2, {"--nproc", "3"});
  const auto start = std::chrono::steady_clock::now();
  RunResult run = testing::RunProgram("trainlock", args, {"TRAINLOCK_FAULT_KILL_RANK=2"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_LT(seconds, 90.0);  // the timeouts bound it: no hang
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  const json& allreduce = CheckOf(merged, "comm.allreduce");
  EXPECT_EQ(allreduce["status"], "fail");
  EXPECT_NE(allreduce["summary"].get<std::string>().find("rank 2 lost during all-reduce"),
            std::string::npos)
      << allreduce["summary"];
  EXPECT_EQ(merged["verdict"], "fail");
  // Rank 0 stopped waiting for the dead rank's result when its heartbeat stopped.
  EXPECT_NE(merged["ranks"][2].value("error", "").find("no heartbeat"), std::string::npos)
      << merged["ranks"][2];
}

TEST(CommFailure, ARankThatNeverJoinsIsNamedWithinTheJoinTimeout) {
  testing::TempDir dir;
  const int port = testing::FreeLoopbackPort();
  // Rank 0 of two starts; rank 1 never does.
  RunResult run =
      testing::RunProgram("trainlock", CommArgs(dir.path() / "report.json", 3),
                          {"RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1",
                           "MASTER_PORT=" + std::to_string(port)});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  for (const char* id : {"comm.allreduce", "comm.ddp"}) {
    EXPECT_EQ(CheckOf(merged, id)["status"], "fail");
    EXPECT_EQ(CheckOf(merged, id)["summary"], "rank 1 did not join within 3s");
  }
}

TEST(CommFailure, ARankSendingWrongDataFailsBothCollectiveChecks) {
  testing::TempDir dir;
  std::vector<std::string> args = CommArgs(dir.path() / "report.json");
  args.insert(args.begin() + 2, {"--nproc", "2"});
  RunResult run = testing::RunProgram("trainlock", args, {"TRAINLOCK_FAULT_CORRUPT_RANK=1"});
  SKIP_WITHOUT_GLOO(dir.path() / "report.json");
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  json merged = json::parse(testing::ReadFile(dir.path() / "report.json"));
  const json& allreduce = CheckOf(merged, "comm.allreduce");
  EXPECT_EQ(allreduce["status"], "fail");
  EXPECT_NE(allreduce["summary"].get<std::string>().find("sums WRONG"), std::string::npos)
      << allreduce["summary"];
  EXPECT_EQ(allreduce["metrics"]["sums_exact"], false);
  const json& ddp = CheckOf(merged, "comm.ddp");
  EXPECT_EQ(ddp["status"], "fail");
  EXPECT_NE(ddp["summary"].get<std::string>().find("DIFFER FROM the single-process gradients"),
            std::string::npos)
      << ddp["summary"];
}

TEST(CommStraggler, ARankSlowerThanTheMedianByMoreThanTheMarginIsNamed) {
  double spread = 0;
  EXPECT_EQ(validate::StragglerRank({0.10, 0.10, 0.13, 0.10}, 0.20, &spread), 2);
  EXPECT_DOUBLE_EQ(spread, 1.3);
  EXPECT_EQ(validate::StragglerRank({0.10, 0.11, 0.10, 0.10}, 0.20, &spread),
            -1);  // 10 %: within it
  EXPECT_EQ(validate::StragglerRank({}, 0.20, &spread), -1);
}

TEST(CommBusBandwidth, IsAlgorithmBandwidthTimesTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(validate::BusBandwidth(1e9, 1.0, 8), 1.75);
  EXPECT_DOUBLE_EQ(validate::BusBandwidth(1e9, 1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(validate::BusBandwidth(1e9, 0.5, 4), 3.0);
}

}  // namespace
}  // namespace trainlock
