// Checkpoints: a save restores exactly; any damage (flipped byte, truncation, missing file, a
// manifest that lies) is refused naming the file; a SIGKILL mid-write leaves the previous
// checkpoint intact and loadable.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "base/sha256.h"
#include "engines/native/checkpoint.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

CheckpointContents MakeContents(int64_t step, int64_t elements = 1024) {
  torch::manual_seed(step);
  CheckpointContents c;
  c.step = step;
  c.model = {{"model.embed_tokens.weight", torch::randn({elements})},
             {"model.norm.weight", torch::ones({8})}};
  c.optimizer = {{"model.embed_tokens.weight.exp_avg", torch::randn({elements})},
                 {"model.embed_tokens.weight.exp_avg_sq", torch::rand({elements})}};
  c.state = {{"data_loader", {{"epoch", 0}, {"cursor", step * 4}}}, {"lock_sha256", "x"}};
  return c;
}

void ExpectSameTensors(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  std::map<std::string, torch::Tensor> by_name;
  for (const NamedTensor& t : b) by_name[t.name] = t.tensor;
  for (const NamedTensor& t : a) {
    ASSERT_TRUE(by_name.count(t.name)) << t.name;
    EXPECT_TRUE(torch::equal(t.tensor, by_name[t.name])) << t.name;
  }
}

std::string LoadError(const fs::path& dir) {
  try {
    LoadCheckpoint(dir);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

void FlipByte(const fs::path& file, std::streamoff at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  f.seekp(at);
  f.write(&c, 1);
}

class CheckpointTest : public ::testing::Test {
 protected:
  fs::path Save(int64_t step) { return SaveCheckpoint(root_.path(), MakeContents(step), 3).dir; }
  TempDir root_;
};

// A consistent lie: `text` as the saved checkpoint's manifest, with its own hash updated.
fs::path WithManifest(const fs::path& dir, const std::string& text) {
  testing::WriteFile(dir / "manifest.json", text);
  testing::WriteFile(dir / "manifest.json.sha256", Sha256Hex(text) + "\n");
  return dir;
}

// The saved manifest with `edit` applied.
template <typename Edit>
fs::path WithEditedManifest(const fs::path& dir, Edit edit) {
  auto manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  edit(manifest);
  return WithManifest(dir, manifest.dump(2) + "\n");
}

TEST_F(CheckpointTest, RestoresExactlyWhatWasSaved) {
  CheckpointContents saved = MakeContents(4);
  CheckpointIo io = SaveCheckpoint(root_.path(), saved, 2);
  CheckpointContents loaded = LoadCheckpoint(io.dir);
  EXPECT_EQ(loaded.step, 4);
  ExpectSameTensors(saved.model, loaded.model);
  ExpectSameTensors(saved.optimizer, loaded.optimizer);
  EXPECT_EQ(loaded.state["data_loader"]["cursor"], 16);
  EXPECT_GT(io.bytes, 3u * 1024 * 4);
}

TEST_F(CheckpointTest, ManifestListsEveryFileWithItsHashAndSize) {
  fs::path dir = Save(1);
  auto manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  EXPECT_EQ(manifest["format"], kCheckpointFormat);
  for (const auto& f : manifest["files"]) {
    uint64_t size = 0;
    EXPECT_EQ(f["sha256"], Sha256FileHex(dir / f["path"].get<std::string>(), &size));
    EXPECT_EQ(f["size"], size);
  }
}

TEST_F(CheckpointTest, FlippedByteInTheParametersIsRefusedNamingTheFile) {
  fs::path dir = Save(1);
  FlipByte(dir / "model.safetensors",
           static_cast<std::streamoff>(fs::file_size(dir / "model.safetensors") - 10));
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("model.safetensors: sha256"), std::string::npos) << error;
  EXPECT_NE(error.find("does not match manifest.json"), std::string::npos) << error;
}

TEST_F(CheckpointTest, FlippedByteInTheOptimizerStateIsRefused) {
  fs::path dir = Save(1);
  FlipByte(dir / "optimizer.safetensors", 100);
  EXPECT_NE(LoadError(dir).find("optimizer.safetensors: sha256"), std::string::npos);
}

TEST_F(CheckpointTest, FlippedByteInTheManifestIsRefused) {
  fs::path dir = Save(1);
  std::string text = testing::ReadFile(dir / "manifest.json");
  text.replace(text.find("\"step\": 1"), 9, "\"step\": 7");  // still valid JSON, no longer true
  testing::WriteFile(dir / "manifest.json", text);
  EXPECT_NE(LoadError(dir).find("manifest.json: sha256"), std::string::npos) << LoadError(dir);
}

// `sha256sum -c manifest.json.sha256`, run in the checkpoint directory: the standard tool.
testing::RunResult Sha256sumCheck(const fs::path& dir) {
  return testing::RunCommand(
      {"sh", "-c", "cd \"$0\" && sha256sum -c manifest.json.sha256", dir.string()});
}

TEST_F(CheckpointTest, Sha256sumChecksTheManifestHashFile) {
  fs::path dir = Save(1);
  testing::RunResult r = Sha256sumCheck(dir);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("manifest.json: OK"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, Sha256sumRefusesAChangedManifest) {
  fs::path dir = Save(1);
  FlipByte(dir / "manifest.json", 10);
  testing::RunResult r = Sha256sumCheck(dir);
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("manifest.json: FAILED"), std::string::npos) << r.out;
}

TEST_F(CheckpointTest, AManifestHashLineNamingAnotherFileIsRefused) {
  fs::path dir = Save(1);
  const std::string hash = Sha256Hex(testing::ReadFile(dir / "manifest.json"));
  testing::WriteFile(dir / "manifest.json.sha256", hash + "  model.safetensors\n");
  EXPECT_NE(LoadError(dir).find("manifest.json.sha256: names another file"), std::string::npos)
      << LoadError(dir);
}

TEST_F(CheckpointTest, AnOlderBareManifestHashStillLoads) {
  fs::path dir = Save(1);
  const std::string hash = Sha256Hex(testing::ReadFile(dir / "manifest.json"));
  testing::WriteFile(dir / "manifest.json.sha256", hash + "\n");
  EXPECT_EQ(LoadError(dir), "");
}

TEST_F(CheckpointTest, AFlippedByteAnywhereInAnyFileIsRefused) {
  fs::path dir = Save(1);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 4u);
  for (const fs::path& file : files) {
    for (double where : {0.0, 0.5, 0.99}) {
      TempDir copy;
      fs::copy(dir, copy.path() / "step-00000001");
      fs::path victim = copy.path() / "step-00000001" / file.filename();
      FlipByte(victim,
               static_cast<std::streamoff>(where * static_cast<double>(fs::file_size(victim) - 1)));
      std::string error = LoadError(copy.path() / "step-00000001");
      EXPECT_NE(error.find(file.filename().string()), std::string::npos)
          << file.filename() << " at " << where << ": " << error;
    }
  }
}

TEST_F(CheckpointTest, TruncatedFileIsRefusedWithBothSizes) {
  fs::path dir = Save(1);
  fs::path file = dir / "model.safetensors";
  uint64_t size = fs::file_size(file);
  fs::resize_file(file, size - 100);
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("model.safetensors: size " + std::to_string(size - 100)), std::string::npos)
      << error;
  EXPECT_NE(error.find("manifest.json says " + std::to_string(size)), std::string::npos) << error;
}

TEST_F(CheckpointTest, MissingFileIsRefused) {
  fs::path dir = Save(1);
  fs::remove(dir / "optimizer.safetensors");
  EXPECT_NE(LoadError(dir).find("optimizer.safetensors: missing (listed in manifest.json)"),
            std::string::npos);
}

TEST_F(CheckpointTest, ManifestLyingAboutASizeIsRefused) {
  fs::path dir = Save(1);
  auto manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  uint64_t real = manifest["files"][0]["size"];
  manifest["files"][0]["size"] = real + 1;
  // A consistent lie: the manifest's own hash is updated to match the edit.
  std::string text = manifest.dump(2) + "\n";
  testing::WriteFile(dir / "manifest.json", text);
  testing::WriteFile(dir / "manifest.json.sha256", Sha256Hex(text) + "\n");
  std::string error = LoadError(dir);
  EXPECT_NE(error.find("manifest.json says " + std::to_string(real + 1)), std::string::npos)
      << error;
}

