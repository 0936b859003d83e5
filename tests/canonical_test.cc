// lock-sha256 and manifest-sha256: stable under formatting, sensitive to every value.
#include <gtest/gtest.h>

#include "base/canonical.h"
#include "base/toml_document.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

using testing::ReadFile;
using testing::SourceDir;

std::string LockHash(const std::string& text) {
  std::string sha;
  LoadLockfile(text, "trainlock.lock", LockfileKind::kLock, &sha);
  return sha;
}

std::string ExampleLock() {
  return ReadFile(SourceDir() / "examples/h200-pilot/trainlock.lock");
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The example lock written by a different hand: other key and table order, comments,
// literal strings, dotted keys, inline tables and different whitespace.
const char* kReformattedLock = R"toml(
# the same lock, reformatted
[validate]
required = [ 'env.driver', "env.runtime", "env.arch", "env.versions", "env.health",
  "ops.custom", "train.step", "train.roundtrip", "train.eval", "ckpt.portable", ]   # trailing comma
keep-last = 2
eval-batches   = 2
checkpoint-at = 4
steps = 8

[targets]
cuda.torch = "2.11.0+cu130"
cuda.cuda = '13.0'
cuda.driver-min = "580.65.06"
cuda.accelerators = ["H200", "H100-80GB"]
cuda.python = "3.12"
cuda.python-index = [ "https://download.pytorch.org/whl/cu130",
                      'https://pypi.org/simple' ]
cuda.base = "docker.io/nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04@sha256:8b2705ea7a8653ad3451b46ab835eced92d77b44e671b9cf3ad4f95fbb2efe5e"

[targets.cuda.base-platforms]
"linux/amd64" = "sha256:5a2d3b02eb7412847d051d0f2b0f0a5031057a0172d9ca78743cc41cfc5d037f"

[[custom-ops]]
ops = ["trainlock_ops::fused_rmsnorm"]
library = 'ops/libtrainlock_ops.so'
source-sha256 = "SOURCE"
source = "../ops"
smoke = [
  { op = "trainlock_ops::fused_rmsnorm", reference = "rmsnorm", rtol = 0.02, atol = 2e-2, inputs = [{ dtype = "bf16", shape = [16384, 2048] }, { shape = [2_048], dtype = "bf16" }], grad-rtol = 5e-2, grad-atol = 0.05 },
]

[project]
seed = 20_261_129
name = "h200-pilot"
config-sha256 = "CONFIG"
config = "configs/llama-1b.yaml"
)toml";

std::string ReformattedLock() {
  std::string lock = ExampleLock();
  // The lock as `trainlock lock` writes it: values in literal ('...') or basic ("...") strings.
  auto field = [&](const std::string& key) {
    size_t at = lock.find(key + " = ") + key.size() + 3;
    const char quote = lock[at++];
    return lock.substr(at, lock.find(quote, at) - at);
  };
  std::string text = Replace(kReformattedLock, "CONFIG", field("config-sha256"));
  text = Replace(text, "SOURCE", field("source-sha256"));
  return "manifest-sha256 = \"" + field("manifest-sha256") + "\"\nlock-version = 1\n" + text;
}

TEST(LockHash, ReformattedLockHasTheSameHash) {
  EXPECT_EQ(LockHash(ExampleLock()), LockHash(ReformattedLock()));
}

TEST(LockHash, CommentsDoNotChangeTheHash) {
  EXPECT_EQ(LockHash(ExampleLock()), LockHash("# a comment\n" + ExampleLock() + "\n# end\n"));
}

TEST(LockHash, ChangedSeedChangesTheHash) {
  EXPECT_NE(LockHash(ExampleLock()),
            LockHash(Replace(ExampleLock(), "seed = 20261129", "seed = 20261130")));
}

TEST(LockHash, OneChangedDigestCharacterChangesTheHash) {
  EXPECT_NE(LockHash(ExampleLock()), LockHash(Replace(ExampleLock(), "8b2705ea", "8b2705eb")));
}

TEST(LockHash, ReorderedArrayChangesTheHash) {
  EXPECT_NE(LockHash(ExampleLock()),
            LockHash(Replace(ExampleLock(), "[ 'H200', 'H100-80GB' ]", "[ 'H100-80GB', 'H200' ]")));
}

TEST(LockHash, BuiltImagesChangeTheHashButNotTheBuildIdentity) {
  std::string with_image = ExampleLock() +
                           "\n[images.cuda]\nref = \"registry.example/pilot\"\n"
                           "digest = \"sha256:" +
                           std::string(64, 'a') + "\"\n";
  EXPECT_NE(LockHash(ExampleLock()), LockHash(with_image));
  EXPECT_EQ(LockBuildSha256(ParseTomlDocument(ExampleLock(), "a")),
            LockBuildSha256(ParseTomlDocument(with_image, "b")));
}

TEST(CanonicalJson, FloatAndIntegerAreDifferentValues) {
  EXPECT_NE(CanonicalJson(ParseTomlDocument("x = 1", "a")),
            CanonicalJson(ParseTomlDocument("x = 1.0", "b")));
}

TEST(CanonicalJson, NumberSpellingsOfOneValueAgree) {
  EXPECT_EQ(CanonicalJson(ParseTomlDocument("x = 0x10\ny = 1e2", "a")),
            CanonicalJson(ParseTomlDocument("y = 100.0\nx = 16", "b")));
}

TEST(CanonicalJson, SortsKeysAndEscapesStrings) {
  EXPECT_EQ(CanonicalJson(ParseTomlDocument("b = \"q\\\"\\n\"\na = [true, 1]", "a")),
            R"({"a":[true,1],"b":"q\"\n"})");
}

}  // namespace
}  // namespace trainlock
