// Where the round trip's final states are written (coordinator/state_dir.h): in memory only when
// the file system, the host and the cgroup all hold them with a margin; each run in a private
// directory of its own, removed when the run ends; a directory a killed validator left is removed
// by the next one, and nothing else is (a live run's, another name, a link).
#include "coordinator/state_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/diagnostic.h"
#include "base/scoped_fd.h"
#include "coordinator/work_dirs.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A host with 128 GiB of memory, a 64 GiB tmpfs and no cgroup limit.
MemoryRoom RoomyHost() {
  MemoryRoom room;
  room.tmpfs = true;
  room.tmpfs_free_bytes = 64 * kGiB;
  room.available_bytes = 120 * kGiB;
  return room;
}

TEST(StatesInMemory, FitWhenTheFileSystemAndTheMemoryHoldThemWithAMargin) {
  EXPECT_EQ(WhyStatesDoNotFitInMemory(RoomyHost(), 15 * kGiB, 2), "");
}

TEST(StatesInMemory, NotOnAFileSystemThatIsNotInMemory) {
  MemoryRoom disk = RoomyHost();
  disk.tmpfs = false;
  EXPECT_EQ(WhyStatesDoNotFitInMemory(disk, kGiB, 2), "not a RAM-backed file system (tmpfs)");
}

TEST(StatesInMemory, NotInADockerSizedShm) {
  MemoryRoom room = RoomyHost();
  room.tmpfs_free_bytes = 64 << 20;  // docker's default /dev/shm
  const std::string why = WhyStatesDoNotFitInMemory(room, 15 * kGiB, 2);
  EXPECT_NE(why.find("it holds 0.1 GiB, the states need 31.0 GiB"), std::string::npos) << why;
}

TEST(StatesInMemory, NotWhenTheHostLacksTheStatesTheStagingCopyAndFourGiB) {
  MemoryRoom room = RoomyHost();
  room.available_bytes = 15 * kGiB * 3 + 4 * kGiB - 1;
  const std::string why = WhyStatesDoNotFitInMemory(room, 15 * kGiB, 2);
  EXPECT_NE(why.find("the host has"), std::string::npos) << why;
  room.available_bytes = 15 * kGiB * 3 + 4 * kGiB;
  EXPECT_EQ(WhyStatesDoNotFitInMemory(room, 15 * kGiB, 2), "");
}

TEST(StatesInMemory, NotWhenTheCgroupsLimitLeavesTooLittle) {
  MemoryRoom room = RoomyHost();
  room.cgroup_free_bytes = 40 * kGiB;
  const std::string why = WhyStatesDoNotFitInMemory(room, 15 * kGiB, 2);
  EXPECT_NE(why.find("this cgroup's memory limit leaves 40.0 GiB"), std::string::npos) << why;
}

TEST(StatesInMemory, RanksSharingTheHostEachNeedTheirOwn) {
  MemoryRoom room = RoomyHost();
  room.tmpfs_free_bytes = 1024 * kGiB;
  room.available_bytes = 1024 * kGiB;                                // an 8-GPU node
  EXPECT_EQ(WhyStatesDoNotFitInMemory(room, 100 * kGiB, 2, 1), "");  // an 8B model's states
  const std::string why = WhyStatesDoNotFitInMemory(room, 100 * kGiB, 2, 8);
  EXPECT_NE(why.find("it holds 1024.0 GiB, the states need 1601.0 GiB"), std::string::npos) << why;
}

TEST(StatesInMemory, AHugeEstimateDoesNotOverflowIntoAFit) {
  EXPECT_NE(WhyStatesDoNotFitInMemory(RoomyHost(), ~uint64_t{0}, 64, 65536), "");
}

TEST(StateDirectory, AGivenDirectoryHoldsAPrivateOneOfThisRunRemovedAtItsEnd) {
  testing::TempDir dir;
  fs::path made;
  {
    const StateDirectory states =
        StateDirectory::Choose(dir.path() / "work", dir.path(), dir.path() / "no-shm", kGiB, 2);
    EXPECT_EQ(states.where(), "option");
    made = states.path();
    EXPECT_EQ(made.parent_path(), dir.path());
    EXPECT_TRUE(made.filename().string().starts_with("trainlock-states-")) << made;
    EXPECT_EQ(fs::status(made).permissions() & fs::perms::all, fs::perms::owner_all);
    std::ofstream(made / "b-final.safetensors") << "state";
  }
  EXPECT_FALSE(fs::exists(made)) << made;
}

TEST(StateDirectory, WithoutMemoryToUseTheWorkDirectoryIsUsedSayingWhy) {
  testing::TempDir dir;
  const StateDirectory states =
      StateDirectory::Choose(dir.path(), "", dir.path() / "no-shm", kGiB, 2);
  EXPECT_EQ(states.where(), "work-dir");
  EXPECT_EQ(states.path(), dir.path());
  EXPECT_NE(states.why_not_memory().find("no-shm: not a directory"), std::string::npos)
      << states.why_not_memory();
}

TEST(StateDirectory, AMissingGivenDirectoryIsAnInputErrorNamingTheOption) {
  testing::TempDir dir;
  try {
    RequireStateDirectory(dir.path() / "missing");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--state-dir"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

// A directory as a validator that was killed leaves it: its owner file unlocked.
fs::path Abandoned(const fs::path& root, const std::string& name) {
  fs::create_directories(root / name / "inner");
  std::ofstream(root / name / ".owner");
  std::ofstream(root / name / "inner" / "c-final.safetensors") << "15 GB, once";
  return root / name;
}

TEST(AbandonedStateDirectories, OneWhoseValidatorEndedIsRemoved) {
  testing::TempDir dir;
  const fs::path left = Abandoned(dir.path(), "trainlock-states-aaaaaa");
  EXPECT_EQ(RemoveAbandonedStateDirectories(dir.path()), 1);
  EXPECT_FALSE(fs::exists(left));
}

TEST(AbandonedStateDirectories, OneWhoseValidatorRunsIsKept) {
  testing::TempDir dir;
  const StateDirectory live = StateDirectory::Choose(dir.path(), dir.path(), "", kGiB, 2);
  EXPECT_EQ(RemoveAbandonedStateDirectories(dir.path()), 0);
  EXPECT_TRUE(fs::exists(live.path() / ".owner"));
}

TEST(AbandonedStateDirectories, OthersAreLeftAlone) {
  testing::TempDir dir;
  Abandoned(dir.path(), "someone-elses");
  fs::create_directories(dir.path() / "trainlock-states-nolock");  // still being made
  const fs::path target = Abandoned(dir.path(), "target");
  fs::create_directory_symlink(target, dir.path() / "trainlock-states-link");
  EXPECT_EQ(RemoveAbandonedStateDirectories(dir.path()), 0);
  EXPECT_TRUE(fs::exists(dir.path() / "someone-elses" / ".owner"));
  EXPECT_TRUE(fs::exists(dir.path() / "trainlock-states-nolock"));
  EXPECT_TRUE(fs::exists(target / "inner" / "c-final.safetensors"));
}

}  // namespace
}  // namespace trainlock::validate
