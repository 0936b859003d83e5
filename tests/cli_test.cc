// The `trainlock` command line end to end: exit codes, help texts and output formats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "test_support.h"

namespace trainlock {
namespace {

using testing::RunTrainlock;
using testing::SourceDir;

std::string Example(const char* name) {
  return (SourceDir() / "examples" / name).string();
}

// Each example's base is named by tag, whose digest only the registry can check: ok offline.
TEST(CliCheck, ExamplesAreCleanOfflineAndExitZero) {
  for (const char* name : {"tiny", "h200-pilot", "mi300x-pilot"}) {
    auto r = RunTrainlock({"check", Example(name)});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("ok offline:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("not checked offline: "), std::string::npos) << r.out;
  }
}

TEST(CliCheck, JsonOutputCarriesHashesAndFindings) {
  auto r = RunTrainlock({"check", Example("h200-pilot"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["findings"].empty());
  EXPECT_EQ(j["lock_sha256"].get<std::string>().size(), 64u);
}

TEST(CliCheck, FindingsExitOne) {
  testing::TempDir dir;
  testing::CopyExample("h200-pilot", dir.path());
  std::string text = testing::ReadFile(dir.path() / "trainlock.toml");
  text.replace(text.find("580.65.06"), 9, "550.54.14");
  testing::WriteFile(dir.path() / "trainlock.toml", text);
  auto r = RunTrainlock({"check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("finding [compat.driver]"), std::string::npos);
  EXPECT_NE(r.out.find("finding [lock.stale]"), std::string::npos);
}

TEST(CliCheck, MissingDirectoryIsBadInput) {
  auto r = RunTrainlock({"check", "/nonexistent/project"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "/nonexistent/project: error: no such directory\n");
}

// examples/h200-pilot copied elsewhere: its custom op's sources ("../ops") are not beside it,
// which is said at the manifest's field, file:line:column, as other manifest errors are.
TEST(CliCheck, CustomOpSourcesThatAreNotThereAreNamedAtTheirLine) {
  testing::TempDir dir;
  const std::filesystem::path project = dir.path() / "pilot";
  std::filesystem::create_directories(project);
  testing::CopyExample("h200-pilot", project);
  auto r = RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(r.err.starts_with((project / "trainlock.toml").string() +
                                ":20:10: error: custom-ops[0].source: ../ops: no such directory (" +
                                (dir.path() / "ops").string() + ")"))
      << r.err;
}

TEST(CliCheck, MissingManifestNamesTheFile) {
  testing::TempDir dir;
  auto r = RunTrainlock({"check", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock.toml: error: cannot read: no such file"), std::string::npos);
}

TEST(CliCheck, MissingManifestSaysToRunInit) {
  testing::TempDir dir;
  auto r = RunTrainlock({"check", dir.path().string()});
  EXPECT_NE(r.err.find("no trainlock.toml in " + dir.path().string() + "; run `trainlock init " +
                       dir.path().string() + " --from-hub ORG/NAME"),
            std::string::npos)
      << r.err;
}

TEST(CliUsage, UnknownOptionIsBadInput) {
  EXPECT_EQ(RunTrainlock({"check", "--frobnicate"}).exit_code, 2);
}

TEST(CliUsage, NoSubcommandIsBadInput) {
  EXPECT_EQ(RunTrainlock({}).exit_code, 2);
}

TEST(CliUsage, HelpDescribesEveryCommand) {
  auto r = RunTrainlock({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* command : {"check", "hash"}) {
    EXPECT_NE(r.out.find(command), std::string::npos) << command;
  }
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(CliUsage, EachSubcommandHasItsOwnHelp) {
  EXPECT_NE(RunTrainlock({"check", "--help"}).out.find("compatibility findings"),
            std::string::npos);
  EXPECT_NE(RunTrainlock({"hash", "--help"}).out.find("lock-sha256"), std::string::npos);
}

TEST(CliHash, PrintsTheLockIdentity) {
  auto r = RunTrainlock({"hash", Example("tiny")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), 65u);
  auto again = RunTrainlock({"hash", Example("tiny")});
  EXPECT_EQ(r.out, again.out);
}

TEST(CliHash, ManifestFlagPrintsTheManifestIdentityTheLockRecords) {
  auto r = RunTrainlock({"hash", "--manifest", Example("tiny")});
  ASSERT_EQ(r.exit_code, 0);
  std::string lock = testing::ReadFile(SourceDir() / "examples/tiny/trainlock.lock");
  // The lock as `trainlock lock` writes it (toml++'s formatter: literal strings).
  EXPECT_NE(lock.find("manifest-sha256 = '" + r.out.substr(0, 64) + "'"), std::string::npos);
}

TEST(CliArchs, PrintsTheCudaTargetsComputeCapabilitiesAsACMakeList) {
  auto r = RunTrainlock({"archs", Example("h200-pilot"), "--target", "cuda"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "90\n");  // H200 and H100-80GB are both sm_90
}

TEST(CliArchs, PrintsTheRocmTargetsGfxTargets) {
  auto r = RunTrainlock({"archs", Example("mi300x-pilot"), "--target", "rocm", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["architectures"], nlohmann::json({"gfx942"}));
}

TEST(CliArchs, TheTargetDefaultsToTheLocksOnlyGpuTarget) {
  auto r = RunTrainlock({"archs", Example("h200-pilot")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "90\n");
  auto cpu_only = RunTrainlock({"archs", Example("tiny")});
  EXPECT_EQ(cpu_only.exit_code, 2);
  EXPECT_NE(cpu_only.err.find("has no GPU target"), std::string::npos) << cpu_only.err;
}

TEST(CliArchs, TorchPrintsTheTorchCudaArchListForm) {
  auto r = RunTrainlock({"archs", Example("h200-pilot"), "--torch"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "9.0\n");
}

TEST(CliArchs, ATargetTheLockLacksIsBadInputNamingTheLock) {
  auto r = RunTrainlock({"archs", Example("h200-pilot"), "--target", "rocm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock.lock: error: no [targets.rocm]"), std::string::npos) << r.err;
}

TEST(CliCatalog, ReadsAnotherCatalogDirectory) {
  auto r = RunTrainlock(
      {"--catalog", (SourceDir() / "lockfiles/compat").string(), "check", Example("h200-pilot")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto bad = RunTrainlock({"--catalog", "/nonexistent", "check", Example("h200-pilot")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/nonexistent/cuda-drivers.toml: error: cannot read"), std::string::npos);
}

TEST(CliCatalog, ArchsReadsTheSameCatalogOption) {
  auto bad = RunTrainlock(
      {"--catalog", "/nonexistent", "archs", Example("h200-pilot"), "--target", "cuda"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("/nonexistent/cuda-drivers.toml: error: cannot read"), std::string::npos);
}

TEST(CliFetch, WithoutALockIsBadInputNamingTheLock) {
  testing::TempDir tmp;
  const auto project = testing::UnlockedTiny(tmp.path() / "p", "");
  auto r = RunTrainlock({"fetch", project.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, (project / "trainlock.lock").string() +
                       ": error: cannot read: no such file: fetch downloads what the lock "
                       "pins; run `trainlock lock " +
                       project.string() + "`\n");
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

// `trainlock lock --json` prints what it did as data, with and without --check.
TEST(CliLockJson, WriteAndCheckPrintTheLockIdentityAsJson) {
  testing::TempDir dir;
  const std::filesystem::path project = testing::UnlockedTiny(dir.path() / "tiny", "");
  auto wrote = testing::RunTrainlock({"lock", project.string(), "--offline", "--json"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  nlohmann::json w = nlohmann::json::parse(wrote.out);
  EXPECT_EQ(w["written"], true);
  EXPECT_EQ(w["lock_sha256"].get<std::string>().size(), 64u);
  auto checked =
      testing::RunTrainlock({"lock", project.string(), "--check", "--offline", "--json"});
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  nlohmann::json c = nlohmann::json::parse(checked.out);
  EXPECT_EQ(c["up_to_date"], true);
  EXPECT_EQ(c["lock_sha256"], w["lock_sha256"]);
}

}  // namespace
}  // namespace trainlock
