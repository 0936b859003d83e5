// The coordinator's own reading of a final state (coordinator/state_file.h): each tensor's
// digest is SHA-256 over its dtype, shape and bytes as the file holds them; a missing, linked or
// malformed file is a stated problem, never an empty pass; two states' element-wise difference
// is computed from the files, in every dtype the engines write.
#include "coordinator/state_file.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "engines/native/safetensors.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

fs::path WriteState(const fs::path& file, const std::vector<NamedTensor>& tensors) {
  WriteSafetensors(file, tensors, {}, /*durable=*/false);
  return file;
}

std::vector<NamedTensor> SmallState(float weight) {
  return {{"param/w", torch::tensor({1.0f, weight})},
          {"optim/w/step", torch::tensor(3.0, torch::kFloat64)},
          {"rng/torch_cpu", torch::arange(4, torch::kUInt8)}};
}

TEST(StateFile, EachTensorsDigestIsSha256OfItsDtypeShapeAndBytes) {
  testing::TempDir dir;
  const StateDigest d = DigestStateFile(WriteState(dir.path() / "s", SmallState(2.0f)), 2);
  ASSERT_EQ(d.problem, "");
  const float values[] = {1.0f, 2.0f};
  std::string bytes(reinterpret_cast<const char*>(values), sizeof values);
  EXPECT_EQ(d.tensors.at("param/w"), Sha256Hex("F32|2|" + bytes));
  EXPECT_EQ(d.tensors.at("rng/torch_cpu"), Sha256Hex(std::string("U8|4|") + '\0' + "\1\2\3"));
  EXPECT_EQ(d.tensors.size(), 3u);
  EXPECT_EQ(d.bytes, fs::file_size(dir.path() / "s"));
}

TEST(StateFile, OneChangedElementChangesOnlyThatTensorsDigest) {
  testing::TempDir dir;
  const StateDigest a = DigestStateFile(WriteState(dir.path() / "a", SmallState(2.0f)), 1);
  const StateDigest b = DigestStateFile(WriteState(dir.path() / "b", SmallState(2.5f)), 4);
  EXPECT_NE(a.tensors.at("param/w"), b.tensors.at("param/w"));
  EXPECT_EQ(a.tensors.at("optim/w/step"), b.tensors.at("optim/w/step"));
}

TEST(StateFile, AFileThatWasNeverWrittenIsAProblemNotAnEmptyState) {
  testing::TempDir dir;
  const StateDigest d = DigestStateFile(dir.path() / "a-final.safetensors", 2);
  EXPECT_NE(d.problem.find("a-final.safetensors was not written"), std::string::npos) << d.problem;
  EXPECT_TRUE(d.tensors.empty());
}

TEST(StateFile, ASymlinkIsNotFollowed) {
  testing::TempDir dir;
  WriteState(dir.path() / "elsewhere", SmallState(2.0f));
  fs::create_symlink(dir.path() / "elsewhere", dir.path() / "a-final.safetensors");
  const StateDigest d = DigestStateFile(dir.path() / "a-final.safetensors", 2);
  EXPECT_NE(d.problem.find("a symlink; not followed"), std::string::npos) << d.problem;
}

TEST(StateFile, ATruncatedFileIsAProblemNamingIt) {
  testing::TempDir dir;
  const fs::path file = WriteState(dir.path() / "c-final.safetensors", SmallState(2.0f));
  fs::resize_file(file, fs::file_size(file) - 3);
  const StateDigest d = DigestStateFile(file, 2);
  EXPECT_NE(d.problem.find("c-final.safetensors"), std::string::npos) << d.problem;
  EXPECT_TRUE(d.tensors.empty());
}

TEST(StateFile, TheDifferenceOfTwoStatesIsTheLargestElementDifferenceNamingTheFirstTensor) {
  testing::TempDir dir;
  const fs::path a = WriteState(dir.path() / "a", SmallState(2.0f));
  const fs::path b = WriteState(dir.path() / "b", SmallState(2.5f));
  std::string first;
  EXPECT_EQ(MaxAbsStateDifference(a, b, &first), 0.5);
  EXPECT_EQ(first, "param/w");
  EXPECT_EQ(MaxAbsStateDifference(a, a, nullptr), 0.0);
}

TEST(StateFile, Bf16AndF16ElementsAreComparedAsNumbers) {
  testing::TempDir dir;
  for (const auto dtype : {torch::kBFloat16, torch::kFloat16}) {
    const fs::path a = WriteState(dir.path() / "a", {{"p", torch::tensor({1.0f, 3.0f}).to(dtype)}});
    const fs::path b =
        WriteState(dir.path() / "b", {{"p", torch::tensor({1.0f, -1.0f}).to(dtype)}});
    EXPECT_EQ(MaxAbsStateDifference(a, b, nullptr), 4.0) << dtype;
  }
}

TEST(StateFile, ATensorMissingOrReshapedIsAnInfiniteDifference) {
  testing::TempDir dir;
  const fs::path a = WriteState(dir.path() / "a", SmallState(2.0f));
  const fs::path b = WriteState(dir.path() / "b", {{"param/w", torch::tensor({1.0f, 2.0f, 3.0f})}});
  std::string first;
  EXPECT_EQ(MaxAbsStateDifference(a, b, &first), std::numeric_limits<double>::infinity());
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(MaxAbsStateDifference(a, dir.path() / "missing", nullptr), std::nullopt);
}

}  // namespace
}  // namespace trainlock::validate
