// `trainlock lock` against a loopback stand-in for the Hugging Face Hub
// (tests/servers/hf_server.py, exactly the endpoints src/hf_hub.h documents): branches
// resolve to commits with every file's size and SHA-256, and a gated repository without a
// token (401), an unknown revision (404), a truncated download and a hostile answer (a file
// name climbing out, nesting 100,000 deep, a mistyped size) each exit 3 and write nothing; the
// token never appears in the output.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "base/sha256.h"
#include "project/lockfile_loader.h"
#include "project/project.h"
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
    testing::WriteFile(hub / "org/endless/endless.safetensors", std::string(4096, '\x42'));
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

  testing::RunResult Fetch(const fs::path& project) {
    return testing::RunProgram("trainlock", {"fetch", project.string(), "--timeout", "20"},
                               {"HF_ENDPOINT=" + Endpoint()});
  }

  // A locked project pinning org/tiny-model's model.safetensors, and the cache directory
  // `trainlock fetch` puts it in.
  fs::path LockedTinyModel() {
    fs::path project = Project(
        "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"main\"\n"
        "files = [\"model.safetensors\"]\n");
    EXPECT_EQ(Lock(project).exit_code, 0);
    return project;
  }
  static fs::path CacheDir(const fs::path& project) {
    return project / ".trainlock/cache/models" / (std::string("org-tiny-model@") + kCommit);
  }

  static Lockfile LockSpec(const fs::path& project) {
    return LoadLockfile(testing::ReadFile(project / "trainlock.lock"), "lock", LockfileKind::kLock);
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
  Lockfile lock = LockSpec(project);
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
  Lockfile lock = LockSpec(project);
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

TEST_F(HubLock, FetchStopsAtThePinnedSizeWhenTheHubSendsMore) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/endless\"\nrevision = \"main\"\n"
      "files = [\"endless.safetensors\"]\n");
  ASSERT_EQ(Lock(project).exit_code, 0);
  const auto start = std::chrono::steady_clock::now();
  auto r = Fetch(project);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 15);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("the Hub sent more than the 4096 bytes the lock pins"), std::string::npos)
      << r.err;
  const fs::path cache =
      project / ".trainlock/cache/models" / (std::string("org-endless@") + kCommit);
  EXPECT_FALSE(fs::exists(cache / "endless.safetensors"));
  EXPECT_FALSE(fs::exists(cache / "endless.safetensors.partial"));
}

TEST_F(HubLock, FetchRefusesASymlinkPlantedAtDotTrainlock) {
  fs::path project = LockedTinyModel();
  fs::create_directories(dir_.path() / "elsewhere");
  fs::create_directory_symlink(dir_.path() / "elsewhere", project / ".trainlock");
  auto r = Fetch(project);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / ".trainlock").string() + ": error: is a symbolic link"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(dir_.path() / "elsewhere"));
}

TEST_F(HubLock, FetchRefusesASymlinkPlantedAtTheCacheDirectory) {
  fs::path project = LockedTinyModel();
  fs::create_directories(dir_.path() / "elsewhere");
  fs::create_directories(project / ".trainlock");
  fs::create_directory_symlink(dir_.path() / "elsewhere", project / ".trainlock/cache");
  auto r = Fetch(project);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find((project / ".trainlock/cache").string() + ": error: is a symbolic link"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(dir_.path() / "elsewhere"));
}

TEST_F(HubLock, FetchRefusesASymlinkPlantedAtThePartialFile) {
  fs::path project = LockedTinyModel();
  testing::WriteFile(dir_.path() / "victim", "precious");
  fs::create_directories(CacheDir(project));
  fs::create_symlink(dir_.path() / "victim", CacheDir(project) / "model.safetensors.partial");
  auto r = Fetch(project);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("model.safetensors.partial: error: is a symbolic link"), std::string::npos)
      << r.err;
  EXPECT_EQ(testing::ReadFile(dir_.path() / "victim"), "precious");
}

TEST_F(HubLock, FetchRefusesASymlinkPlantedAtThePinnedFile) {
  fs::path project = LockedTinyModel();
  fs::create_directories(CacheDir(project));
  fs::create_symlink("/dev/zero", CacheDir(project) / "model.safetensors");
  auto r = Fetch(project);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("model.safetensors: error: is a symbolic link"), std::string::npos) << r.err;
}

