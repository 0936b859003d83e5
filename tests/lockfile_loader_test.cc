// Manifest and lock schema: what each accepts, and the stricter pinning rules of the lock.
#include <gtest/gtest.h>

#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

using testing::ReadFile;
using testing::SourceDir;

std::string FirstError(const std::string& text, LockfileKind kind) {
  try {
    LoadLockfile(text, "f.toml", kind);
  } catch (const InputError& e) {
    return e.diagnostics().items().front().Format();
  }
  return "";
}

const char* kMinimalManifest = R"(
[project]
name = "p"
config = "c.yaml"
seed = 1
[targets.cuda]
base = "nvcr.io/nvidia/pytorch:25.01-py3"
accelerators = ["H200"]
torch = "2.11.0+cu130"
cuda = "13.0"
driver-min = "580.65.06"
[model]
source = "hf"
repo = "meta-llama/Llama-3.2-1B"
revision = "main"
files = ["config.json", "model.safetensors"]
)";

TEST(ManifestLoader, AcceptsEveryExampleManifest) {
  for (const char* name : {"tiny", "h200-pilot", "mi300x-pilot"}) {
    std::filesystem::path file = SourceDir() / "examples" / name / "trainlock.toml";
    EXPECT_NO_THROW(LoadLockfile(ReadFile(file), file.string(), LockfileKind::kManifest)) << name;
  }
}

TEST(LockLoader, AcceptsEveryExampleLock) {
  for (const char* name : {"tiny", "h200-pilot", "mi300x-pilot"}) {
    std::filesystem::path file = SourceDir() / "examples" / name / "trainlock.lock";
    EXPECT_NO_THROW(LoadLockfile(ReadFile(file), file.string(), LockfileKind::kLock)) << name;
  }
}

TEST(ManifestLoader, AllowsFloatingTagsAndBranches) {
  Lockfile spec = LoadLockfile(kMinimalManifest, "f.toml", LockfileKind::kManifest);
  EXPECT_EQ(spec.model->revision, "main");
  EXPECT_EQ(spec.targets.at("cuda").base, "nvcr.io/nvidia/pytorch:25.01-py3");
  EXPECT_EQ(spec.model->files.size(), 2u);
}

TEST(ManifestLoader, RecordsFieldPositions) {
  Lockfile spec = LoadLockfile(kMinimalManifest, "f.toml", LockfileKind::kManifest);
  EXPECT_EQ(spec.Pos("targets.cuda.driver-min").line, 11);
  EXPECT_EQ(spec.Pos("targets.cuda.driver-min").column, 14);
}

TEST(ManifestLoader, ReportsEveryErrorNotOnlyTheFirst) {
  std::string text = kMinimalManifest;
  text.replace(text.find("seed = 1"), 8, "seed = -1");
  text.replace(text.find("cuda = \"13.0\""), 13, "cuda = 13");
  try {
    LoadLockfile(text, "f.toml", LockfileKind::kManifest);
    FAIL() << "expected errors";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u);
  }
}

TEST(ManifestLoader, ValidForIsTheWindowAPassingReportStands) {
  std::string text = std::string(kMinimalManifest) + "[validate]\nvalid-for = \"1d12h\"\n";
  EXPECT_EQ(LoadLockfile(text, "f.toml", LockfileKind::kManifest).validate.valid_for_s, 36 * 3600);
  EXPECT_EQ(LoadLockfile(kMinimalManifest, "f.toml", LockfileKind::kManifest).validate.valid_for_s,
            0);
}

TEST(ManifestLoader, AValidForThatIsNoDurationIsRefusedAtItsPosition) {
  for (const char* bad : {"\"soon\"", "\"30s\"", "\"400d\"", "24"}) {
    std::string text = std::string(kMinimalManifest) + "[validate]\nvalid-for = " + bad + "\n";
    const std::string error = FirstError(text, LockfileKind::kManifest);
    EXPECT_NE(error.find("f.toml:18:13: error:"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("valid-for"), std::string::npos) << bad << ": " << error;
  }
}

TEST(LockLoader, RefusesAnImageTagWithoutDigest) {
  std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock");
  size_t at = lock.find("@sha256:");
  lock.erase(at, lock.find_first_of("\"'", at) - at);  // up to the string's closing quote
  EXPECT_NE(FirstError(lock, LockfileKind::kLock).find("unpinned image reference"),
            std::string::npos);
}

TEST(LockLoader, RefusesABranchAsModelRevision) {
  std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock") +
                     "\n[model]\nsource = \"hf\"\nrepo = \"org/m\"\nrevision = \"main\"\n";
  EXPECT_NE(FirstError(lock, LockfileKind::kLock).find("unpinned revision 'main'"),
            std::string::npos);
}

TEST(LockLoader, RequiresFileHashes) {
  std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock") +
                     "\n[model]\nsource = \"hf\"\nrepo = \"org/m\"\nrevision = \"" +
                     std::string(40, 'a') +
                     "\"\n[[model.files]]\npath = \"config.json\"\nsize = 3\n";
  EXPECT_NE(FirstError(lock, LockfileKind::kLock).find("missing required key 'sha256'"),
            std::string::npos);
}

TEST(LockLoader, ReadsPinnedFiles) {
  std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock") +
                     "\n[model]\nsource = \"hf\"\nrepo = \"org/m\"\nrevision = \"" +
                     std::string(40, 'a') +
                     "\"\n[[model.files]]\npath = \"config.json\"\nsha256 = \"" +
                     std::string(64, 'b') + "\"\nsize = 3\n";
  Lockfile spec = LoadLockfile(lock, "l", LockfileKind::kLock);
  ASSERT_EQ(spec.model->files.size(), 1u);
  EXPECT_EQ(spec.model->files[0].size, 3u);
}

TEST(ManifestLoader, CustomOpsWithSmokeSpecs) {
  std::string text = std::string(kMinimalManifest) + R"(
[[custom-ops]]
library = "ops/libfused.so"
ops = ["trainlock_ops::fused_rmsnorm"]
[[custom-ops.smoke]]
op = "trainlock_ops::fused_rmsnorm"
inputs = [{ shape = [4, 64], dtype = "fp32" }, { shape = [64], dtype = "fp32" }]
reference = "rmsnorm"
rtol = 1e-5
)";
  Lockfile spec = LoadLockfile(text, "f.toml", LockfileKind::kManifest);
  ASSERT_EQ(spec.custom_ops.size(), 1u);
  ASSERT_EQ(spec.custom_ops[0].smoke.size(), 1u);
  EXPECT_EQ(spec.custom_ops[0].smoke[0].inputs[0].shape, (std::vector<int64_t>{4, 64}));
}

