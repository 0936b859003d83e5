// `trainlock lock` against a real OCI registry: Debian's docker-registry on a loopback port,
// holding images the suite builds with buildah. Tags resolve to the digests skopeo reports,
// an index to both platform manifests; a tampering proxy, a missing tag, a dead registry and
// --offline each behave as documented, and a refused lock writes nothing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <memory>
#include <optional>

#include "project/lockfile_loader.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;
using testing::RunTrainlock;

class RegistryLock : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* tool : {"docker-registry", "buildah", "skopeo", "python3"}) {
      if (!testing::HaveProgram(tool)) {
        skip_ = std::string(tool) + " is not installed (ci/deps.sh installs it)";
        return;
      }
    }
    dir_ = std::make_unique<testing::TempDir>();
    port_ = testing::FreeLoopbackPort();
    const fs::path config = dir_->path() / "registry.yml";
    testing::WriteFile(config,
                       "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                       "    rootdirectory: " +
                           (dir_->path() / "data").string() +
                           "\nhttp:\n  addr: 127.0.0.1:" + std::to_string(port_) + "\n");
    if (!StartRegistry()) {
      skip_ = "docker-registry did not start: " + testing::ReadFile(dir_->path() / "registry.log");
      return;
    }
    PushImage("amd64", "one", "test/single:v1");
    if (testing::HaveProgram("busybox")) PushBusybox("test/busybox:v1");
    PushImage("arm64", "one", "");
    PushIndex("test/multi:v1");
  }
  static void TearDownTestSuite() {
    registry_.reset();
    dir_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static bool StartRegistry() {
    registry_.reset();
    registry_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"docker-registry", "serve",
                                 (dir_->path() / "registry.yml").string()},
        dir_->path() / "registry.log");
    return testing::WaitForHttp(Host() + "/v2/", 30);
  }

  static std::string Host() { return "http://127.0.0.1:" + std::to_string(port_); }
  static std::string Ref(const std::string& name) {
    return "127.0.0.1:" + std::to_string(port_) + "/" + name;
  }

  static testing::RunResult Buildah(std::vector<std::string> args) {
    std::vector<std::string> argv = {"buildah",
                                     "--root",
                                     (dir_->path() / "storage").string(),
                                     "--runroot",
                                     (dir_->path() / "run").string(),
                                     "--storage-driver",
                                     "vfs"};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::RunResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 0) << "buildah " << args[0] << ": " << r.err;
    return r;
  }

  // A one-file scratch image for `arch`, committed as local image `arch-content`, pushed
  // to `name` when given.
  static void PushImage(const std::string& arch, const std::string& content,
                        const std::string& name) {
    const fs::path file = dir_->path() / ("content-" + content);
    testing::WriteFile(file, content + "\n");
    std::string c = Buildah({"from", "scratch"}).out;
    c.erase(c.find_last_not_of("\n") + 1);
    Buildah({"copy", c, file.string(), "/content.txt"});
    Buildah({"config", "--arch", arch, "--os", "linux", c});
    Buildah({"commit", "--timestamp", "0", c, arch + "-" + content});
    if (!name.empty()) {
      Buildah({"push", "--tls-verify=false", arch + "-" + content, "docker://" + Ref(name)});
    }
  }

  // A static busybox as the whole root file system: a base that can RUN a shell.
  static void PushBusybox(const std::string& name) {
    const fs::path root = dir_->path() / "busybox-root";
    fs::create_directories(root / "bin");
    auto which = RunCommand({"sh", "-c", "command -v busybox"});
    fs::copy_file(which.out.substr(0, which.out.find('\n')), root / "bin" / "busybox");
    std::string c = Buildah({"from", "scratch"}).out;
    c.erase(c.find_last_not_of("\n") + 1);
    Buildah({"copy", c, root.string(), "/"});
    Buildah({"config", "--arch", "amd64", "--os", "linux", c});
    Buildah({"commit", "--timestamp", "0", c, "busybox-base"});
    Buildah({"push", "--tls-verify=false", "busybox-base", "docker://" + Ref(name)});
  }

  static void PushIndex(const std::string& name) {
    Buildah({"manifest", "create", "index-" + std::to_string(port_)});
    for (const char* arch : {"amd64", "arm64"}) {
      Buildah({"manifest", "add", "index-" + std::to_string(port_),
               "containers-storage:localhost/" + std::string(arch) + "-one"});
    }
    Buildah({"manifest", "push", "--all", "--tls-verify=false", "index-" + std::to_string(port_),
             "docker://" + Ref(name)});
  }

  static std::string SkopeoDigest(const std::string& name) {
    auto r = RunCommand({"skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}",
                         "docker://" + Ref(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  static nlohmann::json SkopeoRaw(const std::string& name) {
    auto r =
        RunCommand({"skopeo", "inspect", "--tls-verify=false", "--raw", "docker://" + Ref(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  }

  // examples/tiny with its cpu target's base set to `base`.
  fs::path Project(const std::string& base) {
    return testing::UnlockedTiny(project_dir_.path() / "p", base);
  }

  static Lockfile Lock(const fs::path& project) {
    return LoadLockfile(testing::ReadFile(project / "trainlock.lock"), "lock", LockfileKind::kLock);
  }

  testing::TempDir project_dir_;
  static inline std::string skip_;
  static inline std::unique_ptr<testing::TempDir> dir_;
  static inline std::unique_ptr<testing::BackgroundProcess> registry_;
  static inline int port_ = 0;
};

TEST_F(RegistryLock, ResolvesATagToTheDigestSkopeoReports) {
  fs::path project = Project(Ref("test/single:v1"));
  auto r = RunTrainlock({"lock", project.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lock(project).targets.at("cpu").base,
            Ref("test/single:v1") + "@" + SkopeoDigest("test/single:v1"));
}

TEST_F(RegistryLock, ResolvesAnIndexToItsDigestAndBothPlatformManifests) {
  fs::path project = Project(Ref("test/multi:v1"));
  auto r = RunTrainlock({"lock", project.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Lockfile lock = Lock(project);
  const Target& cpu = lock.targets.at("cpu");
  EXPECT_EQ(cpu.base, Ref("test/multi:v1") + "@" + SkopeoDigest("test/multi:v1"));
  std::map<std::string, std::string> want;
  const nlohmann::json index = SkopeoRaw("test/multi:v1");
  for (const auto& m : index["manifests"]) {
    want[m["platform"]["os"].get<std::string>() + "/" +
         m["platform"]["architecture"].get<std::string>()] = m["digest"];
  }
  EXPECT_EQ(want.size(), 2u);
  EXPECT_EQ(cpu.base_platforms, want);
}

TEST_F(RegistryLock, TheSameManifestGivesTheSameLockBytes) {
  fs::path project = Project(Ref("test/multi:v1"));
  ASSERT_EQ(RunTrainlock({"lock", project.string()}).exit_code, 0);
  const std::string first = testing::ReadFile(project / "trainlock.lock");
  ASSERT_EQ(RunTrainlock({"lock", project.string()}).exit_code, 0);
  EXPECT_EQ(testing::ReadFile(project / "trainlock.lock"), first);
}

TEST_F(RegistryLock, CheckUpstreamPassesForAFreshLockAndFailsOnceTheTagMoves) {
  PushImage("amd64", "before", "test/moving:v1");
  fs::path project = Project(Ref("test/moving:v1"));
  ASSERT_EQ(RunTrainlock({"lock", project.string()}).exit_code, 0);
  EXPECT_EQ(RunTrainlock({"lock", project.string(), "--check"}).exit_code, 0);
  PushImage("amd64", "after", "test/moving:v1");
  // Offline (the drift gate) the lock still pins what the manifest says; --upstream asks the
  // registry and sees the tag moved.
  EXPECT_EQ(RunTrainlock({"lock", project.string(), "--check"}).exit_code, 0);
  auto r = RunTrainlock({"lock", project.string(), "--check", "--upstream"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stale"), std::string::npos) << r.err;
}

TEST_F(RegistryLock, ATamperedManifestIsRefusedWithExit1AndNothingIsWritten) {
  const int proxy_port = testing::FreeLoopbackPort();
  testing::BackgroundProcess proxy(
      {"python3", (testing::SourceDir() / "tests/servers/tamper_proxy.py").string(),
       std::to_string(proxy_port), std::to_string(port_)},
      project_dir_.path() / "proxy.log");
  ASSERT_TRUE(testing::WaitForHttp("http://127.0.0.1:" + std::to_string(proxy_port) + "/v2/", 30));
  fs::path project = Project("127.0.0.1:" + std::to_string(proxy_port) + "/test/single:v1");
  auto r = RunTrainlock({"lock", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("refusing tampered or corrupt content"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing written"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(RegistryLock, AnUnknownTagIsExit3NamingThe404) {
  fs::path project = Project(Ref("test/single:no-such-tag"));
  auto r = RunTrainlock({"lock", project.string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("404"), std::string::npos) << r.err;
}

TEST_F(RegistryLock, ARegistryThatIsDownIsExit3) {
  fs::path project =
      Project("127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) + "/test/single:v1");
  auto r = RunTrainlock({"lock", project.string(), "--timeout", "2"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("registry unreachable"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project / "trainlock.lock"));
}

TEST_F(RegistryLock, OfflineReusesTheLocksPinsAndRefusesWhatIsNotPinned) {
  fs::path project = Project(Ref("test/single:v1"));
  auto offline = RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(offline.exit_code, 1);
  EXPECT_NE(offline.err.find("--offline"), std::string::npos) << offline.err;
  ASSERT_EQ(RunTrainlock({"lock", project.string()}).exit_code, 0);
  const std::string locked = testing::ReadFile(project / "trainlock.lock");
  registry_.reset();  // the registry is gone: offline must not need it
  auto again = RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(testing::ReadFile(project / "trainlock.lock"), locked);
  ASSERT_TRUE(StartRegistry());  // for the tests after this one in the same process
}

// examples/tiny on the busybox base, locked, with a Containerfile running `run` in it.
class ImageBuild : public RegistryLock {
 protected:
  void SetUp() override {
    RegistryLock::SetUp();
    if (!testing::HaveProgram("busybox"))
      GTEST_SKIP() << "busybox is not installed (ci/deps.sh installs busybox-static)";
  }
  fs::path BuildProject(const std::string& run) {
    fs::path project = Project(Ref("test/busybox:v1"));
    EXPECT_EQ(RunTrainlock({"lock", project.string()}).exit_code, 0);
    testing::WriteFile(project / "Containerfile",
                       "FROM " + Lock(project).targets.at("cpu").base +
                           "\n"
                           "COPY trainlock.lock trainlock.toml /etc/trainlock/\n"
                           "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"" +
                           run + "\"]\n");
    return project;
  }
  testing::RunResult Build(const fs::path& project, const std::string& push) {
    return RunTrainlock(
        {"image", "build", project.string(), "--target", "cpu", "--container-engine", "buildah",
         "--containerfile", (project / "Containerfile").string(), "--push", Ref(push),
         "--verify-reproducible", "--no-tls-verify", "--source-date-epoch", "1764460800",
         "--storage-root", (project_dir_.path() / "storage").string()});
  }
  // `image build --check` in storage of its own (nothing of an earlier build is there).
  testing::RunResult Check(const fs::path& project, const std::string& storage) {
    return RunTrainlock({"image", "build", project.string(), "--target", "cpu",
                         "--container-engine", "buildah", "--containerfile",
                         (project / "Containerfile").string(), "--check", "--no-tls-verify",
                         "--source-date-epoch", "1764460800", "--storage-root",
                         (project_dir_.path() / storage).string()});
  }
  // What a commit of the project holds (no .trainlock/), as another machine checks it out.
  fs::path Clone(const fs::path& project) {
    const fs::path clone = project_dir_.path() / "clone";
    fs::create_directories(clone);
    for (const char* part : {"trainlock.toml", "trainlock.lock", "Containerfile", "configs"})
      fs::copy(project / part, clone / part, fs::copy_options::recursive);
    return clone;
  }
};

// The build reads the staged context, the base by digest and SOURCE_DATE_EPOCH, never the
// clock: the rebuild runs seconds later, in a fresh storage directory, from a copy of the
// committed lock (which now records the push), and gives the digest that lock records.
TEST_F(ImageBuild, ARebuildFromTheCommittedLockInFreshStorageGivesTheDigestItRecords) {
  fs::path project =
      BuildProject("/bin/busybox sha256sum /etc/trainlock/trainlock.lock > /lock.sha256");
  ASSERT_EQ(Build(project, "test/rebuilt:v1").exit_code, 0);
  const std::string recorded = Lock(project).images.at("cpu").digest;
  ::sleep(2);  // another second of the wall clock: a time that leaked in would change the digest
  const fs::path clone = Clone(project);
  auto r = Check(clone, "fresh-storage");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built with buildah: " + recorded), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check: the rebuild gives the digest the lock records in [images.cpu]"),
            std::string::npos)
      << r.out;
}

TEST_F(ImageBuild, CheckIsExit1NamingBothDigestsWhenAFileThatGoesIntoTheImageChanged) {
  fs::path project = BuildProject("/bin/busybox true");
  ASSERT_EQ(Build(project, "test/changed:v1").exit_code, 0);
  const std::string recorded = Lock(project).images.at("cpu").digest;
  testing::WriteFile(project / "trainlock.toml",
                     testing::ReadFile(project / "trainlock.toml") + "# changed\n");
  auto r = Check(project, "check-storage");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the rebuild of [images.cpu] gives sha256:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", the lock records " + recorded), std::string::npos) << r.err;
}

// The lock records what a rebuild needs besides itself: --check in a new shell, without
// SOURCE_DATE_EPOCH, rebuilds with the recorded one and gets the recorded digest.
TEST_F(ImageBuild, CheckNeedsNoSourceDateEpochTheLockRecordsTheBuildsOwn) {
  fs::path project = BuildProject("/bin/busybox true");
  ASSERT_EQ(Build(project, "test/epoch:v1").exit_code, 0);
  const BuiltImage recorded = Lock(project).images.at("cpu");
  EXPECT_EQ(recorded.source_date_epoch, std::optional<int64_t>(1764460800));
  auto r = testing::RunCommand(
      {"env", "-u", "SOURCE_DATE_EPOCH", (testing::BinDir() / "trainlock").string(), "image",
       "build", project.string(), "--target", "cpu", "--container-engine", "buildah",
       "--containerfile", (project / "Containerfile").string(), "--check", "--no-tls-verify",
       "--storage-root", (project_dir_.path() / "epoch-storage").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built with buildah: " + recorded.digest), std::string::npos) << r.out;
}

TEST_F(ImageBuild, CheckWithAnotherSourceDateEpochThanTheRecordedIsRefusedBeforeBuilding) {
  fs::path project = BuildProject("/bin/busybox true");
  ASSERT_EQ(Build(project, "test/other-epoch:v1").exit_code, 0);
  auto r =
      RunTrainlock({"image", "build", project.string(), "--target", "cpu", "--container-engine",
                    "buildah", "--containerfile", (project / "Containerfile").string(), "--check",
                    "--no-tls-verify", "--source-date-epoch", "1", "--storage-root",
                    (project_dir_.path() / "unused-storage").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("SOURCE_DATE_EPOCH is 1 but [images.cpu] was built with 1764460800"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project_dir_.path() / "unused-storage"));
}

// A lock that no longer follows from the project records the image of another lock: said
// before anything is built, naming the lock.
TEST_F(ImageBuild, CheckOfAStaleLockIsRefusedBeforeBuilding) {
  fs::path project = BuildProject("/bin/busybox true");
  ASSERT_EQ(Build(project, "test/stale:v1").exit_code, 0);
  const fs::path config = project / Lock(project).config;
  testing::WriteFile(config, testing::ReadFile(config) + "# changed since the lock\n");
  auto r = Check(project, "stale-storage");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("trainlock.lock: stale"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[images.cpu] records the image of the lock as it was"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project_dir_.path() / "stale-storage"));
}

// The validator a cpu image copies is part of its bytes: one other than the recorded build's is
// named before anything is built.
TEST_F(ImageBuild, CheckWithAnotherValidatorThanTheRecordedIsRefusedBeforeBuilding) {
  fs::path project = BuildProject("/bin/busybox true");
  testing::WriteFile(project / "trainlock.lock",
                     testing::ReadFile(project / "trainlock.lock") +
                         "\n[images.cpu]\nref = \"x\"\ndigest = \"sha256:" + std::string(64, 'a') +
                         "\"\nsource-date-epoch = 1764460800\nvalidator-sha256 = \"" +
                         std::string(64, 'b') + "\"\n");
  auto r = RunTrainlock({"image", "build", project.string(), "--target", "cpu",
                         "--container-engine", "buildah", "--validator",
                         (project / "Containerfile").string(), "--check", "--no-tls-verify",
                         "--storage-root", (project_dir_.path() / "validator-storage").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("[images.cpu] was built with trainlock-validate sha256 bbbbbbbbbbbbbbbb"
                       "..., this build stages "),
            std::string::npos)
      << r.err;
}

TEST_F(ImageBuild, CheckIsExit2WhenTheLockRecordsNoDigestForTheTarget) {
  fs::path project = BuildProject("/bin/busybox true");
  auto r = Check(project, "unused-storage");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("[images.cpu] records no digest to check against"), std::string::npos)
      << r.err;
}

// The image's copy of the lock and its image.json are the same whether or not the lock
// records a push and whatever name it is pushed as (the build fails on the busybox base,
// which has no apt; the context it staged is what is compared).
TEST_F(ImageBuild, NeitherThePushedRefNorTheLocksImagesEnterTheBuildContext) {
  fs::path project = BuildProject("/bin/busybox true");
  auto stage = [&](const std::string& push) {
    RunTrainlock({"image", "build", project.string(), "--target", "cpu", "--container-engine",
                  "buildah", "--validator", (project / "Containerfile").string(), "--push",
                  Ref(push), "--no-tls-verify", "--source-date-epoch", "1764460800",
                  "--storage-root", (project_dir_.path() / "storage").string()});
    const fs::path context = project / ".trainlock" / "build-cpu";
    return testing::ReadFile(context / "trainlock.lock") +
           testing::ReadFile(context / "image.json");
  };
  const std::string before = stage("test/one:v1");
  EXPECT_EQ(before.find("[images"), std::string::npos) << before;
  EXPECT_NE(before.find("\"ref\": \"\""), std::string::npos) << before;
  ASSERT_EQ(Build(project, "test/recorded:v1").exit_code, 0);  // the lock now records a push
  EXPECT_EQ(stage("test/two:v2"), before);
}

TEST_F(ImageBuild, TwoBuildsGiveOneDigestWhichIsPushedAndRecordedInTheLock) {
  fs::path project =
      BuildProject("/bin/busybox sha256sum /etc/trainlock/trainlock.lock > /lock.sha256");
  const std::string identity = RunTrainlock({"hash", project.string()}).out;
  auto r = Build(project, "test/built:v1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("reproducible: a second build gave the same digest"), std::string::npos)
      << r.out;
  const Lockfile lock = Lock(project);
  ASSERT_TRUE(lock.images.count("cpu"));
  EXPECT_EQ(lock.images.at("cpu").ref, Ref("test/built:v1"));
  EXPECT_EQ(lock.images.at("cpu").digest, SkopeoDigest("test/built:v1"));
  // [images] is part of lock-sha256, not of the build identity the image carries.
  EXPECT_NE(RunTrainlock({"hash", project.string()}).out, identity);
  EXPECT_EQ(RunTrainlock({"hash", project.string(), "--build"}).out, identity);
}

// The OCI layout a --check rebuild writes names its image in index.json
// (org.opencontainers.image.ref.name): the lock's build identity, `trainlock hash --build`.
TEST_F(ImageBuild, TheLayoutOfACheckNamesItsImageByTheLocksBuildIdentity) {
  fs::path project = BuildProject("/bin/busybox true");
  ASSERT_EQ(Build(project, "test/named:v1").exit_code, 0);
  auto r = Check(project, "named-storage");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string identity = RunTrainlock({"hash", project.string(), "--build"}).out;
  identity.erase(identity.find_last_not_of('\n') + 1);
  const nlohmann::json index = nlohmann::json::parse(
      testing::ReadFile(project / ".trainlock/build-cpu-out/image-1/index.json"));
  ASSERT_EQ(index["manifests"].size(), 1u) << index.dump();
  EXPECT_EQ(index["manifests"][0]["annotations"].value("org.opencontainers.image.ref.name", ""),
            identity)
      << index.dump();
  EXPECT_EQ(index["manifests"][0]["digest"], Lock(project).images.at("cpu").digest);
}

// umoci lists the layout's image by that name, and skopeo reads it as oci:DIR:NAME.
TEST_F(ImageBuild, UmociAndSkopeoAddressTheWrittenLayoutByItsName) {
  if (!testing::HaveProgram("umoci")) GTEST_SKIP() << "umoci is not installed (ci/deps.sh)";
  fs::path project = BuildProject("/bin/busybox true");
  auto built =
      RunTrainlock({"image", "build", project.string(), "--target", "cpu", "--container-engine",
                    "buildah", "--containerfile", (project / "Containerfile").string(),
                    "--no-tls-verify", "--source-date-epoch", "1764460800", "--storage-root",
                    (project_dir_.path() / "layout-storage").string()});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  std::string identity = RunTrainlock({"hash", project.string(), "--build"}).out;
  identity.erase(identity.find_last_not_of('\n') + 1);
  const fs::path layout = project / ".trainlock/build-cpu-out/image-1";
  auto listed = RunCommand({"umoci", "ls", "--layout", layout.string()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out, identity + "\n") << listed.err;
  auto inspected = RunCommand(
      {"skopeo", "inspect", "--format", "{{.Digest}}", "oci:" + layout.string() + ":" + identity});
  EXPECT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(built.out.find("built with buildah: " + inspected.out.substr(0, 71)), std::string::npos)
      << built.out << inspected.out;
}

TEST_F(ImageBuild, ABuildThatIsNotReproducibleIsExit1WithBothDigests) {
  fs::path project = BuildProject("/bin/busybox head -c 16 /dev/urandom > /random");
  auto r = Build(project, "test/random:v1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("not reproducible: the first build is sha256:"), std::string::npos) << r.err;
  EXPECT_FALSE(Lock(project).images.count("cpu"));
}

}  // namespace
}  // namespace trainlock
