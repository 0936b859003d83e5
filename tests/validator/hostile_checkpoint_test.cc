// A crafted checkpoint handed to the validator's worker: the state it restores from, and the
// manifest it reads first, are refused as checkpoint errors (exit 4, kind "checkpoint", our
// own message) before any of it is used: a zero token width (once a division by zero), a
// synthetic length that would be allocated whole (once std::bad_alloc), a FIFO or a symlink
// where manifest.json should be (once a read that blocked forever), a tensor name that is not
// UTF-8 (once the JSON library's exception in place of the result).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <chrono>

#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "spec_for_tests.h"
#include "support/engine_transcript.h"
#include "support/worker_process.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class HostileCheckpoint : public ::testing::Test {
 protected:
  // One checkpoint of examples/tiny, saved by a training worker at step 1.
  static void SetUpTestSuite() {
    root_ = new testing::TempDir();
    testing::CopyExample("tiny", Project());
    const fs::path spec = root_->path() / "engine-spec.json";
    const std::string spec_sha256 = testing::WriteEngineSpec(Project(), 2, spec);
    // A saving worker waits for the coordinator's SIGKILL once its checkpoint is committed
    // (worker.h): read its events until then and kill it, as the coordinator does.
    validate::Child saver({std::string(TRAINLOCK_BIN_DIR) + "/trainlock-validate", "worker",
                           "--role", "train", "--spec", spec.string(), "--spec-sha256", spec_sha256,
                           "--checkpoint-root", (root_->path() / "ckpt").string(), "--steps", "2",
                           "--save-at", "1", "--device", "cpu", "--threads", "2"},
                          root_->path() / "train.stderr");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
    validate::EngineTranscript said;
    while (auto line = saver.ReadLine(deadline)) {
      said.Add(*line);
      if (said.LastCheckpoint("committed")) break;
    }
    saver.Kill();
    ASSERT_TRUE(said.LastCheckpoint("committed"))
        << testing::ReadFile(root_->path() / "train.stderr");
    for (const auto& e : fs::directory_iterator(root_->path() / "ckpt")) saved_ = e.path();
  }
  static void TearDownTestSuite() { delete root_; }

  static fs::path Project() { return root_->path() / "tiny"; }
  static testing::RunResult Worker(std::vector<std::string> args) {
    args.insert(args.begin(), "worker");
    for (const char* a : {"--device", "cpu", "--threads", "2"}) args.push_back(a);
    return testing::RunProgram("trainlock-validate", args);
  }

  // A copy of the saved checkpoint with its manifest's state changed by `edit` (and the
  // manifest's hash rewritten to match: a crafted checkpoint is consistent with itself).
  fs::path Crafted(const std::function<void(nlohmann::json&)>& edit) {
    const fs::path root = dir_.path() / "ckpt";
    const fs::path step = root / saved_.filename();
    fs::create_directories(root);
    fs::copy(saved_, step, fs::copy_options::recursive);
    nlohmann::json manifest = nlohmann::json::parse(testing::ReadFile(step / "manifest.json"));
    edit(manifest["state"]);
    const std::string text = manifest.dump(2) + "\n";
    testing::WriteFile(step / "manifest.json", text);
    testing::WriteFile(step / "manifest.json.sha256", Sha256Hex(text) + "\n");
    return root;
  }

  // Restores `root` in the portable role; the exit code and the error event it said.
  std::pair<int, nlohmann::json> Restore(const fs::path& root) {
    testing::RunResult r = Worker({"--role", "portable", "--checkpoint-root", root.string()});
    validate::EngineTranscript said;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) said.Add(line);
    const auto& error = said.result().error;
    return {r.exit_code, error ? ToJson(*error) : nlohmann::json()};
  }

  static void ExpectRefused(const std::pair<int, nlohmann::json>& got, const std::string& why) {
    EXPECT_EQ(got.first, 4) << got.second;
    EXPECT_EQ(got.second.value("kind", ""), "checkpoint") << got.second;
    const std::string message = got.second.value("message", "");
    EXPECT_NE(message.find(why), std::string::npos) << message;
    EXPECT_EQ(message.find("[json.exception"), std::string::npos) << message;
  }

  testing::TempDir dir_;
  static inline testing::TempDir* root_ = nullptr;
  static inline fs::path saved_;
};

TEST_F(HostileCheckpoint, AManifestHashFileWithASecondLineIsRefused) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const fs::path hash = root / saved_.filename() / "manifest.json.sha256";
  const std::string good = testing::ReadFile(hash);
  testing::WriteFile(hash, good + std::string(64, '0') + "  manifest.json\n");
  ExpectRefused(Restore(root), "manifest.json.sha256: more than one line");
}

