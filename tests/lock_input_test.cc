// What `trainlock lock` and `lock --check` refuse before pinning anything: a lock, a training
// config or a [python] table that does not load, and a source nothing resolves. Each is bad
// input (exit 2) with the file and position at fault, and the lock on disk is left as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

fs::path Tiny(const testing::TempDir& dir) {
  return testing::CopyExample("tiny", dir.path() / "tiny");
}

void Replace(const fs::path& file, const std::string& from, const std::string& to) {
  std::string text = testing::ReadFile(file);
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  testing::WriteFile(file, text.replace(at, from.size(), to));
}

TEST(LockCheckInput, AMistypedLockFieldIsBadInputAtItsPositionNotAStaleLock) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  Replace(project / "trainlock.lock", "steps = 6", "steps = 'six'");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / "trainlock.lock").string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'validate.steps' must be an integer, not string"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("stale"), std::string::npos) << r.err;
}

TEST(LockCheckInput, ALockThatIsNotTomlIsBadInputAtItsPosition) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  testing::WriteFile(project / "trainlock.lock",
                     testing::ReadFile(project / "trainlock.lock") + "garbage = [\n");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / "trainlock.lock").string() + ":"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stale"), std::string::npos) << r.err;
}

TEST(LockCheckInput, AMissingLockIsStillAVerdict) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  fs::remove(project / "trainlock.lock");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

TEST(LockInput, AConfigThatIsNotYamlIsRefusedBeforeTheLockIsWritten) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  const std::string before = testing::ReadFile(project / "trainlock.lock");
  testing::WriteFile(project / "configs/tiny.yaml", "model: [\n");
  for (const char* mode : {"--offline", "--check"}) {
    auto r = testing::RunTrainlock({"lock", project.string(), mode});
    EXPECT_EQ(r.exit_code, 2) << mode << ": " << r.err;
    EXPECT_NE(r.err.find((project / "configs/tiny.yaml").string() + ":"), std::string::npos)
        << mode << ": " << r.err;
  }
  EXPECT_EQ(testing::ReadFile(project / "trainlock.lock"), before);
}

TEST(LockInput, AConfigOfAnotherSchemaIsRefusedAtItsPosition) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  testing::WriteFile(project / "configs/tiny.yaml", "hello: world\n");
  auto r = testing::RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / "configs/tiny.yaml").string() +
                       ":1:1: error: missing required key 'model'"),
            std::string::npos)
      << r.err;
}

TEST(LockInput, AUrlSourceIsRefusedAtItsSourceField) {
  testing::TempDir dir;
  const fs::path project = Tiny(dir);
  const std::string manifest = testing::ReadFile(project / "trainlock.toml");
  testing::WriteFile(project / "trainlock.toml",
                     manifest +
                         "\n[model]\nsource = \"url\"\nurl = \"https://example.com/m\"\n"
                         "files = [\"model.safetensors\"]\n");
  auto r = testing::RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / "trainlock.toml").string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'model.source' = 'url' is not resolved by `trainlock lock` yet"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("trainlock.lock:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainlock
