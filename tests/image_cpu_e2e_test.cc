// The container path end to end on a machine without a GPU: examples/offline/image-path.sh,
// the runnable recipe docs/images.md gives, on examples/tiny (cpu target) with its [python]
// package and the sample custom op as a pinned library. The script locks it (the base image
// digest from Debian's docker-registry on loopback, the Python closure from
// tests/servers/pypi_server.py), builds its image twice by buildah to one digest and pushes it,
// runs trainlock-validate inside it by `trainlock validate --image` (ops.custom with the library
// built into the image), binds the report to the digest buildah resolved, signs it, and `trainlock
// gate` passes it against the lock; all with no TLS or storage option (loopback registries are
// plain HTTP; storage is the project's .trainlock/containers). This test then checks what the
// script left: the lock, the report, the digests. A project of another lock is refused by the
// image; a tampered or incomplete closure fails the build. The base image is made here from
// Debian packages by examples/offline/cpu_base.sh (once, cached in the build directory).
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <iostream>
#include <memory>

#include "base/sha256.h"
#include "image/image_run.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunCommand;
using testing::RunResult;

constexpr const char* kEpoch = "1764460800";  // 2025-11-30T00:00:00Z

// The sample op library as the project's prebuilt custom op, required to pass.
constexpr const char* kCustomOps = R"([[custom-ops]]
library = "ops/libtrainlock_ops.so"
ops = ["trainlock_ops::fused_rmsnorm"]
[[custom-ops.smoke]]
op = "trainlock_ops::fused_rmsnorm"
inputs = [{ shape = [8, 64], dtype = "fp32" }, { shape = [64], dtype = "fp32" }]
reference = "rmsnorm"
rtol = 1e-4
atol = 1e-5
grad-rtol = 1e-3
grad-atol = 1e-4
)";