TEST_F(HostileCheckpoint, AZeroTokenWidthIsRefusedNotDividedBy) {
  ExpectRefused(Restore(Crafted([](nlohmann::json& state) {
                  state["spec"]["data"] = {{"kind", "shards"},
                                           {"files",
                                            {{{"path", "/dev/null"},
                                              {"name", "null"},
                                              {"sha256", std::string(64, '0')},
                                              {"size", 0}}}},
                                           {"bytes_per_token", 0}};
                })),
                "state.spec.data.bytes_per_token 0 is out of range [2, 4]");
}

TEST_F(HostileCheckpoint, AHugeSyntheticLengthIsRefusedNotAllocated) {
  ExpectRefused(Restore(Crafted([](nlohmann::json& state) {
                  state["spec"]["data"]["length"] = uint64_t{1} << 62;
                })),
                "windows of seq_len");
}

TEST_F(HostileCheckpoint, AFifoWhereTheManifestShouldBeIsRefusedWithoutBlocking) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const fs::path manifest = root / saved_.filename() / "manifest.json";
  fs::remove(manifest);
  ASSERT_EQ(::mkfifo(manifest.c_str(), 0644), 0);
  ExpectRefused(Restore(root), "manifest.json: not a regular file");
}

TEST_F(HostileCheckpoint, ASymlinkWhereTheManifestShouldBeIsRefused) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const fs::path manifest = root / saved_.filename() / "manifest.json";
  fs::rename(manifest, dir_.path() / "elsewhere.json");
  fs::create_symlink(dir_.path() / "elsewhere.json", manifest);
  ExpectRefused(Restore(root), "manifest.json: is a symbolic link");
}

// A state file that is a link (to an identical copy outside the checkpoint): the restore reads
// only the checkpoint's own files.
TEST_F(HostileCheckpoint, AStateFileThatIsASymlinkIsRefused) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const fs::path step = root / saved_.filename();
  const nlohmann::json manifest = nlohmann::json::parse(testing::ReadFile(step / "manifest.json"));
  const std::string name = manifest["files"][0]["path"].get<std::string>();
  fs::rename(step / name, dir_.path() / "outside.safetensors");
  fs::create_symlink(dir_.path() / "outside.safetensors", step / name);
  ExpectRefused(Restore(root), name + ": is a symbolic link; refused");
}

// A step directory that is a link is not a step of this checkpoint root.
TEST_F(HostileCheckpoint, AStepDirectoryThatIsASymlinkIsNotRestored) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const fs::path step = root / saved_.filename();
  fs::rename(step, dir_.path() / "outside-step");
  fs::create_directory_symlink(dir_.path() / "outside-step", step);
  const auto [code, error] = Restore(root);
  EXPECT_EQ(code, 4) << error;
  EXPECT_EQ(error.value("kind", ""), "checkpoint") << error;
}

// The checkpoint's model file with the first tensor name's first letter replaced by the byte
// 0xff (not UTF-8; same length, so every offset holds) and the manifest's hash of it updated.
fs::path WithANonUtf8TensorName(const fs::path& root, const fs::path& step) {
  nlohmann::json manifest = nlohmann::json::parse(testing::ReadFile(step / "manifest.json"));
  for (nlohmann::json& file : manifest["files"]) {
    if (file.value("role", "model") != "model") continue;
    std::string bytes = testing::ReadFile(step / file["path"].get<std::string>());
    const size_t name = bytes.find('"', 8) + 1;  // the header's first key
    bytes[name] = '\xff';
    testing::WriteFile(step / file["path"].get<std::string>(), bytes);
    file["sha256"] = Sha256Hex(bytes);
    break;
  }
  const std::string text = manifest.dump(2) + "\n";
  testing::WriteFile(step / "manifest.json", text);
  testing::WriteFile(step / "manifest.json.sha256", Sha256Hex(text) + "\n");
  return root;
}

TEST_F(HostileCheckpoint, ATensorNameThatIsNotUtf8IsACheckpointErrorInAReadableResult) {
  const fs::path root = Crafted([](nlohmann::json&) {});
  const std::pair<int, nlohmann::json> got =
      Restore(WithANonUtf8TensorName(root, root / saved_.filename()));
  ExpectRefused(got, "model.safetensors: header refused: not valid JSON");
  EXPECT_EQ(got.second.value("message", "").find("[json."), std::string::npos) << got.second;
}

}  // namespace
}  // namespace trainlock
