// data.model and data.dataset: pinned files are read once, as regular files, in time; a token
// shard's every id is checked against the config's vocabulary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "base/sha256.h"
#include "checks/data_checks.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// A project in a temporary directory with a vocabulary of 1000 and a local dataset of token
// shards under data/.
class DataChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    project_.dir = dir_.path();
    project_.config.model.vocab_size = 1000;
    dataset_.source = "local";
    dataset_.repo = "data";
    dataset_.token_dtype = "uint16";
  }

  // Writes `tokens` as little-endian uint16 to data/`name` (plus `tail` raw bytes) and pins it.
  void Shard(const std::string& name, const std::vector<uint16_t>& tokens,
             const std::string& tail = {}) {
    std::string bytes;
    for (uint16_t t : tokens) {
      bytes.push_back(static_cast<char>(t & 0xff));
      bytes.push_back(static_cast<char>(t >> 8));
    }
    bytes += tail;
    testing::WriteFile(dir_.path() / "data" / name, bytes);
    dataset_.files.push_back({name, Sha256Hex(bytes), bytes.size()});
  }

  CheckResult Verify(Deadline deadline = Deadline::max()) {
    return VerifyArtifact(project_, dataset_, "dataset", deadline);
  }

  testing::TempDir dir_;
  Project project_;
  ArtifactSource dataset_;
};

TEST_F(DataChecks, ShardsWhoseTokensAreAllBelowTheVocabularyPass) {
  Shard("a.bin", {0, 1, 999, 42});
  Shard("b.bin", {7, 8});
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
  EXPECT_EQ(c.metrics["token_shards"]["a.bin"]["max_token_id"], 999);
  EXPECT_EQ(c.metrics["token_shards"]["b.bin"]["tokens"], 2);
  EXPECT_NE(c.summary.find("every token id below vocab_size 1000"), std::string::npos);
}

TEST_F(DataChecks, ATokenIdAtOrAboveTheVocabularyAnywhereInAShardFails) {
  std::vector<uint16_t> tokens(3'000'000, 5);  // 6 MB: past the first read chunk
  tokens.back() = 1000;
  Shard("a.bin", tokens);
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: token id 1000 at position 2999999 is not below the config's "
                           "vocab_size"),
            std::string::npos)
      << c.summary;
  EXPECT_NE(c.remedy.find("re-tokenize"), std::string::npos);
}

TEST_F(DataChecks, AShardEndingInsideATokenFails) {
  Shard("a.bin", {1, 2}, "x");
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: ends inside a token"), std::string::npos) << c.summary;
}

TEST_F(DataChecks, AFileThatIsNotThePinnedOneFails) {
  Shard("a.bin", {1, 2});
  testing::WriteFile(dir_.path() / "data/a.bin", "abcd");
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: sha256 "), std::string::npos) << c.summary;
}

TEST_F(DataChecks, AFifoInPlaceOfAPinnedFileIsRefusedWithoutBlocking) {
  Shard("a.bin", {1, 2});
  fs::remove(dir_.path() / "data/a.bin");
  ASSERT_EQ(::mkfifo((dir_.path() / "data/a.bin").c_str(), 0600), 0);
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: not a regular file"), std::string::npos) << c.summary;
}

TEST_F(DataChecks, ALocalFileLinkedOutOfTheProjectFails) {
  Shard("a.bin", {1, 2});
  testing::TempDir outside;
  fs::rename(dir_.path() / "data/a.bin", outside.path() / "a.bin");
  fs::create_symlink(outside.path() / "a.bin", dir_.path() / "data/a.bin");
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: resolves to " + fs::canonical(outside.path()).string()),
            std::string::npos)
      << c.summary;
  EXPECT_NE(c.summary.find("outside the project"), std::string::npos) << c.summary;
}

TEST_F(DataChecks, ALocalSourceDirectoryLinkedOutOfTheProjectFails) {
  Shard("a.bin", {1, 2});
  testing::TempDir outside;
  fs::rename(dir_.path() / "data", outside.path() / "data");
  fs::create_directory_symlink(outside.path() / "data", dir_.path() / "data");
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("outside the project"), std::string::npos) << c.summary;
}

TEST_F(DataChecks, ALinkThatStaysInsideTheProjectIsFollowed) {
  Shard("a.bin", {1, 2});
  fs::create_directories(dir_.path() / "store");
  fs::rename(dir_.path() / "data/a.bin", dir_.path() / "store/a.bin");
  fs::create_symlink("../store/a.bin", dir_.path() / "data/a.bin");
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

TEST_F(DataChecks, ReadingStopsAtTheDeadline) {
  Shard("a.bin", {1, 2});
  CheckResult c = Verify(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("a.bin: not read within the time limit (--timeout)"), std::string::npos)
      << c.summary;
}

TEST_F(DataChecks, FilesThatAreNotTokenShardsAreNotScanned) {
  dataset_.token_dtype.clear();
  Shard("a.bin", {60000});
  CheckResult c = Verify();
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
  EXPECT_FALSE(c.metrics.contains("token_shards"));
}

}  // namespace
}  // namespace trainlock
