// `trainlock image generate`. The pilots' committed locks carry no Python closure (torch
// 2.11+cu130 and 2.7.1+rocm6.3 with their dependencies cannot be resolved without PyPI), so
// generating their images is refused with the command that resolves it. Their Containerfiles
// are golden all the same: generated from a copy of each pilot whose closure is resolved from
// tests/servers/pypi_server.py serving stand-ins for torch and its dependencies
// (tests/servers/torch_standins.json), byte-identical from run to run and equal to
// tests/golden/<pilot>-<target>/ once the two values that depend on the test's loopback port
// (the lock-sha256, the index URL) are replaced by <lock-sha256> and <index>. The custom op of
// the H200 pilot is built in the image for the target's architectures from its pinned sources.
#include <gtest/gtest.h>

#include <memory>

#include "base/failure.h"
#include "base/sha256.h"
#include "base/tree_hash.h"
#include "image/image_build.h"
#include "image/image_generate.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kEpoch = "1764460800";  // 2025-11-30T00:00:00Z

// Regenerate a golden directory: run the test with TRAINLOCK_REGENERATE_GOLDEN=1.
fs::path GoldenDir(const std::string& name) {
  return testing::SourceDir() / "tests/golden" / name;
}

testing::RunResult Generate(const fs::path& project, const std::string& target,
                            const fs::path& out) {
  return testing::RunTrainlock({"image", "generate", project.string(), "--target", target, "--out",
                                out.string(), "--source-date-epoch", kEpoch});
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at; !from.empty() && (at = text.find(from)) != std::string::npos;)
    text.replace(at, from.size(), to);
  return text;
}

