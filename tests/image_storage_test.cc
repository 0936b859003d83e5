// `trainlock image storage DIR [--free]`: what DIR/.trainlock holds, entry by entry, counted as
// du counts (allocated blocks, a hard link once, a symlink as a link, never followed), and
// freeing its container storage (storage_usage.h). The freeing through buildah is exercised on
// real storage by CpuImage (tests/image_cpu_e2e_test.cc).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "base/safe_paths.h"
#include "image/storage_usage.h"
#include "test_support.h"

namespace trainlock {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

const StorageEntry* Find(const std::vector<StorageEntry>& entries, const std::string& name) {
  for (const StorageEntry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(TrainlockDirUsage, EntriesAreListedLargestFirstWithWhatTheyTakeOnDisk) {
  TempDir dir;
  const fs::path root = dir.path() / ".trainlock";
  testing::WriteFile(root / "cache" / "model.safetensors", std::string(3 << 20, 'w'));
  testing::WriteFile(root / "reports" / "report.json", "{}");
  const auto entries = TrainlockDirUsage(root);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "cache");
  EXPECT_GE(entries[0].bytes, uintmax_t{3} << 20);
  EXPECT_EQ(entries[0].files, 2u);  // the directory and its file
  EXPECT_EQ(entries[1].name, "reports");
  EXPECT_LT(entries[1].bytes, uintmax_t{1} << 20);
}

TEST(TrainlockDirUsage, ASymlinkOutOfTheDirectoryIsCountedAsALinkNotFollowed) {
  TempDir dir;
  const fs::path root = dir.path() / ".trainlock";
  testing::WriteFile(dir.path() / "outside" / "big", std::string(4 << 20, 'o'));
  fs::create_directories(root / "cache");
  fs::create_directory_symlink(dir.path() / "outside", root / "cache" / "linked");
  fs::create_directory_symlink(dir.path() / "outside", root / "reports");
  const auto entries = TrainlockDirUsage(root);
  for (const char* name : {"cache", "reports"}) {
    const StorageEntry* e = Find(entries, name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_LT(e->bytes, uintmax_t{1} << 20) << name;
  }
}

TEST(TrainlockDirUsage, AHardLinkedFileIsCountedOnce) {
  TempDir dir;
  const fs::path root = dir.path() / ".trainlock";
  testing::WriteFile(root / "containers" / "layer-a", std::string(2 << 20, 'l'));
  fs::create_directories(root / "build-cpu");
  fs::create_hard_link(root / "containers" / "layer-a", root / "build-cpu" / "layer-a");
  const auto entries = TrainlockDirUsage(root);
  uintmax_t total = 0;
  for (const StorageEntry& e : entries) total += e.bytes;
  EXPECT_GE(total, uintmax_t{2} << 20);
  EXPECT_LT(total, uintmax_t{4} << 20);
}

TEST(TrainlockDirUsage, ADirectoryWithoutTrainlockStorageHasNoEntries) {
  TempDir dir;
  EXPECT_TRUE(TrainlockDirUsage(dir.path() / ".trainlock").empty());
}

TEST(ImageStorageCommand, ListsTheEntriesAndTheirTotal) {
  TempDir dir;
  testing::WriteFile(dir.path() / ".trainlock" / "cache" / "weights", std::string(2 << 20, 'w'));
  const auto r = testing::RunTrainlock({"image", "storage", dir.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find((dir.path() / ".trainlock").string() + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in all"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  cache "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pinned model and dataset files"), std::string::npos) << r.out;
}

// Issue #61: an entry named with an OSC sequence, a newline that would forge a "9.9 GiB" row and
// U+202E is listed escaped: one line per entry, nothing a terminal acts on.
TEST(ImageStorageCommand, AHostileEntryNameIsListedEscapedOnOneLine) {
  TempDir dir;
  const std::string hostile =
      "x\x1b]0;pwned\x07\n  cache        9.9 GiB  \xe2\x80\xae"
      "fake";
  testing::WriteFile(dir.path() / ".trainlock" / hostile / "f", "data");
  const auto r = testing::RunTrainlock({"image", "storage", dir.path().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n  cache        9.9 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x\\x1b]0;pwned\\x07\\x0a"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // the total, one entry
}

TEST(ImageStorageCommand, JsonGivesEachEntrysBytes) {
  TempDir dir;
  testing::WriteFile(dir.path() / ".trainlock" / "reports" / "report.json", "{}");
  const auto r = testing::RunTrainlock({"image", "storage", dir.path().string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["entries"].size(), 1u) << r.out;
  EXPECT_EQ(doc["entries"][0]["name"], "reports");
  EXPECT_GT(doc["entries"][0]["bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(doc["freed_bytes"].is_null());
}

TEST(ImageStorageCommand, FreeWithoutContainerStorageFreesNothingAndNeedsNoEngine) {
  TempDir dir;
  testing::WriteFile(dir.path() / ".trainlock" / "reports" / "report.json", "{}");
  const auto r = testing::RunTrainlock({"image", "storage", dir.path().string(), "--free"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("freed 0"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir.path() / ".trainlock" / "reports" / "report.json"));
}

TEST(ImageStorageCommand, ContainerStorageThatIsASymlinkIsNotFollowed) {
  TempDir dir;
  testing::WriteFile(dir.path() / "elsewhere" / "keep", "x");
  fs::create_directories(dir.path() / "project" / ".trainlock");
  fs::create_directory_symlink(dir.path() / "elsewhere",
                               dir.path() / "project" / ".trainlock" / "containers");
  const auto r =
      testing::RunTrainlock({"image", "storage", (dir.path() / "project").string(), "--free"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(".trainlock/containers: error: is a symbolic link"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir.path() / "elsewhere" / "keep"));
}

// A .trainlock a cloned project carries as a link: `--free` would delete the containers
// directory of wherever it points (as root, /var/lib/containers for a link to /var/lib).
TEST(ImageStorageCommand, ATrainlockDirThatIsASymlinkIsRefusedAndNothingIsFreed) {
  TempDir dir;
  testing::WriteFile(dir.path() / "victim" / "containers" / "precious", "x");
  fs::create_directories(dir.path() / "project");
  fs::create_directory_symlink(dir.path() / "victim", dir.path() / "project" / ".trainlock");
  const auto r =
      testing::RunTrainlock({"image", "storage", (dir.path() / "project").string(), "--free"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("project/.trainlock: error: is a symbolic link"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir.path() / "victim" / "containers" / "precious"));
}

// The check before the engine runs is not enough: `.trainlock` swapped for a link while buildah
// removes the images made the removal by path afterwards delete the containers directory of
// wherever the link points. The delete re-checks at the moment it runs.
TEST(ImageStorageCommand, ATrainlockDirSwappedForALinkWhileTheEngineRunsIsNotDeletedThrough) {
  TempDir dir;
  const fs::path project = dir.path() / "project";
  testing::WriteFile(dir.path() / "victim" / "containers" / "precious", "x");
  testing::WriteFile(project / ".trainlock" / "containers" / "layer", "l");
  const fs::path bin = dir.path() / "bin";
  testing::WriteFile(bin / "buildah", "#!/bin/sh\ncase \" $* \" in *\" rmi \"*)\n  /bin/mv " +
                                          (project / ".trainlock").string() + " " +
                                          (dir.path() / "moved").string() + "\n  /bin/ln -s " +
                                          (dir.path() / "victim").string() + " " +
                                          (project / ".trainlock").string() + ";;\nesac\nexit 0\n");
  fs::permissions(bin / "buildah", fs::perms::owner_all);
  const auto r = testing::RunProgram("trainlock", {"image", "storage", project.string(), "--free"},
                                     {"PATH=" + bin.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("project/.trainlock: error: is a symbolic link"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(dir.path() / "victim" / "containers" / "precious"));
}

// What the delete walks may hold links too: each is removed as a link, its target left alone.
TEST(RemoveTreeAt, RemovesATreeAndTheLinksInItNeverWhatTheyPointTo) {
  TempDir dir;
  testing::WriteFile(dir.path() / "outside" / "keep", "k");
  testing::WriteFile(dir.path() / "tree" / "a" / "b" / "file", "f");
  fs::create_directory_symlink(dir.path() / "outside", dir.path() / "tree" / "a" / "dirlink");
  fs::create_symlink(dir.path() / "outside" / "keep", dir.path() / "tree" / "filelink");
  const ScopedFd top(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_FALSE(RemoveTreeAt(top.get(), "tree"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir.path() / "tree")));
  EXPECT_TRUE(fs::exists(dir.path() / "outside" / "keep"));
  EXPECT_FALSE(RemoveTreeAt(top.get(), "tree"));  // nothing there: nothing to say
}

}  // namespace
}  // namespace trainlock
