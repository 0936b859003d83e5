// `trainlock image generate`: the Containerfiles of examples/h200-pilot (cuda) and
// examples/mi300x-pilot (rocm) are byte-identical from run to run and equal the golden files
// in tests/golden (regenerate them with the command in GoldenDir's comment when the
// templates or the example locks change on purpose); bad requests are bad input.
#include <gtest/gtest.h>

#include "image/image_generate.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEpoch = "1764460800";  // 2025-11-30T00:00:00Z

// Regenerate: SOURCE_DATE_EPOCH=1764460800 build/bin/trainlock image generate
//   examples/h200-pilot --target cuda --out tests/golden/h200-pilot-cuda (and mi300x/rocm).
fs::path GoldenDir(const std::string& name) {
  return testing::SourceDir() / "tests/golden" / name;
}

testing::RunResult Generate(const std::string& example, const std::string& target,
                            const fs::path& out) {
  return testing::RunTrainlock({"image", "generate",
                                (testing::SourceDir() / "examples" / example).string(), "--target",
                                target, "--out", out.string(), "--source-date-epoch", kEpoch});
}

void ExpectReproducibleAndGolden(const std::string& example, const std::string& target) {
  testing::TempDir dir;
  ASSERT_EQ(Generate(example, target, dir.path() / "one").exit_code, 0);
  ASSERT_EQ(Generate(example, target, dir.path() / "two").exit_code, 0);
  for (const char* file : {"Containerfile", "requirements.txt"}) {
    const std::string one = testing::ReadFile(dir.path() / "one" / file);
    EXPECT_EQ(one, testing::ReadFile(dir.path() / "two" / file)) << file;
    EXPECT_EQ(one, testing::ReadFile(GoldenDir(example + "-" + target) / file)) << file;
  }
}

TEST(ImageGenerate, TheH200PilotsCudaContainerfileIsReproducibleAndGolden) {
  ExpectReproducibleAndGolden("h200-pilot", "cuda");
}

TEST(ImageGenerate, TheMi300xPilotsRocmContainerfileIsReproducibleAndGolden) {
  ExpectReproducibleAndGolden("mi300x-pilot", "rocm");
}

TEST(ImageGenerate, TheContainerfilePinsTheBaseLabelsItAndBakesInTheLock) {
  testing::TempDir dir;
  ASSERT_EQ(Generate("h200-pilot", "cuda", dir.path()).exit_code, 0);
  const std::string text = testing::ReadFile(dir.path() / "Containerfile");
  EXPECT_NE(text.find("FROM docker.io/nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04@sha256:8b2705ea"),
            std::string::npos);
  EXPECT_NE(text.find("org.opencontainers.image.base.digest=\"sha256:8b2705ea"), std::string::npos);
  EXPECT_NE(text.find("org.opencontainers.image.created=\"2025-11-30T00:00:00Z\""),
            std::string::npos);
  EXPECT_NE(text.find("apt-get update --snapshot 20251130T000000Z"), std::string::npos);
  EXPECT_NE(text.find("COPY trainlock.lock trainlock.toml /etc/trainlock/"), std::string::npos);
  EXPECT_NE(text.find("ENTRYPOINT [\"/usr/local/bin/trainlock-validate\"]"), std::string::npos);
}

TEST(ImageGenerate, WithoutSourceDateEpochItIsBadInput) {
  testing::TempDir dir;
  auto r = testing::RunTrainlock({"image", "generate",
                                  (testing::SourceDir() / "examples/h200-pilot").string(),
                                  "--target", "cuda", "--out", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("SOURCE_DATE_EPOCH"), std::string::npos) << r.err;
}

TEST(ImageGenerate, ATargetTheLockLacksIsBadInput) {
  testing::TempDir dir;
  auto r = Generate("h200-pilot", "rocm", dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no [targets.rocm]"), std::string::npos) << r.err;
}

TEST(FillTemplate, ReplacesEveryPlaceholderAndLeavesOtherAtSignsAlone) {
  EXPECT_EQ(FillTemplate("a @X@ b user@host @Y@", {{"X", "1"}, {"Y", "2"}}), "a 1 b user@host 2");
}

TEST(FillTemplate, APlaceholderWithoutAValueIsAnError) {
  EXPECT_THROW(FillTemplate("FROM @BASE@", {}), std::invalid_argument);
}

}  // namespace
}  // namespace trainlock
