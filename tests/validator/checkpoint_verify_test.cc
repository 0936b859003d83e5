// The coordinator's own reading of a committed checkpoint (coordinator/checkpoint_verify.h):
// a step directory the Python engines committed with their own code (commit.py's
// write_marker, run here) or the native engine saved verifies file by file; each fault planted
// after the commit (a missing directory or marker, a changed, resized, missing or unlisted
// file, a link, a marker naming a path outside the directory, another step, a marker over its
// cap) is the result's problem, naming the path.
#include "coordinator/checkpoint_verify.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "coordinator/checkpoint_corrupt.h"
#include "engines/native/checkpoint.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";

// Commits `dir` as step `step` with the Python engines' own code (commit.write_marker).
void CommitWithTheEnginesCode(const fs::path& dir, int64_t step) {
  const testing::RunResult r = testing::RunCommand(
      {kPython, "-B", "-c",
       "import sys; sys.path.insert(0, sys.argv[1]); from trainlock_engine import commit; "
       "commit.write_marker(sys.argv[2], int(sys.argv[3]))",
       (testing::SourceDir() / "validators/engines/python").string(), dir.string(),
       std::to_string(step)});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// ROOT/step-00000003 as a Python engine commits it: a state file, an RNG file and a shard in
// a subdirectory, then the marker.
fs::path CommittedStep(const fs::path& root) {
  const fs::path dir = root / "step-00000003";
  fs::create_directories(dir / "shards");
  testing::WriteFile(dir / "state.pt", std::string(5000, 's'));
  testing::WriteFile(dir / "rng-rank0.pt", "rng");
  testing::WriteFile(dir / "shards" / "0.distcp", std::string(1234, 'd'));
  CommitWithTheEnginesCode(dir, 3);
  return dir;
}

VerifiedCheckpoint Verify(const fs::path& root, int64_t step = 3) {
  return VerifyCheckpoint(root, step, CommitRecord::kPythonMarker, 4);
}

// The problem names `path` and says `why`.
void ExpectProblem(const VerifiedCheckpoint& v, const fs::path& path, const std::string& why) {
  EXPECT_EQ(v.problem.rfind(path.string() + ": ", 0), 0u) << v.problem;
  EXPECT_NE(v.problem.find(why), std::string::npos) << v.problem;
}

void Overwrite(const fs::path& file, std::streamoff at, char byte) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(at);
  f.put(byte);
}

TEST(CheckpointVerify, AStepDirectoryCommitPyCommittedVerifiesEveryFileItLists) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  const VerifiedCheckpoint v = Verify(root.path());
  EXPECT_EQ(v.problem, "");
  EXPECT_EQ(v.dir, dir);
  EXPECT_EQ(v.step, 3);
  EXPECT_EQ(v.record, "trainlock-commit.json");
  EXPECT_EQ(v.files, 3);
  EXPECT_EQ(v.bytes, 5000u + 3u + 1234u);
}

// block_sha256 is over 64 MiB blocks' digests: a file of two blocks verifies as commit.py
// hashed it, and a change in its second block is found.
TEST(CheckpointVerify, AFileOfSeveralBlocksIsHashedBlockByBlockAsCommitPyDoes) {
  TempDir root;
  const fs::path dir = root.path() / "step-00000003";
  fs::create_directories(dir);
  const uint64_t size = kCommitBlockBytes + 4097;
  {
    std::ofstream big(dir / "model.distcp", std::ios::binary);
    std::string block(1 << 20, 'b');
    for (uint64_t written = 0; written < size; written += block.size())
      big.write(block.data(),
                static_cast<std::streamsize>(std::min<uint64_t>(block.size(), size - written)));
  }
  CommitWithTheEnginesCode(dir, 3);
  EXPECT_EQ(Verify(root.path()).problem, "");
  Overwrite(dir / "model.distcp", static_cast<std::streamoff>(kCommitBlockBytes + 10), 'x');
  ExpectProblem(Verify(root.path()), dir / "model.distcp", "changed after its commit");
}

// A file as large as its record says, which may be sparse, is hashed only until the deadline.
TEST(CheckpointVerify, HashingStopsAtTheDeadlineNamingTheFile) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  const VerifiedCheckpoint v =
      VerifyCheckpoint(root.path(), 3, CommitRecord::kPythonMarker, 2,
                       std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_NE(v.problem.find("not hashed within the time limit"), std::string::npos) << v.problem;
}

TEST(CheckpointVerify, AStepDirectoryThatWasNeverWrittenIsNamedMissing) {
  TempDir root;
  const VerifiedCheckpoint v = Verify(root.path());
  ExpectProblem(v, root.path() / "step-00000003", "missing: no such directory");
  EXPECT_EQ(v.files, 0);
}

