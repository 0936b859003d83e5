// `trainlock lock` hashes a local source's files, and a prebuilt custom-op library, only when
// they are regular files inside the project: a symlink out of the project or a FIFO is bad
// input (exit 2), named, and no lock is written. The validator's data checks apply the same
// rule (data_checks_test.cc).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "base/sha256.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLocalDataset =
    "[dataset]\nsource = \"local\"\npath = \"data\"\nfiles = [\"a.bin\"]\n";

class LocalSources : public ::testing::Test {
 protected:
  void SetUp() override { project_ = testing::UnlockedTiny(dir_.path() / "p", "", kLocalDataset); }

  testing::RunResult Lock() {
    return testing::RunCommand({"timeout", "60", (testing::BinDir() / "trainlock").string(), "lock",
                                project_.string(), "--offline"});
  }

  testing::TempDir dir_;
  fs::path project_;
};

TEST_F(LocalSources, AFileLinkedOutOfTheProjectIsRefused) {
  testing::WriteFile(dir_.path() / "outside/a.bin", "secret bytes");
  fs::create_directories(project_ / "data");
  fs::create_symlink(dir_.path() / "outside/a.bin", project_ / "data/a.bin");
  auto r = Lock();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project_ / "data/a.bin").string() + ": error: resolves to "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("outside the project"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project_ / "trainlock.lock"));
}

TEST_F(LocalSources, AFifoIsRefusedAtOnce) {
  fs::create_directories(project_ / "data");
  ASSERT_EQ(::mkfifo((project_ / "data/a.bin").c_str(), 0600), 0);
  auto r = Lock();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project_ / "data/a.bin").string() + ": error: not a regular file"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project_ / "trainlock.lock"));
}

TEST_F(LocalSources, ALinkThatStaysInsideTheProjectIsHashedAsItsTarget) {
  testing::WriteFile(project_ / "store/a.bin", "token bytes");
  fs::create_directories(project_ / "data");
  fs::create_symlink("../store/a.bin", project_ / "data/a.bin");
  auto r = Lock();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Lockfile lock = LoadLockfile(testing::ReadFile(project_ / "trainlock.lock"), "trainlock.lock",
                               LockfileKind::kLock);
  ASSERT_TRUE(lock.dataset);
  EXPECT_EQ(lock.dataset->files.at(0).sha256, Sha256Hex("token bytes"));
}

TEST_F(LocalSources, APrebuiltCustomOpLibraryLinkedOutOfTheProjectIsRefused) {
  const fs::path project =
      testing::UnlockedTiny(dir_.path() / "ops-project", "",
                            "\n[[custom-ops]]\nlibrary = \"ops/libx.so\"\nops = [\"x::y\"]\n");
  testing::WriteFile(dir_.path() / "outside/libx.so", "secret bytes");
  fs::create_directories(project / "ops");
  fs::create_symlink(dir_.path() / "outside/libx.so", project / "ops/libx.so");
  auto r = testing::RunCommand({"timeout", "60", (testing::BinDir() / "trainlock").string(), "lock",
                                project.string(), "--offline"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / "ops/libx.so").string() + ": error: resolves to "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("a prebuilt custom-op library must be inside the project"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

}  // namespace
}  // namespace trainlock
