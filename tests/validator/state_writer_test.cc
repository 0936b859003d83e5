// The final-state writer (validators/engines/native/state_writer.h): the file several threads
// write is the one WriteSafetensors writes, byte for byte, and it never writes through a link;
// a file prepared ahead holds the same bytes, appears at its name only once written and never
// stays behind.
#include "engines/native/state_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/failure.h"
#include "engines/native/safetensors.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

// Tensors of several dtypes, one of them larger than a writer thread's 64 MiB slice, so slices of
// one tensor land at their places from different threads.
std::vector<NamedTensor> MixedState() {
  torch::manual_seed(7);
  return {{"model.layers.0.w", torch::randn({17 << 20})},  // 68 MiB of float32
          {"model.embed.weight", torch::randn({33, 7}).to(torch::kBFloat16)},
          {"step", torch::tensor({int64_t{42}})},
          {"empty", torch::empty({0})},
          {"a.exp_avg", torch::randn({5, 3}, torch::kDouble)}};
}

TEST(StateWriter, WritesTheFileWriteSafetensorsWritesByteForByte) {
  testing::TempDir dir;
  const std::vector<NamedTensor> state = MixedState();
  const WrittenFile parallel = WriteStateFile(dir.path() / "parallel.safetensors", state);
  WriteSafetensors(dir.path() / "serial.safetensors", state, {}, /*durable=*/false);
  const std::string written = testing::ReadFile(dir.path() / "parallel.safetensors");
  EXPECT_EQ(parallel.bytes, written.size());
  EXPECT_TRUE(written == testing::ReadFile(dir.path() / "serial.safetensors"));
  const auto back = ReadSafetensors(dir.path() / "parallel.safetensors");
  EXPECT_TRUE(torch::equal(back.at("model.layers.0.w"), state[0].tensor));
  EXPECT_TRUE(torch::equal(back.at("model.embed.weight"), state[1].tensor));
}

TEST(StateWriter, ALongerFileLeftAtItsPathIsReplacedWhole) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "final.safetensors";
  testing::WriteFile(file, std::string(200 << 20, 'x'));  // longer than the state
  const WrittenFile written = WriteStateFile(file, MixedState());
  EXPECT_EQ(fs::file_size(file), written.bytes);
  EXPECT_TRUE(torch::equal(ReadSafetensors(file).at("step"), torch::tensor({int64_t{42}})));
}

TEST(StateWriter, RefusesALinkPlantedAtItsPathAndLeavesItsTargetAlone) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "target", "untouched");
  fs::create_symlink(dir.path() / "target", dir.path() / "final.safetensors");
  EXPECT_THROW(WriteStateFile(dir.path() / "final.safetensors", MixedState()), Failure);
  EXPECT_EQ(testing::ReadFile(dir.path() / "target"), "untouched");
}

TEST(StateWriter, APreparedFileHoldsTheSameBytesAndIsRenamedToItsName) {
  testing::TempDir dir;
  const std::vector<NamedTensor> state = MixedState();
  const fs::path file = dir.path() / "final.safetensors";
  PreparedStateFile prepared(file, state);
  const std::optional<PreparedState> ready = prepared.Ready(file);
  ASSERT_TRUE(ready.has_value());      // tmpfs and ext4 both allocate ahead
  EXPECT_NE(ready->mapping, nullptr);  // and map it
  EXPECT_FALSE(fs::exists(file));      // nothing at the coordinator's name before the write
  WriteStateFile(file, state, ready);
  WriteSafetensors(dir.path() / "serial.safetensors", state, {}, /*durable=*/false);
  EXPECT_TRUE(testing::ReadFile(file) == testing::ReadFile(dir.path() / "serial.safetensors"));
  EXPECT_FALSE(fs::exists(ready->path));
}

// A prepared file sized for other tensors (a state that grew) is written with pwrite, whole.
TEST(StateWriter, AStateLargerThanThePreparedMappingIsWrittenWholeWithoutIt) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "final.safetensors";
  PreparedStateFile prepared(file, {{"step", torch::tensor({int64_t{1}})}});
  const std::vector<NamedTensor> state = MixedState();
  WriteStateFile(file, state, prepared.Ready(file));
  WriteSafetensors(dir.path() / "serial.safetensors", state, {}, /*durable=*/false);
  EXPECT_TRUE(testing::ReadFile(file) == testing::ReadFile(dir.path() / "serial.safetensors"));
}

TEST(StateWriter, APreparedFileNeverUsedIsRemoved) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "final.safetensors";
  fs::path left;
  {
    PreparedStateFile prepared(file, MixedState());
    left = file.string() + ".prepared";
  }
  EXPECT_FALSE(fs::exists(left));
}

TEST(StateWriter, APreparedFileIsOnlyHandedToTheFileItWasMadeFor) {
  testing::TempDir dir;
  PreparedStateFile prepared(dir.path() / "b-final.safetensors", MixedState());
  EXPECT_FALSE(prepared.Ready(dir.path() / "c-final.safetensors").has_value());
}

TEST(StateWriter, AFileAlreadyAtThePreparedNameIsNeitherUsedNorRemoved) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "final.safetensors";
  testing::WriteFile(file.string() + ".prepared", "someone else's");
  {
    PreparedStateFile prepared(file, MixedState());
    EXPECT_FALSE(prepared.Ready(file).has_value());
    WriteStateFile(file, MixedState(), prepared.Ready(file));  // written as without preparing
  }
  EXPECT_EQ(testing::ReadFile(file.string() + ".prepared"), "someone else's");
  EXPECT_TRUE(torch::equal(ReadSafetensors(file).at("step"), torch::tensor({int64_t{42}})));
}

TEST(StateWriter, ALinkPlantedAtTheNameOfAPreparedWriteIsReplacedAndItsTargetLeftAlone) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "final.safetensors";
  testing::WriteFile(dir.path() / "target", "untouched");
  fs::create_symlink(dir.path() / "target", file);
  PreparedStateFile prepared(file, MixedState());
  WriteStateFile(file, MixedState(), prepared.Ready(file));
  EXPECT_FALSE(fs::is_symlink(file));
  EXPECT_EQ(testing::ReadFile(dir.path() / "target"), "untouched");
}

}  // namespace
}  // namespace trainlock::validate
