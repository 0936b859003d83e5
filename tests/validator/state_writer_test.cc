// The final-state writer (validators/engines/native/state_writer.h): the file several threads
// write is the one WriteSafetensors writes, byte for byte, and it never writes through a link.
#include "engines/native/state_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
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

}  // namespace
}  // namespace trainlock::validate
