// Where a validation writes: under shared checkpoint storage, a directory of its own whose
// name no other run (another container's PID 1 included) can share or predict; storage that
// is missing is refused, never created; under --work-dir, a fresh directory per run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/diagnostic.h"
#include "coordinator/work_dirs.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointRoot, EachRunUnderSharedStorageGetsAFreshDirectoryNotNamedAfterItsPid) {
  testing::TempDir dir;
  Project project;
  project.dir = dir.path();
  project.lock.emplace();
  validate::ValidateOptions options;
  options.checkpoint_dir = dir.path() / "shared";
  fs::create_directories(options.checkpoint_dir);  // the storage exists: it is never created
  const fs::path first = validate::CheckpointRoot(options, project, dir.path() / "work");
  const fs::path second = validate::CheckpointRoot(options, project, dir.path() / "work");
  EXPECT_NE(first, second);
  for (const fs::path& root : {first, second}) {
    EXPECT_EQ(root.parent_path(), dir.path() / "shared");
    EXPECT_TRUE(fs::is_directory(root));
    EXPECT_NE(root.filename(), "trainlock-validate-" + std::to_string(::getpid()));
  }
}

// A rerun with the same --work-dir never reads what an earlier run left there: each run works
// in a fresh, empty directory of its own under it.
TEST(MakeWorkDir, EachRunGetsAFreshDirectoryUnderWorkDirNotTheEarlierRunsFiles) {
  testing::TempDir dir;
  validate::ValidateOptions options;
  options.work_dir = dir.path();
  testing::WriteFile(dir.path() / "a-uninterrupted.json", R"({"losses": [{"loss": 0.1}]})");
  const fs::path first = validate::MakeWorkDir(options, std::nullopt);
  testing::WriteFile(first / "a-uninterrupted.json", R"({"losses": [{"loss": 0.1}]})");
  const fs::path second = validate::MakeWorkDir(options, std::nullopt);
  EXPECT_NE(first, second);
  for (const fs::path& work : {first, second}) {
    EXPECT_EQ(work.parent_path(), dir.path());
    EXPECT_NE(work, dir.path());
  }
  EXPECT_TRUE(fs::is_empty(second));
}

Project TinyProjectWithLockCheckpointDir(const fs::path& dir, const std::string& checkpoint_dir) {
  Project project;
  project.dir = dir;
  project.lock_path = "trainlock.lock";
  project.lock.emplace();
  project.lock->validate.checkpoint_dir = checkpoint_dir;
  return project;
}

// The lock's checkpoint storage is the long run's: a missing one is bad input naming the lock
// field, and the validator does not create it (as root, anywhere) and pass.
TEST(CheckpointRoot, AMissingLockCheckpointDirIsRefusedAndNotCreated) {
  testing::TempDir dir;
  const Project project = TinyProjectWithLockCheckpointDir(dir.path(), "ckpt");
  try {
    validate::CheckpointRoot({}, project, dir.path() / "work");
    ADD_FAILURE() << "a missing checkpoint-dir was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("trainlock.lock: error: validate.checkpoint-dir: '" +
                                         (dir.path() / "ckpt").string() + "' does not exist"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path() / "ckpt"));
}

TEST(CheckpointRoot, ACheckpointDirOptionThatIsAFileIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "file", "");
  const Project project = TinyProjectWithLockCheckpointDir(dir.path(), "");
  validate::ValidateOptions options;
  options.checkpoint_dir = dir.path() / "file";
  try {
    validate::RequireCheckpointStorage(validate::ChooseCheckpointStorage(options, project),
                                       project);
    ADD_FAILURE() << "a file was accepted as checkpoint storage";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--checkpoint-dir: error: '" +
                                         (dir.path() / "file").string() + "' is not a directory"),
              std::string::npos)
        << e.what();
  }
}

// Where the storage came from, as the report states it (checkpoint_dir.source).
TEST(CheckpointStorage, TheOptionOverridesTheLockAndSaysSo) {
  testing::TempDir dir;
  const Project project = TinyProjectWithLockCheckpointDir(dir.path(), "ckpt");
  validate::ValidateOptions options;
  EXPECT_EQ(validate::ChooseCheckpointStorage(options, project).source, "lock");
  EXPECT_EQ(validate::ChooseCheckpointStorage(options, project).path, dir.path() / "ckpt");
  options.checkpoint_dir = dir.path() / "other";
  EXPECT_EQ(validate::ChooseCheckpointStorage(options, project).source, "option");
  EXPECT_EQ(validate::ChooseCheckpointStorage({}, TinyProjectWithLockCheckpointDir(dir.path(), ""))
                .source,
            "work-dir");
}

}  // namespace
}  // namespace trainlock