TEST(ExtCommandArgv, ValuesMayRepeatAndBeEmpty) {
  const std::string text = std::string(kMinimalManifest) +
                           "[ext.command]\nargv = [\"python3\", \"train.py\", \"--lr\", \"1\", "
                           "\"--warmup\", \"1\", \"--suffix\", \"\"]\n";
  Lockfile spec = LoadLockfile(text, "f.toml", LockfileKind::kManifest);
  ASSERT_TRUE(spec.ext_command.has_value());
  EXPECT_EQ(spec.ext_command->argv, (std::vector<std::string>{"python3", "train.py", "--lr", "1",
                                                              "--warmup", "1", "--suffix", ""}));
}

TEST(ExtCommandArgv, ANulInAnArgumentIsRefusedAtItsPosition) {
  const std::string text = std::string(kMinimalManifest) +
                           "[ext.command]\nargv = [\"python3\", \"train.py\\u0000--evil\"]\n";
  EXPECT_EQ(FirstError(text, LockfileKind::kManifest),
            "f.toml:18:20: error: 'ext.command.argv' argument 1 has a NUL character in it; a "
            "program's arguments cannot carry one: it would end the argument there");
}

TEST(ExtCommandArgv, ANulInAnEnvironmentValueIsRefused) {
  const std::string text = std::string(kMinimalManifest) +
                           "[ext.command]\nargv = [\"python3\"]\nenv = { STEPS = \"2\\u0000\" }\n";
  EXPECT_NE(FirstError(text, LockfileKind::kManifest)
                .find("f.toml:19:17: error: 'ext.command.env.STEPS' has a NUL character in it"),
            std::string::npos)
      << FirstError(text, LockfileKind::kManifest);
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

// Every value of a lock's wheel goes into requirements.txt and the Containerfile: one outside
// its grammar is refused where the lock is read, so a crafted lock cannot add a line.
std::string TinyLockWith(const std::string& from, const std::string& to) {
  std::string lock = ReadFile(SourceDir() / "examples/tiny/trainlock.lock");
  const size_t at = lock.find(from);
  if (at == std::string::npos) ADD_FAILURE() << from;
  return lock.replace(at, from.size(), to);
}

TEST(LockLoader, AWheelNameWithANewlineIsRefusedBeforeItReachesAGeneratedFile) {
  const std::string lock = TinyLockWith("name = 'trainlock-demo-app'",
                                        "name = \"trainlock-demo-app\\n--index-url http://evil/\"");
  EXPECT_NE(FirstError(lock, LockfileKind::kLock).find("is not a package name (PEP 508)"),
            std::string::npos)
      << FirstError(lock, LockfileKind::kLock);
}

TEST(LockLoader, AWheelVersionFileOrIndexOutsideItsGrammarIsRefused) {
  EXPECT_NE(
      FirstError(TinyLockWith("version = '1.0.0'", "version = '1.0 --pre'"), LockfileKind::kLock)
          .find("is not a version (PEP 440)"),
      std::string::npos);
  EXPECT_NE(FirstError(TinyLockWith("file = 'trainlock_demo_app-1.0.0-py3-none-any.whl'",
                                    "file = '../x.whl'"),
                       LockfileKind::kLock)
                .find("is not a wheel"),
            std::string::npos);
  EXPECT_NE(FirstError(TinyLockWith("index = 'http://127.0.0.1:8765/simple'",
                                    "index = \"http://127.0.0.1:8765/simple\\n--trusted-host x\""),
                       LockfileKind::kLock)
                .find("holds a space, quote, backslash or control character"),
            std::string::npos);
}

TEST(ManifestLoader, AnIndexUrlWithCredentialsIsRefusedAndPointsToNetrc) {
  std::string manifest = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  const std::string index = "python-index = [\"http://127.0.0.1:8765/simple\"]";
  const size_t at = manifest.find(index);
  ASSERT_NE(at, std::string::npos);
  manifest.replace(at, index.size(),
                   "python-index = [\"https://user:s3cret@index.example/simple\"]");
  const std::string error = FirstError(manifest, LockfileKind::kManifest);
  EXPECT_NE(error.find("holds user:password (userinfo)"), std::string::npos) << error;
  EXPECT_NE(error.find("~/.netrc"), std::string::npos) << error;
  EXPECT_EQ(error.find("s3cret"), std::string::npos) << error;
}

TEST(ManifestLoader, APythonPinWithANumberBeyondAnInt64IsRefused) {
  std::string manifest = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  manifest.replace(manifest.find("trainlock-demo-app = \"1.0.0\""), 28,
                   "trainlock-demo-app = \"99999999999999999999\"");
  EXPECT_NE(FirstError(manifest, LockfileKind::kManifest).find("is not an exact version"),
            std::string::npos);
}

}  // namespace
}  // namespace trainlock