class CpuImage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) {
      skip_ = "needs root (buildah's vfs storage and mmdebstrap's root mode)";
      return;
    }
    for (const char* tool :
         {"buildah", "docker-registry", "skopeo", "python3", "mmdebstrap", "dpkg", "flock"}) {
      if (!testing::HaveProgram(tool)) {
        skip_ = std::string(tool) + " is not installed (ci/deps.sh installs it)";
        return;
      }
    }
    if (!fs::exists(Validator()) || !fs::exists(OpsLibrary())) {
      skip_ = "trainlock-validate and the sample op library are built only with LibTorch";
      return;
    }
    dir_ = std::make_unique<testing::TempDir>();
    const auto start = std::chrono::steady_clock::now();
    RunResult base = RunCommand(
        {"bash", (testing::SourceDir() / "examples/offline/cpu_base.sh").string(),
         Validator().string(), (testing::BinDir().parent_path() / "test-images").string()});
    if (base.exit_code != 0) {
      // The tools are here, so this is a failure, not a reason to skip.
      error_ = "examples/offline/cpu_base.sh could not make the base image: " + base.err;
      return;
    }
    Timing("base image (cached after the first run)", start);
    const fs::path seeded = base.out.substr(0, base.out.find('\n'));
    // The seeded registry data, hard-linked: each test process serves its own copy.
    RunCommand({"cp", "-al", (seeded / "registry").string(), (dir_->path() / "data").string()});
    port_ = testing::FreeLoopbackPort();
    testing::WriteFile(dir_->path() / "registry.yml",
                       "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                       "    rootdirectory: " +
                           (dir_->path() / "data").string() +
                           "\nhttp:\n  addr: 127.0.0.1:" + std::to_string(port_) + "\n");
    registry_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"docker-registry", "serve",
                                 (dir_->path() / "registry.yml").string()},
        dir_->path() / "registry.log");
    index_port_ = testing::FreeLoopbackPort();
    index_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3",
                                 (testing::SourceDir() / "tests/servers/pypi_server.py").string(),
                                 std::to_string(index_port_), "--demo"},
        dir_->path() / "index.log");
    if (!testing::WaitForHttp("http://127.0.0.1:" + std::to_string(port_) + "/v2/", 30) ||
        !testing::WaitForHttp(Index() + "/", 30)) {
      error_ = "the loopback registry or index did not start";
    }
  }
  static void TearDownTestSuite() {
    registry_.reset();
    index_.reset();
    dir_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (!error_.empty()) GTEST_FAIL() << error_;
  }

  static fs::path Validator() { return testing::BinDir() / "trainlock-validate"; }
  static fs::path OpsLibrary() {
    return testing::BinDir().parent_path() / "examples/ops/libtrainlock_ops.so";
  }
  static std::string Ref(const std::string& name) {
    return "127.0.0.1:" + std::to_string(port_) + "/" + name;
  }
  static std::string Index() {
    return "http://127.0.0.1:" + std::to_string(index_port_) + "/simple";
  }
  static void Timing(const std::string& what, std::chrono::steady_clock::time_point start) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ timing   ] " << what << ": " << static_cast<int>(s) << " s" << std::endl;
  }

  // examples/tiny on the test base, its [python] from `index`, with the sample op required.
  fs::path Project(const std::string& name, const std::string& index) {
    const fs::path p = testing::UnlockedTiny(
        dir_->path() / name, Ref("trainlock/bookworm-validator:1"), kCustomOps, index);
    fs::create_directories(p / "ops");
    fs::copy_file(OpsLibrary(), p / "ops/libtrainlock_ops.so");
    std::string manifest = testing::ReadFile(p / "trainlock.toml");
    manifest.replace(manifest.find("required = ["), 12, "required = [\"ops.custom\", ");
    testing::WriteFile(p / "trainlock.toml", manifest);
    return p;
  }

  static Lockfile Lock(const fs::path& project) {
    return LoadLockfile(testing::ReadFile(project / "trainlock.lock"), "lock", LockfileKind::kLock);
  }

  static std::vector<std::string> BuildArgs(const fs::path& project, const std::string& push) {
    return {"image",
            "build",
            project.string(),
            "--target",
            "cpu",
            "--container-engine",
            "buildah",
            "--push",
            Ref(push),
            "--no-tls-verify",
            "--source-date-epoch",
            kEpoch,
            "--storage-root",
            (dir_->path() / "storage").string()};
  }

  static inline std::string skip_;
  static inline std::string error_;
  static inline std::unique_ptr<testing::TempDir> dir_;
  static inline std::unique_ptr<testing::BackgroundProcess> registry_;
  static inline std::unique_ptr<testing::BackgroundProcess> index_;
  static inline int port_ = 0;
  static inline int index_port_ = 0;
};

TEST(ValidateInImageSummary, NamesTheReportsWhereTheHostWritesThem) {
  EXPECT_EQ(WithHostReportPaths("verdict: pass (...) in 4 s -> /trainlock/out/report.json\n",
                                "/home/me/p/r.out"),
            "verdict: pass (...) in 4 s -> /home/me/p/r.out\n");
  EXPECT_EQ(WithHostReportPaths("-> /trainlock/out/report.rank-1.json", "runs/report.json"),
            "-> runs/report.rank-1.json");
  EXPECT_EQ(WithHostReportPaths("no path here", "r.json"), "no path here");
}