// A pilot copied with its python-index on the stand-in index and its closure resolved there.
class PilotImage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveProgram("python3")) GTEST_SKIP() << "python3 is not installed";
    port_ = testing::FreeLoopbackPort();
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{
            "python3", (testing::SourceDir() / "tests/servers/pypi_server.py").string(),
            std::to_string(port_), "--spec",
            (testing::SourceDir() / "tests/servers/torch_standins.json").string()},
        dir_.path() / "server.log");
    ASSERT_TRUE(testing::WaitForHttp(Index() + "/", 30));
  }
  std::string Index() const { return "http://127.0.0.1:" + std::to_string(port_) + "/simple"; }

  fs::path Resolved(const std::string& example, const std::string& target) {
    const fs::path project = dir_.path() / example;
    fs::create_directories(project);
    testing::CopyExample(example, project);
    // The custom op's sources beside the project, where its manifest names them.
    fs::create_directories(dir_.path() / "ops");
    testing::CopyExample("ops", dir_.path() / "ops");
    std::string manifest = testing::ReadFile(project / "trainlock.toml");
    const size_t table = manifest.find("[targets." + target + "]");
    const size_t line = manifest.find('\n', table);
    manifest.insert(line + 1, "python-index = [\"" + Index() + "\"]\n");
    testing::WriteFile(project / "trainlock.toml", manifest);
    auto r = testing::RunTrainlock({"lock", project.string(), "--python-only"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return project;
  }

  void ExpectReproducibleAndGolden(const std::string& example, const std::string& target) {
    const fs::path project = Resolved(example, target);
    ASSERT_EQ(Generate(project, target, dir_.path() / "one").exit_code, 0);
    auto two = Generate(project, target, dir_.path() / "two");
    ASSERT_EQ(two.exit_code, 0) << two.err;
    const std::string lock_sha256 = LoadProject(project).lock_sha256;
    for (const char* file : {"Containerfile", "requirements.txt", "image.json"}) {
      const std::string one = testing::ReadFile(dir_.path() / "one" / file);
      EXPECT_EQ(one, testing::ReadFile(dir_.path() / "two" / file)) << file;
      const std::string normal =
          Replace(Replace(one, lock_sha256, "<lock-sha256>"), Index(), "<index>");
      const fs::path golden = GoldenDir(example + "-" + target) / file;
      if (std::getenv("TRAINLOCK_REGENERATE_GOLDEN")) testing::WriteFile(golden, normal);
      EXPECT_EQ(normal, testing::ReadFile(golden)) << file;
    }
  }

  testing::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> server_;
};

TEST_F(PilotImage, TheH200PilotsCudaContainerfileIsReproducibleAndGolden) {
  ExpectReproducibleAndGolden("h200-pilot", "cuda");
}

TEST_F(PilotImage, TheMi300xPilotsRocmContainerfileIsReproducibleAndGolden) {
  ExpectReproducibleAndGolden("mi300x-pilot", "rocm");
}

TEST_F(PilotImage, TheImagePinsItsBaseInstallsTheHashedClosureAndBuildsTheOpForTheTarget) {
  const fs::path project = Resolved("h200-pilot", "cuda");
  ASSERT_EQ(Generate(project, "cuda", dir_.path() / "out").exit_code, 0);
  const std::string text = testing::ReadFile(dir_.path() / "out/Containerfile");
  EXPECT_NE(text.find("FROM docker.io/nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04@sha256:8b2705ea"),
            std::string::npos);
  EXPECT_NE(text.find("org.opencontainers.image.created=\"2025-11-30T00:00:00Z\""),
            std::string::npos);
  EXPECT_NE(text.find("apt-get update --snapshot 20251130T000000Z"), std::string::npos);
  EXPECT_NE(text.find("pip install --require-hashes --no-deps --only-binary :all:"),
            std::string::npos);
  EXPECT_NE(text.find("pip check"), std::string::npos);
  EXPECT_NE(text.find("-DTRAINLOCK_OPS_CUDA_ARCHS=\"90\""), std::string::npos) << text;
  EXPECT_NE(text.find("/out/etc/trainlock/ops/libtrainlock_ops.so"), std::string::npos) << text;
  EXPECT_NE(text.find("COPY trainlock.lock trainlock.toml image.json /etc/trainlock/"),
            std::string::npos);
  EXPECT_NE(text.find("ENTRYPOINT [\"/usr/local/bin/trainlock-validate\"]"), std::string::npos);
  const std::string requirements = testing::ReadFile(dir_.path() / "out/requirements.txt");
  // torch's Linux dependencies are in; its optree extra is not.
  for (const char* pin : {"torch==2.11.0+cu130 \\\n    --hash=sha256:", "filelock==3.20.0",
                          "nvidia-nccl-cu13==2.27.7", "triton==3.5.0", "typing-extensions==4.15.0"})
    EXPECT_NE(requirements.find(pin), std::string::npos) << pin << "\n" << requirements;
  EXPECT_EQ(requirements.find("optree"), std::string::npos) << requirements;
}

TEST(ImageGenerate, APilotLockWithoutAResolvedClosureIsRefusedWithTheCommandToRun) {
  testing::TempDir dir;
  auto r = Generate(testing::SourceDir() / "examples/h200-pilot", "cuda", dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("[targets.cuda] has no resolved Python closure (torch 2.11.0+cu130"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run `trainlock lock` where https://download.pytorch.org/whl/cu130, "
                       "https://pypi.org/simple can be reached"),
            std::string::npos)
      << r.err;
}

TEST(ImageGenerate, ThePilotLockPinsTheOpSourcesAsTheyAre) {
  // A changed examples/ops needs a new lock: `trainlock lock examples/h200-pilot --offline
  // --skip-python` where the index cannot be reached.
  const Project pilot = LoadProject(testing::SourceDir() / "examples/h200-pilot");
  EXPECT_EQ(pilot.lock->custom_ops.at(0).source_sha256,
            TreeSha256(testing::SourceDir() / "examples/ops"));
}

TEST(ImageGenerate, WithoutSourceDateEpochItIsBadInput) {
  testing::TempDir dir;
  auto r =
      testing::RunTrainlock({"image", "generate", (testing::SourceDir() / "examples/tiny").string(),
                             "--target", "cpu", "--out", dir.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("SOURCE_DATE_EPOCH"), std::string::npos) << r.err;
}

TEST(ImageGenerate, ATargetTheLockLacksIsBadInput) {
  testing::TempDir dir;
  auto r = Generate(testing::SourceDir() / "examples/h200-pilot", "rocm", dir.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no [targets.rocm]"), std::string::npos) << r.err;
}

// The tiny example's cpu Containerfile, generated into `dir` (needs trainlock-validate: the cpu
// image copies it).
std::string TinyCpuContainerfile(const fs::path& dir) {
  auto r = Generate(testing::SourceDir() / "examples/tiny", "cpu", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return testing::ReadFile(dir / "Containerfile");
}

TEST(ImageGenerate, TheCpuImageCopiesTheValidatorAndRecordsItsHash) {
  const fs::path validator = testing::BinDir() / "trainlock-validate";
  if (!fs::exists(validator)) GTEST_SKIP() << "trainlock-validate is built only with LibTorch";
  testing::TempDir dir;
  const std::string text = TinyCpuContainerfile(dir.path());
  EXPECT_NE(text.find("COPY trainlock-validate /usr/local/bin/trainlock-validate"),
            std::string::npos);
  const std::string record = testing::ReadFile(dir.path() / "image.json");
  EXPECT_NE(record.find("\"validator_sha256\": \"" + Sha256FileHex(validator)), std::string::npos);
}

// The cpu image's torch is Debian's LibTorch 1.13: a lock asking for another is refused.
TEST(ImageGenerate, ACpuTargetAskingForATorchTheCpuImageCannotGiveIsRefused) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path() / "tiny");
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const std::string torch = "torch = '1.13.0'";
  ASSERT_NE(lock.find(torch), std::string::npos) << lock;
  testing::WriteFile(project / "trainlock.lock",
                     lock.replace(lock.find(torch), torch.size(), "torch = '2.5.0'"));
  auto r = Generate(project, "cpu", dir.path() / "out");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("torch = \"2.5.0\" but the cpu image's torch is Debian's LibTorch 1.13"),
            std::string::npos)
      << r.err;
}

// The image's interpreter is asserted to be the one the wheels were resolved for, before pip.
TEST(ImageGenerate, EachImageAssertsItsPythonIsTheOneTheLockResolvedFor) {
  const fs::path validator = testing::BinDir() / "trainlock-validate";
  if (!fs::exists(validator)) GTEST_SKIP() << "trainlock-validate is built only with LibTorch";
  testing::TempDir dir;
  const std::string text = TinyCpuContainerfile(dir.path());
  const size_t check = text.find("sys.version_info[:2])')\" = \"3.11\" ||");
  ASSERT_NE(check, std::string::npos) << text;
  EXPECT_LT(check, text.find("RUN python3 -m venv /opt/venv")) << "before any wheel is installed";
}

// The image's Python assertion, run as the build runs it, with a python3 that reports `version`
// first on PATH: its exit code and stderr.
testing::RunResult RunPythonAssertion(const std::string& containerfile, const fs::path& dir,
                                      const std::string& version) {
  const size_t start = containerfile.find("RUN test \"$(python3");
  EXPECT_NE(start, std::string::npos) << containerfile;
  std::string command;  // the RUN line with its continuations, as the shell will read it
  for (size_t at = start + 4;;) {
    const size_t end = containerfile.find('\n', at);
    const std::string line = containerfile.substr(at, end - at);
    if (line.empty() || line.back() != '\\') {
      command += line;
      break;
    }
    command += line.substr(0, line.size() - 1);
    at = end + 1;
  }
  fs::create_directories(dir / "bin");
  testing::WriteFile(dir / "bin/python3", "#!/bin/sh\necho " + version + "\n");
  fs::permissions(dir / "bin/python3", fs::perms::owner_all);
  return testing::RunCommand({"sh", "-c", command},
                             {"PATH=" + (dir / "bin").string() + ":/usr/bin:/bin"});
}

TEST(ImageGenerate, TheImagesPythonAssertionFailsTheBuildOnAnotherPython) {
  const fs::path validator = testing::BinDir() / "trainlock-validate";
  if (!fs::exists(validator)) GTEST_SKIP() << "trainlock-validate is built only with LibTorch";
  testing::TempDir dir;
  const std::string text = TinyCpuContainerfile(dir.path() / "out");
  auto other = RunPythonAssertion(text, dir.path(), "3.12");
  EXPECT_EQ(other.exit_code, 1) << other.err;
  EXPECT_NE(other.err.find("this image's python3 is not 3.11"), std::string::npos) << other.err;
  EXPECT_EQ(RunPythonAssertion(text, dir.path(), "3.11").exit_code, 0);
}

TEST(FillTemplate, ReplacesEveryPlaceholderAndLeavesOtherAtSignsAlone) {
  EXPECT_EQ(FillTemplate("a @X@ b user@host @Y@", {{"X", "1"}, {"Y", "2"}}), "a 1 b user@host 2");
}

TEST(FillTemplate, APlaceholderWithoutAValueIsAnError) {
  EXPECT_THROW(FillTemplate("FROM @BASE@", {}), Failure);
}

// The lock an image carries is the lock as `trainlock lock` wrote it, before any push: its
// [images] (the build results) are dropped, so the image's bytes do not depend on them.
TEST(LockTextForImage, IsTheLockWithoutItsImagesTableByteForByte) {
  const std::string lock = testing::ReadFile(testing::SourceDir() / "examples/tiny/trainlock.lock");
  ASSERT_EQ(lock.find("[images"), std::string::npos);
  EXPECT_EQ(LockTextForImage(lock, "lock"), lock);
  const std::string pushed = lock + "\n[images.cpu]\ndigest = \"sha256:" + std::string(64, 'a') +
                             "\"\nref = \"registry.example/tiny:1\"\n";
  EXPECT_EQ(LockTextForImage(pushed, "lock"), lock);
}

}  // namespace
}  // namespace trainlock
