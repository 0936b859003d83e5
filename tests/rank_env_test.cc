// Specification of how a validator process learns its rank from its launcher's environment.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "base/diagnostic.h"
#include "base/rank_env.h"

namespace trainlock {
namespace {

std::optional<RankEnv> Detect(const std::map<std::string, std::string>& vars) {
  return DetectRankEnv([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(RankEnv, NoLauncherVariablesIsASingleProcess) {
  EXPECT_FALSE(Detect({}).has_value());
}

TEST(RankEnv, TorchrunVariablesGiveRankWorldAndRendezvous) {
  auto env = Detect({{"RANK", "3"},
                     {"WORLD_SIZE", "8"},
                     {"LOCAL_RANK", "3"},
                     {"MASTER_ADDR", "10.0.0.1"},
                     {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 8);
  EXPECT_EQ(env->local_rank, 3);
  EXPECT_EQ(env->master_addr, "10.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->launcher, "torchrun");
}

TEST(RankEnv, NprocMarksItselfAsTheLauncher) {
  auto env = Detect({{"RANK", "0"},
                     {"WORLD_SIZE", "2"},
                     {"MASTER_ADDR", "127.0.0.1"},
                     {"MASTER_PORT", "40000"},
                     {"TRAINLOCK_LAUNCHER", "standalone"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->launcher, "standalone");
}

TEST(RankEnv, SlurmVariablesUseTheLaunchNodeAndAPortFromTheJobId) {
  auto env = Detect({{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "16"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_LAUNCH_NODE_IPADDR", "10.0.0.7"},
                     {"SLURM_JOB_ID", "123456"}});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->rank, 5);
  EXPECT_EQ(env->world_size, 16);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "10.0.0.7");
  EXPECT_EQ(env->master_port, 20000 + 123456 % 20000);
  EXPECT_EQ(env->launcher, "slurm");
}

TEST(RankEnv, ARankOutsideTheWorldIsBadInputNamingTheVariable) {
  try {
    Detect({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().items()[0].Format(),
              "RANK: error: '2' is not an integer in [0, 1]; check the launcher's environment");
  }
}

TEST(RankEnv, TorchrunWithoutMasterAddrIsBadInput) {
  EXPECT_THROW(Detect({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}), InputError);
}

TEST(RankEnv, RankReportsSitBesideTheMergedReport) {
  EXPECT_EQ(RankReportPath("out/report.json", 3), "out/report.rank-3.json");
  EXPECT_EQ(RankReportPath("report.json", 0), "report.rank-0.json");
}

TEST(RankEnv, HostNameIsTheKernelsHostName) {
  std::ifstream kernel("/proc/sys/kernel/hostname");
  std::string expected;
  std::getline(kernel, expected);
  EXPECT_FALSE(HostName().empty());
  if (!expected.empty()) {
    EXPECT_EQ(HostName(), expected);
  }
}

// The final states a rank keeps in memory are counted once per rank that shares the host.
int RanksHere(const std::map<std::string, std::string>& vars) {
  auto getenv = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  return RanksOnThisHost(DetectRankEnv(getenv), getenv);
}

TEST(RanksOnThisHost, ASingleProcessIsOne) {
  EXPECT_EQ(RanksHere({}), 1);
}

TEST(RanksOnThisHost, TorchrunSaysItsLocalWorldSize) {
  EXPECT_EQ(RanksHere({{"RANK", "3"},
                       {"WORLD_SIZE", "16"},
                       {"LOCAL_WORLD_SIZE", "8"},
                       {"MASTER_ADDR", "n0"},
                       {"MASTER_PORT", "29500"}}),
            8);
}

TEST(RanksOnThisHost, SlurmsTasksPerNodeIsReadToItsFirstCount) {
  EXPECT_EQ(RanksHere({{"SLURM_PROCID", "1"},
                       {"SLURM_NTASKS", "8"},
                       {"SLURM_LOCALID", "1"},
                       {"SLURM_TASKS_PER_NODE", "4(x2)"},
                       {"MASTER_ADDR", "n0"},
                       {"MASTER_PORT", "29500"}}),
            4);
}

TEST(RanksOnThisHost, WithoutAPerHostCountEveryRankMayShareIt) {
  EXPECT_EQ(RanksHere({{"RANK", "0"},
                       {"WORLD_SIZE", "4"},
                       {"LOCAL_WORLD_SIZE", "many"},
                       {"MASTER_ADDR", "n0"},
                       {"MASTER_PORT", "29500"}}),
            4);
}

}  // namespace
}  // namespace trainlock