// The value of the `NAME: VALUE` line the script printed.
std::string Printed(const std::string& out, const std::string& name) {
  const size_t at = out.find("\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t from = at + name.size() + 3;
  return out.substr(from, out.find('\n', from) - from);
}

TEST_F(CpuImage, TheTinyExampleIsLockedBuiltReproduciblyValidatedInsideAndGated) {
  const fs::path project = Project("tiny", Index());
  const fs::path work = dir_->path() / "offline";
  auto start = std::chrono::steady_clock::now();
  RunResult script = RunCommand(
      {"bash", (testing::SourceDir() / "examples/offline/image-path.sh").string(), "--project",
       project.string(), "--work", work.string(), "--bin", testing::BinDir().string(), "--cache",
       (testing::BinDir().parent_path() / "test-images").string()});
  ASSERT_EQ(script.exit_code, 0) << script.out << script.err;
  Timing("examples/offline/image-path.sh", start);
  // Its own registry, stopped now; the image stays in the project's storage.
  const std::string registry = Printed(script.out, "registry");
  ASSERT_EQ(registry.rfind("127.0.0.1:", 0), 0u) << script.out;
  const std::string ref = registry + "/trainlock/tiny:1";
  EXPECT_TRUE(fs::is_directory(project / ".trainlock/containers/root")) << script.out;

  const Lockfile locked = Lock(project);
  const Target& cpu = locked.targets.at("cpu");
  // The test's registry serves the same seeded base: the same digest.
  RunResult skopeo =
      RunCommand({"skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}",
                  "docker://" + Ref("trainlock/bookworm-validator:1")});
  EXPECT_EQ(cpu.base, registry + "/trainlock/bookworm-validator:1@" +
                          skopeo.out.substr(0, skopeo.out.find('\n')));
  // The closure is the one examples/tiny/trainlock.lock pins: the demo wheels are reproducible.
  const Lockfile committed =
      LoadLockfile(testing::ReadFile(testing::SourceDir() / "examples/tiny/trainlock.lock"), "lock",
                   LockfileKind::kLock);
  ASSERT_TRUE(cpu.wheels && committed.targets.at("cpu").wheels);
  ASSERT_EQ(cpu.wheels->size(), 2u);
  for (size_t i = 0; i < cpu.wheels->size(); ++i) {
    const PythonWheel& have = (*cpu.wheels)[i];
    const PythonWheel& want = (*committed.targets.at("cpu").wheels)[i];
    EXPECT_EQ(have.file + " " + have.sha256, want.file + " " + want.sha256);
  }
  EXPECT_EQ(locked.custom_ops.at(0).sha256, Sha256FileHex(OpsLibrary()));

  // The same lock generates the same files.
  for (const char* out : {"gen-1", "gen-2"}) {
    ASSERT_EQ(testing::RunTrainlock({"image", "generate", project.string(), "--target", "cpu",
                                     "--source-date-epoch", kEpoch, "--out",
                                     (dir_->path() / out).string()})
                  .exit_code,
              0);
  }
  for (const char* file : {"Containerfile", "requirements.txt", "image.json"}) {
    EXPECT_EQ(testing::ReadFile(dir_->path() / "gen-1" / file),
              testing::ReadFile(dir_->path() / "gen-2" / file))
        << file;
  }

  EXPECT_NE(script.out.find("reproducible: a second build gave the same digest"), std::string::npos)
      << script.out;
  // The digest skopeo read back from the registry is the one the lock records.
  const BuiltImage image = Lock(project).images.at("cpu");
  EXPECT_EQ(image.ref, ref);
  EXPECT_EQ(image.digest, Printed(script.out, "pushed")) << script.out;

  const fs::path report_path = work / "report.json";
  // The summary names the report where the host has it, not where the container wrote it.
  EXPECT_NE(script.out.find("-> " + report_path.string() + "\n"), std::string::npos) << script.out;
  EXPECT_EQ(script.out.find("/trainlock/out"), std::string::npos) << script.out;
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(report_path));
  EXPECT_EQ(report["image"]["digest"], image.digest);
  EXPECT_EQ(report["image"]["digest_source"], "container-tool");
  EXPECT_EQ(report["image"]["ref"], ref);
  EXPECT_EQ(report["validator"]["build"], "cpu");
  EXPECT_EQ(report["verdict"], "pass");
  for (const auto& check : report["checks"]) {
    // The image's venv holds exactly the lock's closure (and the venv's own bootstrap).
    if (check["id"] == "env.packages") {
      EXPECT_EQ(check["status"], "pass") << check.dump(2);
    }
    if (check["id"] == "ops.custom") {
      EXPECT_EQ(check["status"], "pass") << check.dump(2);
      EXPECT_EQ(check["metrics"]["libraries"][0]["path"], "/etc/trainlock/ops/libtrainlock_ops.so")
          << check.dump(2);
    }
  }
  RunResult gate = testing::RunTrainlock({"gate", report_path.string(), "--lock", project.string(),
                                          "--key", (work / "key.pub").string()});
  EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;

  // Another lock (another seed) in the same image: the image's own lock refuses it.
  const fs::path other = Project("other", Index());
  std::string manifest = testing::ReadFile(other / "trainlock.toml");
  manifest.replace(manifest.find("seed = 1234"), 11, "seed = 4321");
  testing::WriteFile(other / "trainlock.toml", manifest);
  ASSERT_EQ(testing::RunTrainlock({"lock", other.string()}).exit_code, 0);
  // The image as the script left it in the project's storage (its registry is gone).
  RunResult refused = testing::RunTrainlock({"validate", other.string(), "--image", ref,
                                             "--container-engine", "buildah", "--storage-root",
                                             (project / ".trainlock/containers").string(), "--out",
                                             (dir_->path() / "other.json").string()});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  const std::string image_lock = testing::RunTrainlock({"hash", project.string(), "--build"}).out;
  EXPECT_NE(refused.err.find("the image's lock (/etc/trainlock/trainlock.lock, lock-sha256 " +
                             image_lock.substr(0, 64) + ")"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(
      refused.err.find("is not the project's (/trainlock/project/trainlock.lock, lock-sha256"),
      std::string::npos)
      << refused.err;

  // Later, in a new shell without SOURCE_DATE_EPOCH: the script serves its registry and index
  // again where the lock names them, and `image build --check` rebuilds from the lock alone (its
  // recorded epoch and validator) to the digest it records.
  start = std::chrono::steady_clock::now();
  RunResult recheck =
      RunCommand({"env", "-u", "SOURCE_DATE_EPOCH", "bash",
                  (testing::SourceDir() / "examples/offline/image-path.sh").string(), "--recheck",
                  work.string(), "--bin", testing::BinDir().string()});
  EXPECT_EQ(recheck.exit_code, 0) << recheck.out << recheck.err;
  EXPECT_NE(recheck.out.find("built with buildah: " + image.digest), std::string::npos)
      << recheck.out << recheck.err;
  Timing("examples/offline/image-path.sh --recheck", start);

  // A lock that records another image (here the base the build starts from): the rebuild's
  // digest differs, and --check names what differs, the configuration first, then the layers.
  std::string lock_text = testing::ReadFile(project / "trainlock.lock");
  const size_t images = lock_text.find("[images.cpu]");
  ASSERT_NE(images, std::string::npos) << lock_text;
  const std::string base_ref = cpu.base.substr(0, cpu.base.find('@'));
  const std::string base_digest = cpu.base.substr(cpu.base.find('@') + 1);
  for (const auto& [key, value] :
       {std::pair{std::string("ref = '"), base_ref}, {"digest = '", base_digest}}) {
    const size_t at = lock_text.find(key, images);
    ASSERT_NE(at, std::string::npos) << lock_text;
    const size_t end = lock_text.find('\'', at + key.size());
    lock_text.replace(at + key.size(), end - at - key.size(), value);
  }
  testing::WriteFile(project / "trainlock.lock", lock_text);
  start = std::chrono::steady_clock::now();
  RunResult differs =
      RunCommand({"env", "-u", "SOURCE_DATE_EPOCH", "bash",
                  (testing::SourceDir() / "examples/offline/image-path.sh").string(), "--recheck",
                  work.string(), "--bin", testing::BinDir().string()});
  EXPECT_EQ(differs.exit_code, 1) << differs.out << differs.err;
  EXPECT_NE(differs.err.find("the lock records " + base_digest), std::string::npos) << differs.err;
  EXPECT_NE(differs.err.find("what differs from the recorded image (recorded -> rebuilt):"),
            std::string::npos)
      << differs.err;
  EXPECT_NE(differs.err.find("image.json config."), std::string::npos) << differs.err;
  EXPECT_NE(differs.err.find("rebuilt"), std::string::npos) << differs.err;
  Timing("image build --check against another recorded image", start);

  // What the project's .trainlock holds, and its container storage freed through buildah.
  RunResult listed = testing::RunTrainlock({"image", "storage", project.string()});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("  containers "), std::string::npos) << listed.out;
  RunResult freed = testing::RunTrainlock({"image", "storage", project.string(), "--free"});
  EXPECT_EQ(freed.exit_code, 0) << freed.out << freed.err;
  EXPECT_TRUE(freed.out.starts_with("freed ")) << freed.out;
  EXPECT_EQ(freed.out.find("freed 0 "), std::string::npos) << freed.out;
  EXPECT_FALSE(fs::exists(project / ".trainlock/containers")) << freed.out;
}

TEST_F(CpuImage, ATamperedOrIncompleteClosureFailsTheBuild) {
  // The wheel a second index serves is not the bytes its pages (and so the lock) name.
  const int tamper_port = testing::FreeLoopbackPort();
  testing::BackgroundProcess tampering(
      {"python3", (testing::SourceDir() / "tests/servers/pypi_server.py").string(),
       std::to_string(tamper_port), "--demo", "--tamper",
       "trainlock_demo_util-1.2.0-py3-none-any.whl"},
      dir_->path() / "tamper.log");
  const std::string tamper_index = "http://127.0.0.1:" + std::to_string(tamper_port) + "/simple";
  ASSERT_TRUE(testing::WaitForHttp(tamper_index + "/", 30));
  const fs::path tampered = Project("tampered", tamper_index);
  ASSERT_EQ(testing::RunTrainlock({"lock", tampered.string()}).exit_code, 0);
  auto start = std::chrono::steady_clock::now();
  RunResult r = testing::RunTrainlock(BuildArgs(tampered, "trainlock/tampered:1"));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("DO NOT MATCH THE HASHES"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trainlock-demo-util==1.2.0"), std::string::npos) << r.err;
  Timing("a build refusing a tampered wheel", start);

  // A lock whose closure lost a dependency: pip check names it.
  const fs::path incomplete = Project("incomplete", Index());
  ASSERT_EQ(testing::RunTrainlock({"lock", incomplete.string()}).exit_code, 0);
  std::string text = testing::ReadFile(incomplete / "trainlock.lock");
  const size_t util = text.find("[[targets.cpu.wheels]]", text.find("trainlock_demo_app"));
  ASSERT_NE(util, std::string::npos) << text;
  text.erase(util, text.find("version = '1.2.0'", util) + 18 - util);
  testing::WriteFile(incomplete / "trainlock.lock", text);
  start = std::chrono::steady_clock::now();
  r = testing::RunTrainlock(BuildArgs(incomplete, "trainlock/incomplete:1"));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(
      r.err.find("trainlock-demo-app 1.0.0 requires trainlock-demo-util, which is not installed"),
      std::string::npos)
      << r.err;
  Timing("a build refusing an incomplete closure", start);
}

// A missing tool is named with the Debian packages this path needs, not the whole suite's
// (ci/deps.sh would install Chromium, hipcc and Node for it): here skopeo and flock are not on
// PATH, the other tools are stand-ins.
TEST(ImagePathScript, AMissingToolIsNamedWithThisPathsPackagesOnly) {
  testing::TempDir dir;
  for (const char* present : {"buildah", "docker-registry", "python3", "mmdebstrap", "dpkg"})
    fs::create_symlink("/bin/true", dir.path() / present);
  for (const char* shell_tool : {"bash", "dirname"}) {
    const RunResult which = RunCommand({"sh", "-c", std::string("command -v ") + shell_tool});
    ASSERT_EQ(which.exit_code, 0) << shell_tool;
    fs::create_symlink(which.out.substr(0, which.out.find('\n')), dir.path() / shell_tool);
  }
  const std::string script = (testing::SourceDir() / "examples/offline/image-path.sh").string();
  const RunResult r =
      RunCommand({"env", "PATH=" + dir.path().string(), (dir.path() / "bash").string(), script});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.err, script +
                       ": not installed: skopeo flock; install them (this path's tools only): "
                       "apt-get install skopeo util-linux\n");
}

}  // namespace
}  // namespace trainlock
