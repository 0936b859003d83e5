// Where a validation writes: under shared checkpoint storage, a directory of its own whose
// name no other run (another container's PID 1 included) can share or predict.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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
  const fs::path first = validate::CheckpointRoot(options, project, dir.path() / "work");
  const fs::path second = validate::CheckpointRoot(options, project, dir.path() / "work");
  EXPECT_NE(first, second);
  for (const fs::path& root : {first, second}) {
    EXPECT_EQ(root.parent_path(), dir.path() / "shared");
    EXPECT_TRUE(fs::is_directory(root));
    EXPECT_NE(root.filename(), "trainlock-validate-" + std::to_string(::getpid()));
  }
}

}  // namespace
}  // namespace trainlock
