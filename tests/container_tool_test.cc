// How `trainlock image build` and `validate --image` choose and drive a container tool, with
// fake `buildah`, `podman` and `docker` scripts on a PATH the test controls (nothing else is
// on it): a tool that cannot work (not installed, docker without a daemon or without
// buildx) is refused before anything is built, with why and how to install one; a failing
// build is shown whole under -v; loopback registries are plain HTTP without --no-tls-verify;
// buildah/podman storage is the project's .trainlock/containers unless told otherwise; an
// engine command that never returns is stopped at its limit (TRAINLOCK_ENGINE_TIMEOUT), and a
// missing or malformed digest is an engine error (exit 3), never a success or a difference.
// Each fake records its argv, one call a line, in the test's engine.log.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/refs.h"
#include "base/subprocess.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunResult;

constexpr const char* kDigest =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";

// A buildah or podman that works: it records its argv, builds nothing, writes a digest for a
// push, and has no image to inspect and none to pull.
std::string WorkingEngine() {
  return std::string(R"sh(prev=
for a in "$@"; do
  [ "$prev" = --digestfile ] && echo )sh") +
         kDigest + R"sh( > "$a"
  prev=$a
done
case " $* " in
  *" inspect "*) echo "no such image" >&2; exit 1;;
  *" pull "*) echo "pull: connection refused" >&2; exit 1;;
esac
exit 0
)sh";
}

// docker's client without a daemon, as on a machine where the docker CLI alone is installed.
constexpr const char* kDockerWithoutDaemon = R"sh(case "$1" in
  version) echo "Client: Docker Engine - Community"
           echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
           exit 1;;
esac
echo "docker: unexpected call" >&2; exit 1
)sh";

// docker with its daemon but without the buildx plugin: its legacy builder does not know
// --provenance and prints its usage.
constexpr const char* kDockerWithoutBuildx = R"sh(case "$1" in
  version) echo "24.0.5"; exit 0;;
  buildx) echo "docker: 'buildx' is not a docker command." >&2; exit 1;;
  build) echo "unknown flag: --provenance" >&2; echo "Usage:  docker build [OPTIONS] PATH" >&2; exit 125;;
esac
exit 0
)sh";

class ContainerTool : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = testing::CopyExample("tiny", dir_.path() / "tiny");
    fs::create_directories(bin_);
    testing::WriteFile(containerfile_, "FROM scratch\n");
  }

  // `name` on the test's PATH: records its argv in engine.log, then runs `body` (sh).
  void Fake(const std::string& name, const std::string& body) {
    const fs::path file = bin_ / name;
    testing::WriteFile(file,
                       "#!/bin/sh\necho \"" + name + " $*\" >> " + log_.string() + "\n" + body);
    ::chmod(file.c_str(), 0755);
  }

  std::string Log() const { return fs::exists(log_) ? testing::ReadFile(log_) : ""; }

  // The engine.log lines that contain `word`.
  std::vector<std::string> Calls(const std::string& word) const {
    std::vector<std::string> lines;
    const std::string log = Log();
    for (size_t at = 0, nl; at < log.size(); at = nl + 1) {
      nl = log.find('\n', at);
      if (nl == std::string::npos) nl = log.size();
      const std::string line = log.substr(at, nl - at);
      if ((" " + line + " ").find(" " + word + " ") != std::string::npos) lines.push_back(line);
    }
    return lines;
  }

  RunResult Trainlock(const std::vector<std::string>& args) {
    return testing::RunProgram("trainlock", args, {"PATH=" + bin_.string()});
  }

  // `image build` of the tiny project with the test's Containerfile, with `extra` options.
  RunResult Build(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "image",     "build",           project_.string(),       "--target",
        "cpu",       "--containerfile", containerfile_.string(), "--source-date-epoch",
        "1764460800"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Trainlock(args);
  }

  testing::TempDir dir_;
  fs::path project_;
  const fs::path bin_ = dir_.path() / "bin";
  const fs::path log_ = dir_.path() / "engine.log";
  const fs::path containerfile_ = dir_.path() / "Containerfile";
};