TEST(CheckpointVerify, AStepDirectoryWithoutItsCommitMarkerWasNeverCommitted) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  fs::remove(dir / "trainlock-commit.json");
  ExpectProblem(Verify(root.path()), dir / "trainlock-commit.json", "missing");
}

TEST(CheckpointVerify, AFileChangedAfterTheCommitIsNamed) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  Overwrite(dir / "state.pt", 2500, 'x');  // same size, one byte
  ExpectProblem(Verify(root.path()), dir / "state.pt", "trainlock-commit.json says");
}

TEST(CheckpointVerify, AFileOfAnotherSizeThanTheMarkerSaysIsNamed) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  fs::resize_file(dir / "shards" / "0.distcp", 1000);
  ExpectProblem(Verify(root.path()), dir / "shards" / "0.distcp",
                "1000 bytes, trainlock-commit.json says 1234");
}

TEST(CheckpointVerify, AListedFileThatIsGoneIsNamed) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  fs::remove(dir / "rng-rank0.pt");
  ExpectProblem(Verify(root.path()), dir / "rng-rank0.pt",
                "missing (trainlock-commit.json lists it)");
}

TEST(CheckpointVerify, AFileTheMarkerDoesNotListIsRefused) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  testing::WriteFile(dir / "shards" / "extra.distcp", "planted");
  ExpectProblem(Verify(root.path()), dir / "shards" / "extra.distcp",
                "not in trainlock-commit.json");
}

TEST(CheckpointVerify, ALinkInsideTheCheckpointIsRefusedNotFollowed) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  fs::remove(dir / "rng-rank0.pt");
  testing::WriteFile(root.path() / "elsewhere", "rng");
  fs::create_symlink(root.path() / "elsewhere", dir / "rng-rank0.pt");
  ExpectProblem(Verify(root.path()), dir / "rng-rank0.pt", "a symbolic link");
}

TEST(CheckpointVerify, AStepDirectoryThatIsALinkIsRefusedNotFollowed) {
  TempDir root, other;
  CommittedStep(other.path());
  fs::create_symlink(other.path() / "step-00000003", root.path() / "step-00000003");
  ExpectProblem(Verify(root.path()), root.path() / "step-00000003", "a symbolic link");
}

TEST(CheckpointVerify, AMarkerNamingAPathOutsideTheStepDirectoryIsRefused) {
  for (const std::string path : {"../step-00000002/state.pt", "/etc/passwd", "shards/../state.pt",
                                 "./state.pt", "shards//0.distcp", ""}) {
    TempDir root;
    const fs::path dir = CommittedStep(root.path());
    testing::WriteFile(
        dir / "trainlock-commit.json",
        nlohmann::json(
            {{"step", 3},
             {"files", {{{"path", path}, {"block_sha256", std::string(64, 'a')}, {"size", 1}}}}})
            .dump());
    ExpectProblem(Verify(root.path()), dir / "trainlock-commit.json",
                  "is not a relative path inside the step directory");
  }
}

TEST(CheckpointVerify, AMarkerOfAnotherStepIsRefused) {
  TempDir root;
  const fs::path dir = root.path() / "step-00000003";
  fs::create_directories(dir);
  testing::WriteFile(dir / "state.pt", "s");
  CommitWithTheEnginesCode(dir, 4);
  ExpectProblem(Verify(root.path()), dir / "trainlock-commit.json", "says step 4, not 3");
}

TEST(CheckpointVerify, AMarkerOverItsCapIsRefusedUnparsed) {
  TempDir root;
  const fs::path dir = CommittedStep(root.path());
  testing::WriteFile(dir / "trainlock-commit.json", std::string(kMaxCommitMarkerBytes + 1, ' '));
  ExpectProblem(Verify(root.path()), dir / "trainlock-commit.json", "over the limit of");
}

TEST(CheckpointVerify, AMarkerThatIsNotACommitRecordIsRefused) {
  for (const std::string text : {"[]", "{\"step\": 3}", "{\"step\": -3, \"files\": []}",
                                 "{\"step\": 3, \"files\": [{\"path\": \"state.pt\"}]}", "{"}) {
    TempDir root;
    const fs::path dir = CommittedStep(root.path());
    testing::WriteFile(dir / "trainlock-commit.json", text);
    const VerifiedCheckpoint v = Verify(root.path());
    ExpectProblem(v, dir / "trainlock-commit.json", "");
    EXPECT_EQ(v.files, 0) << text;
  }
}

// ---- the native engine's checkpoint, against its manifest ----

CheckpointContents SmallContents() {
  CheckpointContents c;
  c.step = 3;
  c.model = {{"model.norm.weight", torch::ones({8})}};
  c.optimizer = {{"model.norm.weight.exp_avg", torch::zeros({8})}};
  return c;
}