TEST_F(CheckpointTest, MissingManifestIsRefused) {
  fs::path dir = Save(1);
  fs::remove(dir / "manifest.json");
  EXPECT_NE(LoadError(dir).find("manifest.json: missing"), std::string::npos);
}

TEST_F(CheckpointTest, LargeStateIsShardedWithHuggingFaceNamesAndRestoresExactly) {
  CheckpointContents saved = MakeContents(4, 1024);  // 4 KiB tensors
  CheckpointIo io = SaveCheckpoint(root_.path(), saved, 2, /*shard_bytes=*/4096);
  auto manifest = nlohmann::json::parse(testing::ReadFile(io.dir / "manifest.json"));
  std::vector<std::string> listed;
  for (const auto& f : manifest["files"]) {
    listed.push_back(f["role"].get<std::string>() + ":" + f["path"].get<std::string>());
  }
  // Name order: the 4 KiB embedding and the 32-byte norm do not share a 4 KiB shard.
  EXPECT_EQ(listed, (std::vector<std::string>{"model:model-00001-of-00002.safetensors",
                                              "model:model-00002-of-00002.safetensors",
                                              "optimizer:optimizer-00001-of-00002.safetensors",
                                              "optimizer:optimizer-00002-of-00002.safetensors"}));
  EXPECT_EQ(io.files, 4u);
  CheckpointIo read;
  CheckpointContents loaded = LoadCheckpoint(io.dir, &read);
  EXPECT_EQ(read.files, 4u);
  ExpectSameTensors(saved.model, loaded.model);
  ExpectSameTensors(saved.optimizer, loaded.optimizer);
}

TEST_F(CheckpointTest, AFlippedByteInOneShardIsRefusedNamingThatShard) {
  CheckpointIo io = SaveCheckpoint(root_.path(), MakeContents(4, 1024), 2, 4096);
  FlipByte(io.dir / "optimizer-00002-of-00002.safetensors", 200);
  EXPECT_NE(LoadError(io.dir).find("optimizer-00002-of-00002.safetensors: sha256"),
            std::string::npos)
      << LoadError(io.dir);
}

TEST_F(CheckpointTest, AVersion1CheckpointWithoutRolesStillLoads) {
  CheckpointContents saved = MakeContents(3);
  fs::path dir = SaveCheckpoint(root_.path(), saved, 2).dir;
  auto manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  manifest["format"] = kCheckpointFormatV1;
  for (auto& f : manifest["files"]) f.erase("role");
  const std::string text = manifest.dump(2) + "\n";
  std::ofstream(dir / "manifest.json", std::ios::binary | std::ios::trunc) << text;
  std::ofstream(dir / "manifest.json.sha256", std::ios::trunc) << Sha256Hex(text) << "\n";
  CheckpointContents loaded = LoadCheckpoint(dir);
  ExpectSameTensors(saved.model, loaded.model);
  ExpectSameTensors(saved.optimizer, loaded.optimizer);
}

TEST_F(CheckpointTest, AManifestWithAnUnknownRoleIsRefused) {
  fs::path dir = Save(2);
  auto manifest = nlohmann::json::parse(testing::ReadFile(dir / "manifest.json"));
  manifest["files"][0]["role"] = "extras";
  const std::string text = manifest.dump(2) + "\n";
  std::ofstream(dir / "manifest.json", std::ios::binary | std::ios::trunc) << text;
  std::ofstream(dir / "manifest.json.sha256", std::ios::trunc) << Sha256Hex(text) << "\n";
  EXPECT_NE(LoadError(dir).find("manifest.json: invalid file entry"), std::string::npos)
      << LoadError(dir);
}

TEST_F(CheckpointTest, AFilePathThatClimbsOutOfTheCheckpointIsRefused) {
  fs::path dir = WithEditedManifest(
      Save(2), [](nlohmann::json& m) { m["files"][0]["path"] = "../../../etc/passwd"; });
  EXPECT_NE(LoadError(dir).find("manifest.json: invalid file entry '{\"path\":\"../../../etc/"),
            std::string::npos)
      << LoadError(dir);
  EXPECT_NE(LoadError(dir).find(": path is not a file name"), std::string::npos) << LoadError(dir);
}

