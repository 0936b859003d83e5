// DIR/.trainlock ignores itself in a git work tree: the command that creates it writes
// .trainlock/.gitignore holding "*" (as Python's venv and cargo's target/ do), so the cache,
// reports, generated images and container storage never show in `git status`.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/diagnostic.h"
#include "project/artifact_paths.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCommand;

// examples/tiny as a git work tree with everything committed; DIR.
fs::path CommittedTiny(const fs::path& parent) {
  const fs::path dir = parent / "tiny";
  fs::create_directories(dir);
  testing::CopyExample("tiny", dir);
  const std::string d = dir.string();
  EXPECT_EQ(RunCommand({"git", "-C", d, "init", "-q"}).exit_code, 0);
  EXPECT_EQ(RunCommand({"git", "-C", d, "add", "-A"}).exit_code, 0);
  EXPECT_EQ(RunCommand({"git", "-C", d, "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                        "-qm", "tiny"})
                .exit_code,
            0);
  return dir;
}

TEST(TrainlockDir, ImageGenerateLeavesTheWorkTreeClean) {
  if (!testing::HaveProgram("git")) GTEST_SKIP() << "git is not installed";
  const testing::TempDir tmp;
  const fs::path dir = CommittedTiny(tmp.path());
  const testing::RunResult r =
      testing::RunTrainlock({"image", "generate", dir.string(), "--target", "cpu",
                             "--source-date-epoch", "1764547200", "--build-validator"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / ".trainlock/image-cpu/Containerfile"));
  EXPECT_EQ(ReadFile(dir / ".trainlock/.gitignore"), "*\n");
  const testing::RunResult status =
      RunCommand({"git", "-C", dir.string(), "status", "--porcelain"});
  EXPECT_EQ(status.out, "") << status.out;
}

TEST(TrainlockDir, AGitignoreOfTheUsersOwnIsLeftAsItIs) {
  const testing::TempDir tmp;
  fs::create_directories(tmp.path() / ".trainlock");
  testing::WriteFile(tmp.path() / ".trainlock/.gitignore", "cache/\n");
  IgnoreTrainlockDir(tmp.path() / ".trainlock/reports/report.json");
  EXPECT_EQ(ReadFile(tmp.path() / ".trainlock/.gitignore"), "cache/\n");
}

TEST(TrainlockDir, APathOutsideAnyTrainlockDirGetsNoGitignore) {
  const testing::TempDir tmp;
  IgnoreTrainlockDir(tmp.path() / "out/report.json");
  EXPECT_FALSE(fs::exists(tmp.path() / "out"));
  EXPECT_FALSE(fs::exists(tmp.path() / ".gitignore"));
}

TEST(TrainlockDir, ALinkAtTrainlockIsRefusedNamingIt) {
  const testing::TempDir tmp;
  fs::create_directories(tmp.path() / "victim");
  fs::create_directory_symlink(tmp.path() / "victim", tmp.path() / ".trainlock");
  try {
    IgnoreTrainlockDir(tmp.path() / ".trainlock/reports/report.json");
    ADD_FAILURE() << "a link at .trainlock was followed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(".trainlock: error: is a symbolic link"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_empty(tmp.path() / "victim"));
}

TEST(TrainlockDir, ALinkBelowTrainlockIsRefusedNamingIt) {
  const testing::TempDir tmp;
  fs::create_directories(tmp.path() / "victim");
  fs::create_directories(tmp.path() / ".trainlock");
  fs::create_directory_symlink(tmp.path() / "victim", tmp.path() / ".trainlock/reports");
  EXPECT_THROW(IgnoreTrainlockDir(tmp.path() / ".trainlock/reports/report.json"), InputError);
}

TEST(TrainlockDir, ComponentsNotYetMadeAreLeftToTheCaller) {
  const testing::TempDir tmp;
  IgnoreTrainlockDir(tmp.path() / ".trainlock/image-cpu/Containerfile");
  EXPECT_TRUE(fs::is_directory(tmp.path() / ".trainlock"));
  EXPECT_FALSE(fs::exists(tmp.path() / ".trainlock/image-cpu"));
}

// The validator's default report path: refused before any work, nothing written where the link
// points.
TEST(TrainlockDir, ValidateRefusesAReportsLinkBeforeAnyWork) {
  const testing::TempDir tmp;
  const fs::path dir = tmp.path() / "tiny";
  fs::create_directories(dir / ".trainlock");
  testing::CopyExample("tiny", dir);
  fs::create_directories(tmp.path() / "victim");
  fs::create_directory_symlink(tmp.path() / "victim", dir / ".trainlock/reports");
  const testing::RunResult r = testing::RunProgram(
      "trainlock-validate", {dir.string(), "--only", "env.versions", "--progress", "none"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(".trainlock/reports: error: is a symbolic link"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(tmp.path() / "victim"));
}

}  // namespace
}  // namespace trainlock
