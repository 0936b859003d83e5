// `trainlock lock` against a registry that requires token authentication
// (tests/servers/auth_registry.py): the anonymous bearer-token flow for a public image, and
// for a private one basic credentials from the environment or a docker config.json; without
// them exit 3, and the credentials never appear in the output. Hostile answers: an index
// whose platform digest smuggles a Containerfile instruction is exit 1, a token holding a line
// break is never sent.
#include <gtest/gtest.h>

#include <memory>

#include "base/sha256.h"
#include "project/lockfile_loader.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class AuthRegistryLock : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::HaveProgram("python3")) {
      skip_ = "python3 is not installed (ci/deps.sh installs it)";
      return;
    }
    log_dir_ = std::make_unique<testing::TempDir>();
    port_ = testing::FreeLoopbackPort();
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3",
                                 (testing::SourceDir() / "tests/servers/auth_registry.py").string(),
                                 std::to_string(port_)},
        log_dir_->path() / "registry.log");
    if (!testing::WaitForHttp(Host() + "/v2/", 30)) skip_ = "auth_registry.py did not start";
  }
  static void TearDownTestSuite() {
    server_.reset();
    log_dir_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  static std::string Host() { return "http://127.0.0.1:" + std::to_string(port_); }
  static std::string Ref(const std::string& repo) {
    return "127.0.0.1:" + std::to_string(port_) + "/" + repo + ":v1";
  }

  fs::path Project(const std::string& base) {
    return testing::UnlockedTiny(dir_.path() / "p", base);
  }

  // `trainlock lock` with no docker config of the user's, plus `env`.
  testing::RunResult Lock(const fs::path& project, std::vector<std::string> env = {}) {
    env.push_back("DOCKER_CONFIG=" + (dir_.path() / "no-docker-config").string());
    return testing::RunProgram("trainlock", {"lock", project.string(), "--timeout", "5"}, env);
  }

  testing::TempDir dir_;
  static inline std::string skip_;
  static inline std::unique_ptr<testing::TempDir> log_dir_;
  static inline std::unique_ptr<testing::BackgroundProcess> server_;
  static inline int port_ = 0;
};

TEST_F(AuthRegistryLock, APublicImageResolvesThroughAnAnonymousBearerToken) {
  fs::path project = Project(Ref("test/public"));
  auto r = Lock(project);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string base =
      LoadLockfile(testing::ReadFile(project / "trainlock.lock"), "lock", LockfileKind::kLock)
          .targets.at("cpu")
          .base;
  EXPECT_EQ(base.substr(0, base.find('@')), Ref("test/public"));
  EXPECT_EQ(base.substr(base.find('@') + 1).size(), 71u);
}

TEST_F(AuthRegistryLock, APrivateImageWithoutCredentialsIsExit3AndSaysHowToGiveThem) {
  fs::path project = Project(Ref("test/private"));
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("token service answered 401 (no credentials given)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(AuthRegistryLock, CredentialsFromTheEnvironmentAreUsedAndNeverPrinted) {
  fs::path project = Project(Ref("test/private"));
  auto r = Lock(project, {"TRAINLOCK_REGISTRY_USERNAME=alice", "TRAINLOCK_REGISTRY_PASSWORD=s3cret",
                          "TRAINLOCK_REGISTRY_HOST=127.0.0.1:" + std::to_string(port_)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("s3cret"), std::string::npos);
}

// Bound to another registry, the environment's credentials are not sent to this one.
TEST_F(AuthRegistryLock, EnvironmentCredentialsForAnotherRegistryAreNotSent) {
  fs::path project = Project(Ref("test/private"));
  auto r = Lock(project, {"TRAINLOCK_REGISTRY_USERNAME=alice", "TRAINLOCK_REGISTRY_PASSWORD=s3cret",
                          "TRAINLOCK_REGISTRY_HOST=registry.example.com"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("token service answered 401 (no credentials given)"), std::string::npos)
      << r.err;
}

TEST_F(AuthRegistryLock, EnvironmentCredentialsWithoutTheirRegistryAreRefused) {
  fs::path project = Project(Ref("test/private"));
  auto r =
      Lock(project, {"TRAINLOCK_REGISTRY_USERNAME=alice", "TRAINLOCK_REGISTRY_PASSWORD=s3cret"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is set without TRAINLOCK_REGISTRY_HOST"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find("s3cret"), std::string::npos);
}

// A token service over plain HTTP elsewhere would get the credentials, and hand back the token,
// in clear: refused before anything is sent to it.
TEST_F(AuthRegistryLock, APlainHttpTokenServiceOnAnotherHostIsRefused) {
  fs::path project = Project(Ref("test/plain-realm"));
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("names a token service that is not https: "
                       "http://token.example.invalid/token"),
            std::string::npos)
      << r.err;
}

TEST_F(AuthRegistryLock, CredentialsFromADockerConfigAreUsed) {
  fs::path project = Project(Ref("test/private"));
  const fs::path config = dir_.path() / "docker";
  // base64("alice:s3cret")
  testing::WriteFile(config / "config.json", "{\"auths\": {\"127.0.0.1:" + std::to_string(port_) +
                                                 "\": {\"auth\": \"YWxpY2U6czNjcmV0\"}}}");
  auto r = testing::RunProgram("trainlock", {"lock", project.string(), "--timeout", "5"},
                               {"DOCKER_CONFIG=" + config.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(AuthRegistryLock, AnIndexWhoseDigestCarriesAnInstructionIsExit1AndWritesNothing) {
  fs::path project = Project(Ref("test/injected-index"));
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the registry's manifest is malformed: manifests[0] (linux/amd64) has no "
                       "digest of the form sha256:<64 hex>"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(AuthRegistryLock, ATokenCarryingALineBreakIsNotSentAndIsExit3) {
  fs::path project = Project(Ref("test/newline-token"));
  auto r = Lock(project);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("token service answered without a usable token"), std::string::npos)
      << r.err;
}

TEST_F(AuthRegistryLock, WrongCredentialsAreExit3) {
  fs::path project = Project(Ref("test/private"));
  auto r = Lock(project, {"TRAINLOCK_REGISTRY_USERNAME=alice", "TRAINLOCK_REGISTRY_PASSWORD=wrong",
                          "TRAINLOCK_REGISTRY_HOST=127.0.0.1:" + std::to_string(port_)});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("token service answered 401"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find("wrong"), std::string::npos);
}

}  // namespace
}  // namespace trainlock