TEST_F(CheckpointTest, AFormatOfTheWrongTypeIsRefusedNotThrownAsALibraryError) {
  fs::path dir = WithEditedManifest(Save(2), [](nlohmann::json& m) { m["format"] = 2; });
  EXPECT_EQ(LoadError(dir),
            (dir / "manifest.json").string() + ": not a trainlock.checkpoint/v2 manifest");
}

TEST_F(CheckpointTest, AManifestNestedDeeperThanTheJsonLimitIsRefused) {
  fs::path dir = WithManifest(Save(2), std::string(10000, '[') + std::string(10000, ']'));
  EXPECT_EQ(LoadError(dir), (dir / "manifest.json").string() +
                                ": not a trainlock.checkpoint/v2 manifest: JSON nested deeper "
                                "than 64 levels of arrays and objects at line 1, column 65");
}

TEST_F(CheckpointTest, AManifestListingAFileTwiceIsRefused) {
  fs::path dir =
      WithEditedManifest(Save(2), [](nlohmann::json& m) { m["files"].push_back(m["files"][0]); });
  EXPECT_EQ(LoadError(dir), (dir / "manifest.json").string() + ": lists 'model.safetensors' twice");
}

TEST_F(CheckpointTest, AMalformedSha256IsRefusedBeforeAnyFileIsRead) {
  fs::path dir =
      WithEditedManifest(Save(2), [](nlohmann::json& m) { m["files"][0]["sha256"] = "x"; });
  EXPECT_NE(LoadError(dir).find(": sha256 is not 64 lower-case hex characters"), std::string::npos)
      << LoadError(dir);
}

TEST_F(CheckpointTest, ANegativeStepIsRefused) {
  fs::path dir = WithEditedManifest(Save(2), [](nlohmann::json& m) { m["step"] = -1; });
  EXPECT_EQ(LoadError(dir), (dir / "manifest.json").string() + ": step '-1' is not a step number");
}

TEST_F(CheckpointTest, AStateThatIsNotAnObjectIsRefused) {
  fs::path dir = WithEditedManifest(Save(2), [](nlohmann::json& m) { m["state"] = "x"; });
  EXPECT_EQ(LoadError(dir), (dir / "manifest.json").string() + ": state is not an object");
}

TEST_F(CheckpointTest, KeepsTheLastKAndFindsTheNewest) {
  for (int64_t step = 1; step <= 5; ++step) Save(step);
  int count = 0;
  for (const auto& e : fs::directory_iterator(root_.path())) count += e.is_directory();
  EXPECT_EQ(count, 3);
  EXPECT_EQ(LatestCheckpoint(root_.path())->filename(), "step-00000005");
}

TEST_F(CheckpointTest, SigkillDuringTheWriteLeavesThePreviousCheckpointIntact) {
  CheckpointContents first = MakeContents(1);
  SaveCheckpoint(root_.path(), first, 3);
  const fs::path root = root_.path();
  // 3 x 64 MiB of tensors: long enough for the parent to catch the child mid-write. Made
  // before the fork: a child of a process that started CUDA must not touch CUDA (seeding).
  CheckpointContents big = MakeContents(2, 16 << 20);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    SaveCheckpoint(root, big, 3);
    ::_exit(0);
  }
  // Kill as soon as the second checkpoint's temporary directory has data in it.
  bool caught_mid_write = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && !caught_mid_write) {
    for (const auto& e : fs::directory_iterator(root)) {
      std::string name = e.path().filename().string();
      std::error_code ec;
      if (name.rfind(".step-00000002.tmp", 0) == 0 &&
          fs::exists(e.path() / "model.safetensors", ec)) {
        caught_mid_write = true;
      }
    }
    if (!caught_mid_write) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(caught_mid_write) << "the writer finished before it could be killed";
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(root / "step-00000002"));
  auto latest = LatestCheckpoint(root);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->filename(), "step-00000001");
  CheckpointContents loaded = LoadCheckpoint(*latest);
  ExpectSameTensors(first.model, loaded.model);
  // The next save clears the dead writer's temporary directory.
  SaveCheckpoint(root, MakeContents(3), 3);
  for (const auto& e : fs::directory_iterator(root)) {
    EXPECT_NE(e.path().filename().string().rfind(".step-", 0), 0u) << e.path();
  }
}

}  // namespace
}  // namespace trainlock::validate