TEST_F(HubLock, AStalledHubTimesOutAfterTheLockTimeout) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/stalled\"\nrevision = \"main\"\nfiles = "
      "[\"config.json\"]\n");
  const auto start = std::chrono::steady_clock::now();
  auto r = testing::RunProgram("trainlock", {"lock", project.string(), "--timeout", "1"},
                               {"HF_ENDPOINT=" + Endpoint()});
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("Hub unreachable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("timed out: no progress (under 1024 bytes/s) for 1 s"), std::string::npos)
      << r.err;
  // 4 attempts of 1 s and their backoff, not the 60 s the Hub used to be given regardless.
  EXPECT_LT(waited, 20.0);
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(HubLock, AHfTokenWithALineBreakIsRefusedAndNeverPrinted) {
  fs::path project = Project(
      "[model]\nsource = \"hf\"\nrepo = \"org/gated\"\nrevision = \"main\"\nfiles = "
      "[\"config.json\"]\n");
  auto r = Lock(project, "good-token\r\nX-Evil: 1");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("HF_TOKEN has a line break"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find("good-token"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

// `trainlock lock --check` is the CI drift gate and touches no network: with HF_ENDPOINT
// pointing at a server that logs every request, a fresh lock checks clean (exit 0), a stale
// one fails naming what changed (exit 1), and the server saw nothing.
class OfflineLockCheck : public HubLock {
 protected:
  void SetUp() override {
    HubLock::SetUp();
    if (IsSkipped()) return;
    tripwire_port_ = testing::FreeLoopbackPort();
    tripwire_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3", "-m", "http.server", std::to_string(tripwire_port_),
                                 "--bind", "127.0.0.1", "--directory", dir_.path().string()},
        tripwire_log_);
    ASSERT_TRUE(testing::WaitForHttp(Tripwire() + "/", 30));
    project_ = Project(
        "[model]\nsource = \"hf\"\nrepo = \"org/tiny-model\"\nrevision = \"main\"\n"
        "files = [\"config.json\"]\n");
    ASSERT_EQ(Lock(project_).exit_code, 0);
    requests_before_ = Requests();
  }
  std::string Tripwire() const { return "http://127.0.0.1:" + std::to_string(tripwire_port_); }
  // Request lines the tripwire server logged (http.server logs each to stderr).
  size_t Requests() const {
    std::string log = testing::ReadFile(tripwire_log_);
    size_t n = 0;
    for (size_t at = log.find("\"GET "); at != std::string::npos; at = log.find("\"GET ", at + 1))
      ++n;
    return n;
  }
  testing::RunResult Check(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"lock", project_.string(), "--check"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProgram(
        "trainlock", args,
        {"HF_ENDPOINT=" + Tripwire(), "HTTPS_PROXY=" + Tripwire(), "HTTP_PROXY=" + Tripwire()});
  }

  fs::path tripwire_log_ = dir_.path() / "tripwire.log";
  int tripwire_port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> tripwire_;
  fs::path project_;
  size_t requests_before_ = 0;
};

TEST_F(OfflineLockCheck, AFreshLockPassesWithoutAnyRequest) {
  auto r = Check();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("up to date"), std::string::npos) << r.out;
  EXPECT_EQ(Requests(), requests_before_);
}

TEST_F(OfflineLockCheck, TheTripwireSeesWhatAnOnlineLockAsks) {
  // The server does log requests: an online `trainlock lock` against it is seen.
  testing::RunProgram("trainlock", {"lock", project_.string(), "--timeout", "5"},
                      {"HF_ENDPOINT=" + Tripwire()});
  EXPECT_GT(Requests(), requests_before_);
}

TEST_F(OfflineLockCheck, AChangedManifestIsStaleNamingTheChange) {
  std::string manifest = testing::ReadFile(project_ / "trainlock.toml");
  manifest.replace(manifest.find("seed = 1234"), 11, "seed = 4321");
  testing::WriteFile(project_ / "trainlock.toml", manifest);
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("trainlock.lock: error: stale: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("would change: [project]: seed = 4321"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run `trainlock lock " + project_.string() + "`"), std::string::npos);
  EXPECT_EQ(Requests(), requests_before_);
}

TEST_F(OfflineLockCheck, ANewModelRepositoryIsStaleNamingIt) {
  std::string manifest = testing::ReadFile(project_ / "trainlock.toml");
  manifest.replace(manifest.find("org/tiny-model"), 14, "org/other-model");
  testing::WriteFile(project_ / "trainlock.toml", manifest);
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stale: model org/other-model@main is not pinned in the existing lock"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Requests(), requests_before_);
}

TEST_F(OfflineLockCheck, AMissingLockFailsSayingToLock) {
  fs::remove(project_ / "trainlock.lock");
  auto r = Check();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run `trainlock lock"), std::string::npos) << r.err;
  EXPECT_EQ(Requests(), requests_before_);
}

}  // namespace
}  // namespace trainlock
