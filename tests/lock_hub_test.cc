// `trainlock lock` against a loopback stand-in for the Hugging Face Hub
// (tests/servers/hf_server.py, exactly the endpoints src/hf_hub.h documents): branches
// resolve to commits with every file's size and SHA-256, and a gated repository without a
// token (401), an unknown revision (404), a truncated download and a hostile answer (a file
// name climbing out, nesting 100,000 deep, a mistyped size) each exit 3 and write nothing; the
// token never appears in the output.
#include <gtest/gtest.h>

#include <memory>

#include "base/sha256.h"
#include "project/project.h"
#include "project/spec_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

class HubLock : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::HaveProgram("python3")) {
      skip_ = "python3 is not installed (ci/deps.sh installs it)";
      return;
    }
    root_ = std::make_unique<testing::TempDir>();
    const fs::path hub = root_->path() / "hub";
    testing::WriteFile(hub / "org/tiny-model/config.json", "{\"hidden_size\": 64}\n");
    testing::WriteFile(hub / "org/tiny-model/model.safetensors", std::string(4096, '\x42'));
    testing::WriteFile(hub / "org/gated/config.json", "{}\n");
    testing::WriteFile(hub / "org/broken/truncated.json", std::string(100000, 'x'));
    testing::WriteFile(hub / "org/tokens/shard-0.bin", std::string(2048, '\x07'));
    // Hostile answers (hf_server.py serves answer.json verbatim).
    const std::string commit = std::string("\"sha\": \"") + kCommit + "\"";
    testing::WriteFile(hub / "org/climbing/answer.json",
                       "{" + commit +
                           ", \"siblings\": [{\"rfilename\": \"config.json\"}, "
                           "{\"rfilename\": \"../../outside.txt\", \"size\": 1}]}");
    testing::WriteFile(hub / "org/deep/answer.json",
                       "{" + commit + ", \"siblings\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}");
    testing::WriteFile(hub / "org/mistyped/answer.json",
                       "{" + commit +
                           ", \"siblings\": [{\"rfilename\": \"config.json\", "
                           "\"size\": \"twenty\"}]}");
    port_ = testing::FreeLoopbackPort();
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3",
                                 (testing::SourceDir() / "tests/servers/hf_server.py").string(),
                                 std::to_string(port_), hub.string()},
        root_->path() / "hub.log");
    if (!testing::WaitForHttp(Endpoint() + "/api/models/x/y/revision/main", 30)) {
      skip_ = "hf_server.py did not start: " + testing::ReadFile(root_->path() / "hub.log");
    }
  }
  static void TearDownTestSuite() {
    server_.reset();
    root_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static std::string Endpoint() { return "http://127.0.0.1:" + std::to_string(port_); }

  // examples/tiny whose manifest adds `artifact` (a [model] or [dataset] table), without a
  // base image: these tests are about the Hub alone (the registry has its own).
  fs::path Project(const std::string& artifact) {
    return testing::UnlockedTiny(dir_.path() / "p", "", artifact);
  }

  testing::RunResult Lock(const fs::path& project, const std::string& token = "") {
    std::vector<std::string> env = {"HF_ENDPOINT=" + Endpoint()};
    if (!token.empty()) env.push_back("HF_TOKEN=" + token);
    return testing::RunProgram("trainlock", {"lock", project.string(), "--timeout", "5"}, env);
  }

  static Spec LockSpec(const fs::path& project) {
    return LoadSpec(testing::ReadFile(project / "trainlock.lock"), "lock", SpecKind::kLock);
  }

  testing::TempDir dir_;
  static inline std::string skip_;
  static inline std::unique_ptr<testing::TempDir> root_;
  static inline std::unique_ptr<testing::BackgroundProcess> server_;
  static inline int port_ = 0;
};

TEST_F(HubLock, ABranchResolvesToItsCommitWithEveryFilesSizeAndSha256) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"main\"\n"
      "files = [\"config.json\", \"model.safetensors\"]\n");
  auto r = Lock(project);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Spec lock = LockSpec(project);
  ASSERT_TRUE(lock.model);
  EXPECT_EQ(lock.model->revision, kCommit);
  ASSERT_EQ(lock.model->files.size(), 2u);
  // config.json is hashed from its bytes, model.safetensors taken from the LFS metadata.
  EXPECT_EQ(lock.model->files[0].sha256, Sha256Hex("{\"hidden_size\": 64}\n"));
  EXPECT_EQ(lock.model->files[0].size, 20u);
  EXPECT_EQ(lock.model->files[1].sha256, Sha256Hex(std::string(4096, '\x42')));
  EXPECT_EQ(lock.model->files[1].size, 4096u);
}