TEST(CheckpointVerify, ANativeCheckpointVerifiesAgainstItsManifest) {
  TempDir root;
  const CheckpointIo saved = SaveCheckpoint(root.path(), SmallContents(), 1);
  const VerifiedCheckpoint v = VerifyCheckpoint(root.path(), 3, CommitRecord::kNativeManifest, 2);
  EXPECT_EQ(v.problem, "");
  EXPECT_EQ(v.dir, saved.dir);
  EXPECT_EQ(v.record, "manifest.json");
  EXPECT_EQ(v.files, 2);
}

TEST(CheckpointVerify, ANativeShardChangedAfterTheSaveIsNamed) {
  TempDir root;
  const fs::path dir = SaveCheckpoint(root.path(), SmallContents(), 1).dir;
  Overwrite(dir / "optimizer.safetensors",
            static_cast<std::streamoff>(fs::file_size(dir / "optimizer.safetensors") - 1), 'x');
  ExpectProblem(VerifyCheckpoint(root.path(), 3, CommitRecord::kNativeManifest, 2),
                dir / "optimizer.safetensors", "manifest.json says");
}

TEST(CheckpointVerify, ANativeManifestThatIsNotTheOneItsHashFileStatesIsRefused) {
  TempDir root;
  const fs::path dir = SaveCheckpoint(root.path(), SmallContents(), 1).dir;
  testing::WriteFile(dir / "manifest.json", testing::ReadFile(dir / "manifest.json") + " ");
  ExpectProblem(VerifyCheckpoint(root.path(), 3, CommitRecord::kNativeManifest, 2),
                dir / "manifest.json", "manifest.json.sha256");
}

TEST(CheckpointVerify, ANativeCheckpointWithAFileItsManifestDoesNotListIsRefused) {
  TempDir root;
  const fs::path dir = SaveCheckpoint(root.path(), SmallContents(), 1).dir;
  testing::WriteFile(dir / "extra.safetensors", "planted");
  ExpectProblem(VerifyCheckpoint(root.path(), 3, CommitRecord::kNativeManifest, 2),
                dir / "extra.safetensors", "not in manifest.json");
}

// ---- the negative control `corrupt` (coordinator/checkpoint_corrupt.h) ----

TEST(CorruptCheckpoint, FlipsTheMiddleByteOfTheLargestFileOfTheStepDirectory) {
  TempDir dir;
  testing::WriteFile(dir.path() / "step-00000003" / "small", "ab");
  testing::WriteFile(dir.path() / "step-00000003" / "shards" / "large", std::string(100, 'a'));
  const CorruptedByte flipped = CorruptCheckpoint(dir.path(), "step-00000003");
  EXPECT_EQ(flipped.problem, "");
  EXPECT_EQ(flipped.file, "shards/large");
  EXPECT_EQ(flipped.offset, 50u);
  EXPECT_EQ(testing::ReadFile(dir.path() / "step-00000003" / "shards" / "large"),
            std::string(50, 'a') + '`' + std::string(49, 'a'));
}

TEST(CorruptCheckpoint, AStepDirectoryThatIsALinkIsRefusedAndItsTargetLeftAlone) {
  TempDir dir;
  testing::WriteFile(dir.path() / "victim" / "precious", std::string(64, 'v'));
  fs::create_directories(dir.path() / "root");
  fs::create_directory_symlink(dir.path() / "victim", dir.path() / "root" / "step-99999999");
  const CorruptedByte flipped = CorruptCheckpoint(dir.path() / "root", "step-99999999");
  EXPECT_NE(flipped.problem.find("is a symbolic link"), std::string::npos) << flipped.problem;
  EXPECT_TRUE(testing::ReadFile(dir.path() / "victim" / "precious") == std::string(64, 'v'))
      << "written through the link";
}

TEST(CorruptCheckpoint, LinksInsideTheStepDirectoryAreNeitherEnteredNorWrittenThrough) {
  TempDir dir;
  testing::WriteFile(dir.path() / "victim" / "precious", std::string(4096, 'v'));
  const fs::path step = dir.path() / "root" / "step-00000003";
  testing::WriteFile(step / "state.pt", std::string(16, 's'));
  fs::create_symlink(dir.path() / "victim" / "precious", step / "model.pt");
  fs::create_directory_symlink(dir.path() / "victim", step / "shards");
  const CorruptedByte flipped = CorruptCheckpoint(dir.path() / "root", "step-00000003");
  EXPECT_EQ(flipped.file, "state.pt") << flipped.problem;
  EXPECT_TRUE(testing::ReadFile(dir.path() / "victim" / "precious") == std::string(4096, 'v'))
      << "written through the link";
}

}  // namespace
}  // namespace trainlock::validate