TEST_F(ContainerTool, DockerWithoutADaemonIsRefusedBeforeBuilding) {
  Fake("docker", kDockerWithoutDaemon);
  RunResult r = Build({"--container-engine", "docker"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("docker cannot reach its daemon (Cannot connect to the Docker daemon at "
                       "unix:///var/run/docker.sock. Is the docker daemon running?): start it "
                       "(systemctl start docker) or use buildah (apt-get install buildah"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(Calls("build").empty()) << Log();
}

TEST_F(ContainerTool, DockerWithoutBuildxIsRefusedBeforeBuilding) {
  Fake("docker", kDockerWithoutBuildx);
  RunResult r = Build({"--container-engine", "docker"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("docker has no buildx plugin (docker: 'buildx' is not a docker command.), "
                       "which a reproducible build needs (`docker build --provenance=false`)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("apt-get install docker-buildx"), std::string::npos) << r.err;
  EXPECT_TRUE(Calls("build").empty()) << Log();
}

TEST_F(ContainerTool, AMissingPodmanIsNamedWithHowToInstallIt) {
  RunResult r = Build({"--container-engine", "podman"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("podman is not installed (apt-get install podman on Debian/Ubuntu, dnf "
                       "install podman on Fedora/RHEL)"),
            std::string::npos)
      << r.err;
}

TEST_F(ContainerTool, AMissingBuildahIsNamedWithHowToInstallItByBuildAndValidate) {
  RunResult r = Build({"--container-engine", "buildah"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("buildah is not installed (apt-get install buildah on Debian/Ubuntu"),
            std::string::npos)
      << r.err;
  r = Trainlock({"validate", project_.string(), "--image", "registry.example/tiny:1",
                 "--container-engine", "buildah"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("buildah is not installed (apt-get install buildah on Debian/Ubuntu"),
            std::string::npos)
      << r.err;
}

TEST_F(ContainerTool, WithoutEngineAnEngineThatCannotWorkIsSkipped) {
  Fake("buildah", "echo 'buildah: error while loading shared libraries' >&2; exit 127\n");
  Fake("podman", WorkingEngine());
  RunResult r = Build({});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("built with podman"), std::string::npos) << r.out;
  EXPECT_EQ(Calls("buildah").size(), 1u) << Log();  // its --version, and nothing more
}

TEST_F(ContainerTool, WithoutEngineNoneThatCanWorkSaysWhyEachCannot) {
  Fake("docker", kDockerWithoutBuildx);
  RunResult r = Build({});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  for (const char* why :
       {"no image engine can work here (buildah, podman or docker):",
        "\n  buildah is not installed (apt-get install buildah",
        "\n  podman is not installed (apt-get install podman", "\n  docker has no buildx plugin"}) {
    EXPECT_NE(r.err.find(why), std::string::npos) << why << "\n" << r.err;
  }
  EXPECT_TRUE(Calls("build").empty()) << Log();
}

TEST_F(ContainerTool, ValidateInAnImageNeedsNoBuildx) {
  Fake("docker", kDockerWithoutBuildx);
  RunResult r = Trainlock({"validate", project_.string(), "--image", "registry.example/tiny:1",
                           "--container-engine", "docker"});
  // The fake docker has no image to inspect: the engine was chosen and asked.
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.err.find("buildx"), std::string::npos) << r.err;
  EXPECT_FALSE(Calls("inspect").empty()) << Log();
}

TEST_F(ContainerTool, AFailedBuildShowsTheWholeCommandAndOutputUnderVerbose) {
  Fake("buildah", R"sh(case " $* " in *" --version "*) exit 0;; esac
echo "STEP 1/9: FROM the base (the engine's first line)"
i=0; while [ $i -lt 20 ]; do echo "output line $i"; i=$((i+1)); done
echo "Error: building at STEP 9: exit status 1" >&2
exit 1
)sh");
  RunResult quiet = Build({"--container-engine", "buildah"});
  EXPECT_EQ(quiet.exit_code, 3) << quiet.err;
  EXPECT_NE(quiet.err.find("Error: building at STEP 9"), std::string::npos) << quiet.err;
  EXPECT_EQ(quiet.err.find("the engine's first line"), std::string::npos) << quiet.err;

  RunResult verbose = Trainlock({"-v", "image", "build", project_.string(), "--target", "cpu",
                                 "--containerfile", containerfile_.string(), "--source-date-epoch",
                                 "1764460800", "--container-engine", "buildah"});
  EXPECT_EQ(verbose.exit_code, 3) << verbose.err;
  EXPECT_NE(verbose.err.find("the engine's first line"), std::string::npos) << verbose.err;
  EXPECT_NE(verbose.err.find("\n$ buildah --root " +
                             (project_ / ".trainlock/containers/root").string() + " --runroot "),
            std::string::npos)
      << verbose.err;
  EXPECT_NE(verbose.err.find(" build --isolation chroot --no-cache --layers=false --format oci "
                             "--timestamp 1764460800 "),
            std::string::npos)
      << verbose.err;
}

TEST_F(ContainerTool, LoopbackRegistriesArePlainHttpWithoutNoTlsVerify) {
  Fake("buildah", WorkingEngine());
  for (const char* registry : {"127.0.0.1:5000", "localhost:5000", "[::1]:5000"}) {
    const std::string ref = std::string(registry) + "/tiny:1";
    ASSERT_EQ(Build({"--container-engine", "buildah", "--push", ref}).exit_code, 0) << ref;
    const std::vector<std::string> push = Calls("push");
    ASSERT_FALSE(push.empty()) << Log();
    EXPECT_NE(push.back().find(" --tls-verify=false "), std::string::npos) << push.back();
    EXPECT_NE(push.back().find(" docker://" + ref), std::string::npos) << push.back();
  }
  // validate --image pulls from a loopback registry over plain HTTP too.
  RunResult r = Trainlock({"validate", project_.string(), "--image", "127.0.0.1:5000/tiny:1",
                           "--container-engine", "buildah"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // the fake has nothing to pull
  const std::vector<std::string> pull = Calls("pull");
  ASSERT_EQ(pull.size(), 1u) << Log();
  EXPECT_NE(pull[0].find(" pull --tls-verify=false 127.0.0.1:5000/tiny:1"), std::string::npos)
      << pull[0];
}

TEST_F(ContainerTool, ABaseFromALoopbackRegistryIsPulledOverPlainHttp) {
  Fake("buildah", WorkingEngine());
  std::string lock = testing::ReadFile(project_ / "trainlock.lock");
  lock.replace(lock.find("docker.io/library/debian:bookworm-slim"), 38,
               "127.0.0.1:5000/debian:bookworm-slim");
  testing::WriteFile(project_ / "trainlock.lock", lock);
  ASSERT_EQ(Build({"--container-engine", "buildah"}).exit_code, 0) << Log();
  const std::vector<std::string> build = Calls("build");
  ASSERT_EQ(build.size(), 1u) << Log();
  EXPECT_NE(build[0].find(" --tls-verify=false "), std::string::npos) << build[0];
}

TEST_F(ContainerTool, OtherRegistriesVerifyTlsUnlessTold) {
  Fake("buildah", WorkingEngine());
  ASSERT_EQ(Build({"--container-engine", "buildah", "--push", "registry.example/tiny:1"}).exit_code,
            0);
  EXPECT_EQ(Log().find("--tls-verify=false"), std::string::npos) << Log();
  ASSERT_EQ(Build({"--container-engine", "buildah", "--push", "registry.example/tiny:1",
                   "--no-tls-verify"})
                .exit_code,
            0);
  const std::vector<std::string> push = Calls("push");
  ASSERT_EQ(push.size(), 2u) << Log();
  EXPECT_NE(push[1].find(" --tls-verify=false "), std::string::npos) << push[1];
  EXPECT_NE(Calls("build").back().find(" --tls-verify=false "), std::string::npos) << Log();
}

TEST_F(ContainerTool, StorageIsTheProjectsTrainlockDirectoryUnlessGiven) {
  Fake("buildah", WorkingEngine());
  ASSERT_EQ(Build({"--container-engine", "buildah"}).exit_code, 0);
  const std::string own = "buildah --root " + (project_ / ".trainlock/containers/root").string() +
                          " --runroot " + (project_ / ".trainlock/containers/run").string() +
                          " --storage-driver vfs ";
  for (const char* call : {"build", "push"}) {
    ASSERT_EQ(Calls(call).size(), 1u) << Log();
    EXPECT_EQ(Calls(call)[0].rfind(own, 0), 0u) << Calls(call)[0];
  }
  Trainlock({"validate", project_.string(), "--image", "127.0.0.1:5000/tiny:1",
             "--container-engine", "buildah"});
  ASSERT_EQ(Calls("pull").size(), 1u) << Log();
  EXPECT_EQ(Calls("pull")[0].rfind(own, 0), 0u) << Calls("pull")[0];

  const fs::path given = dir_.path() / "storage";
  ASSERT_EQ(Build({"--container-engine", "buildah", "--storage-root", given.string()}).exit_code,
            0);
  EXPECT_EQ(Calls("build").back().rfind("buildah --root " + (given / "root").string() + " ", 0), 0u)
      << Calls("build").back();
}

// A buildah that builds nothing and whose push fills its --digestfile ("$a") with `write` (sh).
std::string EngineWithDigestFile(const std::string& write) {
  return "prev=\nfor a in \"$@\"; do\n  if [ \"$prev\" = --digestfile ]; then " + write +
         "; fi\n  prev=$a\ndone\nexit 0\n";
}

TEST_F(ContainerTool, APushThatWritesNoDigestFileIsAnEngineError) {
  Fake("buildah", EngineWithDigestFile(":"));
  const RunResult r = Build({"--container-engine", "buildah"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("wrote no --digestfile"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("built with"), std::string::npos) << r.out;
}

TEST_F(ContainerTool, TwoEmptyDigestsAreAnEngineErrorNotAReproducibleBuild) {
  Fake("buildah", EngineWithDigestFile(": > \"$a\""));
  const RunResult r = Build({"--container-engine", "buildah", "--verify-reproducible"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("holds no digest"), std::string::npos) << r.err;
}

TEST_F(ContainerTool, ADigestFileWithEscapeSequencesIsAnEngineErrorShownEscaped) {
  Fake("buildah",
       EngineWithDigestFile(std::string("printf '\\033[2J") + kDigest + "\\n' > \"$a\""));
  const RunResult r = Build({"--container-engine", "buildah"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("\\x1b[2J"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
}

TEST_F(ContainerTool, CheckWithAnEmptyDigestIsAnEngineErrorNotADifference) {
  testing::WriteFile(project_ / "trainlock.lock",
                     testing::ReadFile(project_ / "trainlock.lock") +
                         "\n[images.cpu]\nref = 'registry.example/tiny:1'\ndigest = '" + kDigest +
                         "'\n");
  Fake("buildah", EngineWithDigestFile(": > \"$a\""));
  const RunResult r = Build({"--container-engine", "buildah", "--check"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
}

// --check rebuilds from the lock's sources: with its package index and its base's registry
// down (loopback ports nothing listens on) it says so in one line naming both, within seconds,
// and builds nothing (it took pip's and the engine's retries, a minute and a screen, before).
TEST_F(ContainerTool, CheckNamesEachUnreachableSourceInOneLineBeforeBuilding) {
  Fake("buildah", WorkingEngine());
  const std::string index = "http://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  const std::string registry = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  for (const char* file : {"trainlock.toml", "trainlock.lock"}) {
    std::string text = testing::ReadFile(project_ / file);
    for (size_t at; (at = text.find("http://127.0.0.1:8765")) != std::string::npos;)
      text.replace(at, 21, index);
    text.replace(text.find("docker.io/library/debian"), 24, registry + "/library/debian");
    testing::WriteFile(project_ / file, text);
  }
  std::string manifest_sha = Trainlock({"hash", project_.string(), "--manifest"}).out;
  manifest_sha.erase(manifest_sha.find('\n'));
  std::string lock = testing::ReadFile(project_ / "trainlock.lock");
  const size_t pin = lock.find("manifest-sha256 = '") + 19;
  lock.replace(pin, 64, manifest_sha);
  testing::WriteFile(project_ / "trainlock.lock",
                     lock + "\n[images.cpu]\nref = 'registry.example/tiny:1'\ndigest = '" +
                         kDigest + "'\nsource-date-epoch = 1764460800\n");
  const auto start = std::chrono::steady_clock::now();
  const RunResult r = Trainlock({"image", "build", project_.string(), "--target", "cpu", "--check",
                                 "--container-engine", "buildah", "-q"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("the package index " + index + "/simple ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the base's registry http://" + registry + "/v2/ ("), std::string::npos)
      << r.err;
  EXPECT_TRUE(Calls("build").empty()) << Log();
}

TEST_F(ContainerTool, ABuildThatNeverReturnsIsStoppedAtTheTimeout) {
  Fake("buildah", "case \" $* \" in *\" --version \"*) exit 0;; esac\nexec /bin/sleep 600\n");
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"image", "build", project_.string(), "--target", "cpu",
                           "--containerfile", containerfile_.string(), "--source-date-epoch",
                           "1764460800", "--container-engine", "buildah"},
                          {"PATH=" + bin_.string(), "TRAINLOCK_ENGINE_TIMEOUT=1"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("build 1 did not finish within 1 s"), std::string::npos) << r.err;
  EXPECT_EQ(Calls("build").size(), 1u) << Log();  // it got as far as the build, and no further
}

TEST_F(ContainerTool, AVersionCheckThatNeverReturnsIsStoppedAtTheTimeout) {
  Fake("buildah", "exec /bin/sleep 600\n");
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"validate", project_.string(), "--image", "127.0.0.1:5000/tiny:1",
                           "--container-engine", "buildah"},
                          {"PATH=" + bin_.string(), "TRAINLOCK_ENGINE_TIMEOUT=0.5"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("`buildah --version` did not finish within 0.5 s"), std::string::npos)
      << r.err;
}

// A podman that has the cpu image (its digest and target label) and answers `run` with `run`
// (sh); every other call succeeds.
std::string PodmanWithImage(const std::string& run) {
  return std::string(
             "case \" $* \" in\n  *\" --version \"*) exit 0;;\n  *\" inspect \"*) echo \"") +
         kDigest + " cpu\"; exit 0;;\n  *\" run \"*) " + run + "; exit 0;;\nesac\nexit 0\n";
}

// Stopping `podman run` leaves the container running under conmon (docker's, under its daemon),
// holding the GPUs and the caller's stderr: a run stopped at its limit removes it by name.
TEST_F(ContainerTool, ARunStoppedAtTheTimeoutRemovesItsContainerByName) {
  Fake("podman", PodmanWithImage("exec /bin/sleep 600"));
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"validate", project_.string(), "--image", "registry.example/tiny:1",
                           "--container-engine", "podman"},
                          {"PATH=" + bin_.string(), "TRAINLOCK_ENGINE_TIMEOUT=1"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const std::vector<std::string> runs = Calls("run");
  ASSERT_EQ(runs.size(), 1u) << Log();
  const size_t named = runs[0].find("--name trainlock-validate-");
  ASSERT_NE(named, std::string::npos) << runs[0];
  const std::string name = runs[0].substr(named + 7, runs[0].find(' ', named + 7) - named - 7);
  const std::vector<std::string> removed = Calls("rm");
  ASSERT_EQ(removed.size(), 1u) << Log();
  EXPECT_NE(removed[0].find(" rm -f " + name), std::string::npos) << removed[0];
}

// `--volume HOST:CONTAINER:ro` splits at ':' (a project in /p:colon was mounted from /p at
// "colon:/trainlock/project") and `--mount` at ','. A path a mount cannot carry is refused with
// exit 2, naming it, before any call of the container tool.
TEST_F(ContainerTool, AProjectPathWithAColonOrACommaIsRefusedBeforeAnyEngineCall) {
  Fake("podman", PodmanWithImage("exit 0"));
  for (const char* name : {"p:colon", "p,comma"}) {
    const fs::path project = dir_.path() / name;
    fs::create_directories(project);
    testing::CopyExample("tiny", project);
    const RunResult r = Trainlock({"validate", project.string(), "--image",
                                   "registry.example/tiny:1", "--container-engine", "podman"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    const std::string held = std::string(": error: the project directory holds '") + name[1] + "'";
    EXPECT_NE(r.err.find(project.string() + held), std::string::npos) << r.err;
    EXPECT_EQ(Log(), "");  // nothing pulled, inspected or run
  }
}

// `trainlock validate PROJECT --image ... --container-engine podman` as a CI runner starts it:
// no stdin, stdout and stderr one pipe, PATH the fake tools' (and `extra` in the environment).
SpawnOptions ValidateInImage(const fs::path& project, const fs::path& bin,
                             const std::map<std::string, std::string>& extra) {
  SpawnOptions spawn;
  spawn.argv = {(testing::BinDir() / "trainlock").string(),
                "validate",
                project.string(),
                "--image",
                "registry.example/tiny:1",
                "--container-engine",
                "podman"};
  spawn.env = {{"PATH", bin.string()}};
  spawn.env.insert(extra.begin(), extra.end());
  spawn.null_stdin = true;
  return spawn;
}

// `validate --image` under a CI runner: its stderr is a pipe the log reader holds until every
// writer has closed it. A run stopped at its limit takes everything the container tool started
// with it (its whole process group): a child of the tool that kept the inherited stderr would
// hold the log open long after trainlock's exit 3.
TEST_F(ContainerTool, ARunStoppedAtTheTimeoutStopsTheToolsChildrenSoTheLogPipeCloses) {
  Fake("podman", PodmanWithImage("/bin/sleep 30 & exec /bin/sleep 600"));
  SpawnOptions spawn = ValidateInImage(project_, bin_, {{"TRAINLOCK_ENGINE_TIMEOUT", "1"}});
  const auto start = ProcessClock::now();
  Subprocess trainlock(spawn);
  ASSERT_TRUE(trainlock.started()) << trainlock.start_error();
  EXPECT_EQ(trainlock.Wait(start + std::chrono::seconds(60)), std::optional<int>(3))
      << trainlock.tail().Text();
  trainlock.DrainOutput(ProcessClock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(trainlock.output_ended()) << "a child of the container tool still holds the pipe";
  EXPECT_LT(ProcessClock::now() - start, std::chrono::seconds(15));
  trainlock.KillPipeHolders();  // what a regression leaves behind
}

// Out of the terminal's foreground group, the run would no longer see a Ctrl-C: a SIGINT to
// trainlock is passed on to it (podman and docker stop and remove the container on it), and
// trainlock ends by the signal once the run has ended.
TEST_F(ContainerTool, ACtrlCDuringTheRunIsPassedOnToTheContainerTool) {
  const fs::path seen = dir_.path() / "interrupted";
  Fake("podman", PodmanWithImage("trap 'echo yes > " + seen.string() +
                                 "; exit 130' INT; /bin/sleep 600 & wait"));
  SpawnOptions spawn = ValidateInImage(project_, bin_, {});
  Subprocess trainlock(spawn);
  ASSERT_TRUE(trainlock.started()) << trainlock.start_error();
  const auto start = ProcessClock::now();
  while (Calls("run").empty() && ProcessClock::now() - start < std::chrono::seconds(30))
    trainlock.Wait(ProcessClock::now() + std::chrono::milliseconds(50));
  ASSERT_EQ(Calls("run").size(), 1u) << Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the trap is set
  ::kill(trainlock.pid(), SIGINT);
  EXPECT_EQ(trainlock.Wait(ProcessClock::now() + std::chrono::seconds(30)),
            std::optional<int>(128 + SIGINT))
      << trainlock.tail().Text();
  EXPECT_TRUE(fs::exists(seen)) << "the container tool never saw the Ctrl-C";
}

// What the validator in the image prints is shown, its end only: 70 MB of it was once refused
// as bad input (exit 2) before the report was looked for.
TEST_F(ContainerTool, AValidatorPrintingWithoutBoundIsShownByItsEnd) {
  Fake("podman",
       PodmanWithImage(
           "/usr/bin/head -c 70000000 /dev/zero | /usr/bin/tr '\\0' x; echo; echo the last line"));
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"validate", project_.string(), "--image", "registry.example/tiny:1",
                           "--container-engine", "podman"},
                          {"PATH=" + bin_.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // it wrote no report: not bad input
  EXPECT_NE(r.err.find("wrote no report"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("bytes of the validator's output left out"), std::string::npos);
  EXPECT_NE(r.out.find("the last line"), std::string::npos);
  EXPECT_LT(r.out.size(), size_t{2} << 20);
}

// What the image prints is text from outside trainlock: an escape sequence in it is shown, not
// obeyed, and a secret in it is masked, as the report's copy is (issue #61).
TEST_F(ContainerTool, WhatTheImagePrintsIsShownEscapedAndMasked) {
  const std::string token = "hf_" + std::string(34, 'Z');
  Fake("podman",
       PodmanWithImage("printf '\\033]0;pwned\\007 DB_PASSWORD=hunter2-planted " + token + "\\n'"));
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"validate", project_.string(), "--image", "registry.example/tiny:1",
                           "--container-engine", "podman"},
                          {"PATH=" + bin_.string()});
  EXPECT_EQ(r.exit_code, 3) << r.err;  // it wrote no report
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b]0;pwned\\x07"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find("hunter2-planted"), std::string::npos) << r.out;
  EXPECT_EQ((r.out + r.err).find(token), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DB_PASSWORD=***"), std::string::npos) << r.out;
}

TEST_F(ContainerTool, ATimeoutThatIsNotANumberIsBadInput) {
  Fake("buildah", WorkingEngine());
  const RunResult r =
      testing::RunProgram("trainlock",
                          {"image", "build", project_.string(), "--target", "cpu",
                           "--containerfile", containerfile_.string(), "--source-date-epoch",
                           "1764460800", "--container-engine", "buildah"},
                          {"PATH=" + bin_.string(), "TRAINLOCK_ENGINE_TIMEOUT=soon"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("TRAINLOCK_ENGINE_TIMEOUT=soon"), std::string::npos) << r.err;
}

TEST(ImageRefs, LoopbackRegistriesAreThisMachines) {
  for (const char* host :
       {"127.0.0.1:5000", "127.1.2.3", "localhost", "localhost:5000", "[::1]", "[::1]:5000"}) {
    EXPECT_TRUE(IsLoopbackRegistry(host)) << host;
  }
  for (const char* host :
       {"registry.example", "10.0.0.1:5000", "localhost.example", "[::2]:5000", "docker.io", ""}) {
    EXPECT_FALSE(IsLoopbackRegistry(host)) << host;
  }
  std::string error;
  const auto ref = ParseImageRef("[::1]:5000/tiny:1", &error);
  ASSERT_TRUE(ref) << error;
  EXPECT_EQ(ref->registry, "[::1]:5000");
  EXPECT_EQ(ref->tag, "1");
}

}  // namespace
}  // namespace trainlock