TEST_F(HubLock, DatasetsResolveThroughTheDatasetEndpoints) {
  fs::path project = Project(
      "[dataset]\nsource = \"hf\"\nrepo = \"org/tokens\"\nrevision = \"main\"\n"
      "token-dtype = \"uint16\"\nfiles = [\"shard-0.bin\"]\n");
  auto r = Lock(project);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Spec lock = LockSpec(project);
  ASSERT_TRUE(lock.dataset);
  EXPECT_EQ(lock.dataset->revision, kCommit);
  EXPECT_EQ(lock.dataset->files.at(0).sha256, Sha256Hex(std::string(2048, '\x07')));
}

TEST_F(HubLock, AGatedRepositoryWithoutATokenIsExit3Naming401) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/gated\"\nrevision = \"main\"\nfiles = "
      "[\"config.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("401 unauthorized"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HF_TOKEN"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(HubLock, AGatedRepositoryResolvesWithTheTokenWhichIsNeverPrinted) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/gated\"\nrevision = \"main\"\nfiles = "
      "[\"config.json\"]\n");
  auto r = Lock(project, "good-token");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("good-token"), std::string::npos);
  EXPECT_NE(testing::ReadFile(project / "trainlock.lock").find(kCommit), std::string::npos);
}

TEST_F(HubLock, AnUnknownRevisionIsExit3Naming404) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"no-such-branch\"\n"
      "files = [\"config.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("404 not found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(HubLock, ATruncatedDownloadIsExit3AndWritesNothing) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/broken\"\nrevision = \"main\"\n"
      "files = [\"truncated.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(HubLock, AFileNameThatClimbsOutOfTheRepositoryIsExit3AndWritesNothing) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/climbing\"\nrevision = \"main\"\n"
      "files = [\"config.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("model org/climbing@main: the Hub's file '../../outside.txt': path "
                       "'../../outside.txt' escapes the project through '..'"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(HubLock, AnAnswerNestedAHundredThousandDeepIsExit3SayingSo) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/deep\"\nrevision = \"main\"\n"
      "files = [\"config.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("model org/deep@main: JSON nested deeper than 64 levels of arrays and "
                       "objects at line 1, column 128"),
            std::string::npos)
      << r.err;
}

TEST_F(HubLock, ASizeOfTheWrongTypeIsExit3WithoutALibraryError) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/mistyped\"\nrevision = \"main\"\n"
      "files = [\"config.json\"]\n");
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("model org/mistyped@main: the Hub's file 'config.json': size is not a "
                       "non-negative integer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
}

TEST_F(HubLock, FetchDownloadsThePinnedFilesIntoTheCacheAndVerifiesThem) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"main\"\n"
      "files = [\"config.json\", \"model.safetensors\"]\n");
  ASSERT_EQ(Lock(project).exit_code, 0);
  auto r =
      testing::RunProgram("trainlock", {"fetch", project.string()}, {"HF_ENDPOINT=" + Endpoint()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path cache =
      project / ".trainlock/cache/models" / (std::string("org-tiny-model@") + kCommit);
  EXPECT_EQ(testing::ReadFile(cache / "model.safetensors"), std::string(4096, '\x42'));
  EXPECT_EQ(testing::ReadFile(cache / "config.json"), "{\"hidden_size\": 64}\n");
  auto again =
      testing::RunProgram("trainlock", {"fetch", project.string()}, {"HF_ENDPOINT=" + Endpoint()});
  EXPECT_NE(again.out.find("fetched 0 file(s), 2 already present"), std::string::npos) << again.out;
}

TEST_F(HubLock, FetchRefusesAFileThatDoesNotMatchTheLockAndLeavesNothing) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"main\"\n"
      "files = [\"model.safetensors\"]\n");
  ASSERT_EQ(Lock(project).exit_code, 0);
  // The lock now pins other bytes than the Hub serves (as if the Hub's file were swapped).
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const std::string real = Sha256Hex(std::string(4096, '\x42'));
  lock.replace(lock.find(real), 64, std::string(64, 'a'));
  testing::WriteFile(project / "trainlock.lock", lock);
  auto r =
      testing::RunProgram("trainlock", {"fetch", project.string()}, {"HF_ENDPOINT=" + Endpoint()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("does not match the lock"), std::string::npos) << r.err;
  const fs::path cache =
      project / ".trainlock/cache/models" / (std::string("org-tiny-model@") + kCommit);
  EXPECT_FALSE(fs::exists(cache / "model.safetensors"));
  EXPECT_FALSE(fs::exists(cache / "model.safetensors.partial"));
}

}  // namespace
}  // namespace trainlock
