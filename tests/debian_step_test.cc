// The generated Containerfile's Debian step (image/debian_install.h), run as it is under sh -c:
// apt's paths moved under the test's directory, apt-get and rm replaced by stand-ins that log
// their arguments (apt-get's --download-only copying the test's .debs, built here by dpkg-deb,
// into the directory it is given). Each pinned .deb is compared with the lock's sha256 before
// apt installs anything: a file that differs, or none, fails the step with one line naming the
// package, and the install is never run. A URL holding every character RFC 3986 allows and a
// shell would act on reaches apt's source list as written, running nothing. The step passes
// shellcheck.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "base/sha256.h"
#include "project/lockfile.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunResult;
using testing::WriteFile;

constexpr const char* kArchive = "http://127.0.0.1/debian";

class DebianRunLine : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* tool : {"sh", "sha256sum", "dpkg-deb"}) {
      if (!testing::HaveProgram(tool)) GTEST_SKIP() << tool << " is not on PATH";
    }
    fs::create_directories(bin_);
    fs::create_directories(root_ / "lists");
    fs::create_directories(mirror_);
    StandIn("apt-get", "echo \"apt-get $*\" >> '" + Calls().string() +
                           "'\n"
                           "cache=\n"
                           "for a in \"$@\"; do case $a in Dir::Cache::Archives=*) "
                           "cache=${a#*=} ;; esac; done\n"
                           "case \" $* \" in *\" --download-only \"*)\n"
                           "  for f in '" +
                           mirror_.string() +
                           "'/*.deb; do if [ -f \"$f\" ]; then cp \"$f\" \"$cache\"; fi; done ;;\n"
                           "esac");
    StandIn("rm", "echo \"rm $*\" >> '" + Calls().string() + "'");
    StandIn("touch", ": > '" + Marker().string() + "'");
  }
  void StandIn(const std::string& name, const std::string& body) {
    WriteFile(bin_ / name, "#!/bin/sh\n" + body + "\n");
    fs::permissions(bin_ / name, fs::perms::owner_all);
  }
  fs::path Marker() const { return root_ / "marker"; }
  fs::path Calls() const { return root_ / "calls"; }
  std::string CallsText() const { return fs::exists(Calls()) ? ReadFile(Calls()) : ""; }

  // A real .deb of `name` at `version`, built by dpkg-deb into the stand-in archive as `file`
  // (apt's name for it); its sha256.
  std::string PlantDeb(const std::string& name, const std::string& version,
                       const std::string& file) {
    const fs::path tree = tmp_.path() / "tree" / file;
    fs::create_directories(tree / "DEBIAN");
    WriteFile(tree / "DEBIAN/control", "Package: " + name + "\nVersion: " + version +
                                           "\nArchitecture: all\nMaintainer: trainlock tests "
                                           "<tests@example.invalid>\nDescription: a stand-in\n");
    const RunResult r = testing::RunCommand({"dpkg-deb", "--root-owner-group", "-Zgzip", "--build",
                                             tree.string(), (mirror_ / file).string()},
                                            {"SOURCE_DATE_EPOCH=1764547200"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Sha256FileHex(mirror_ / file);
  }

  // The tiny example's cpu Containerfile with `debs` pinned, from `archive`.
  std::string Containerfile(const std::vector<DebianPackage>& debs,
                            const std::string& archive = kArchive) {
    const fs::path project = tmp_.path() / "tiny";
    fs::remove_all(project);
    fs::create_directories(project);
    testing::CopyExample("tiny", project);
    std::string names;
    std::string pins;
    for (const DebianPackage& d : debs) {
      names += (names.empty() ? "'" : ", '") + d.name + "'";
      pins += std::string(pins.empty() ? "" : ", ") + "{ name = '" + d.name + "', version = '" +
              d.version + "', file = '" + d.file + "', sha256 = '" + d.sha256 + "' }";
    }
    std::string lock = ReadFile(project / "trainlock.lock");
    const std::string at = "[targets.cpu]\n";
    lock.insert(lock.find(at) + at.size(), "debian-packages = [" + names + "]\napt-archive = '" +
                                               archive + "'\napt-suite = 'bookworm'\ndebs = [" +
                                               pins + "]\n");
    WriteFile(project / "trainlock.lock", lock);
    const RunResult gen = testing::RunTrainlock(
        {"image", "generate", project.string(), "--target", "cpu", "--source-date-epoch",
         "1764547200", "--build-validator", "--out", (tmp_.path() / "out").string()});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    return ReadFile(tmp_.path() / "out/Containerfile");
  }

  // The Containerfile's RUN line that writes /etc/apt/trainlock.list, continuations joined.
  static std::string DebianRun(const std::string& containerfile) {
    const size_t start = containerfile.find("RUN echo 'deb ");
    if (start == std::string::npos) return "";
    size_t end = start;
    while (true) {
      end = containerfile.find('\n', end);
      if (containerfile[end - 1] != '\\') break;
      ++end;
    }
    std::string run = containerfile.substr(start + 4, end - start - 4);
    for (size_t at; (at = run.find("\\\n")) != std::string::npos;) run.replace(at, 2, " ");
    return run;
  }

  // `run` with apt's paths and the download directory moved under the test's directory.
  std::string Sandboxed(std::string run) const {
    for (const auto& [from, to] :
         {std::pair<std::string, std::string>{"/etc/apt/trainlock.list", (root_ / "list").string()},
          {"/var/lib/apt/lists/", (root_ / "lists/").string()},
          {"/tmp/trainlock-debs", (root_ / "debs").string()}}) {
      for (size_t at; (at = run.find(from)) != std::string::npos;) run.replace(at, from.size(), to);
    }
    return run;
  }

  // The Debian step of a Containerfile pinning `debs`, run under sh -c in the sandbox.
  RunResult RunStep(const std::vector<DebianPackage>& debs, const std::string& archive = kArchive) {
    const std::string run = DebianRun(Containerfile(debs, archive));
    EXPECT_NE(run.find("> /etc/apt/trainlock.list"), std::string::npos) << run;
    const std::string sandboxed = Sandboxed(run);
    for (const char* outside : {"/etc/apt", "/var/lib", "/tmp/trainlock-debs"})
      EXPECT_EQ(sandboxed.find(outside), std::string::npos) << outside << "\n" << sandboxed;
    return testing::RunCommand({"sh", "-c", sandboxed},
                               {"PATH=" + bin_.string() + ":/usr/bin:/bin"});
  }

  // The step failed saying `want`, after apt's download and before its install.
  void ExpectRefusedBeforeTheInstall(const RunResult& r, const std::string& want) const {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_NE(CallsText().find("--download-only"), std::string::npos) << CallsText();
    EXPECT_EQ(CallsText().find("--no-download"), std::string::npos) << CallsText();
  }

  testing::TempDir tmp_;
  fs::path bin_ = tmp_.path() / "bin";
  fs::path root_ = tmp_.path() / "root";
  fs::path mirror_ = tmp_.path() / "mirror";
};

const std::string kFooFile = "pool/main/libf/libfoo/libfoo_1.0-1_all.deb";
const std::string kBarFile = "pool/main/libb/libbar/libbar_2.0-1_all.deb";

TEST_F(DebianRunLine, PinsWithTheLocksSha256AreInstalledFromTheDownloadedFilesAlone) {
  const std::string foo = PlantDeb("libfoo", "1.0-1", "libfoo_1.0-1_all.deb");
  const std::string bar = PlantDeb("libbar", "2.0-1", "libbar_2.0-1_all.deb");
  const RunResult r =
      RunStep({{"libfoo", "1.0-1", kFooFile, foo}, {"libbar", "2.0-1", kBarFile, bar}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string calls = CallsText();
  const std::string cache = "-o Dir::Cache::Archives=" + (root_ / "debs").string() + "/ ";
  const size_t download =
      calls.find(cache +
                 "install -y --no-install-recommends --reinstall --download-only "
                 "libfoo=1.0-1 libbar=2.0-1\n");
  const size_t install = calls.find(cache +
                                    "install -y --no-install-recommends --reinstall --no-download "
                                    "libfoo=1.0-1 libbar=2.0-1\n");
  ASSERT_NE(download, std::string::npos) << calls;
  ASSERT_NE(install, std::string::npos) << calls;
  EXPECT_LT(download, install) << calls;
}

TEST_F(DebianRunLine, APinnedDebWhoseSha256DiffersFailsTheStepNamingThePackage) {
  const std::string foo = PlantDeb("libfoo", "1.0-1", "libfoo_1.0-1_all.deb");
  const std::string locked(64, 'a');
  const RunResult r = RunStep({{"libfoo", "1.0-1", kFooFile, locked}});
  ExpectRefusedBeforeTheInstall(r, "trainlock: libfoo 1.0-1: sha256 " + foo +
                                       " is not the lock's " + locked + " (targets.cpu.debs)");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The first pin matching does not stand for the others.
TEST_F(DebianRunLine, EveryPinIsComparedNotOnlyTheFirst) {
  const std::string foo = PlantDeb("libfoo", "1.0-1", "libfoo_1.0-1_all.deb");
  const std::string bar = PlantDeb("libbar", "2.0-1", "libbar_2.0-1_all.deb");
  const std::string locked(64, 'b');
  const RunResult r =
      RunStep({{"libfoo", "1.0-1", kFooFile, foo}, {"libbar", "2.0-1", kBarFile, locked}});
  ExpectRefusedBeforeTheInstall(r, "trainlock: libbar 2.0-1: sha256 " + bar +
                                       " is not the lock's " + locked + " (targets.cpu.debs)");
}

TEST_F(DebianRunLine, APinnedDebAptDidNotDownloadFailsTheStepNamingThePackage) {
  const std::string foo = PlantDeb("libfoo", "1.0-1", "libfoo_1.0-1_all.deb");
  const RunResult r =
      RunStep({{"libfoo", "1.0-1", kFooFile, foo}, {"libbar", "2.0-1", kBarFile, foo}});
  ExpectRefusedBeforeTheInstall(
      r,
      "trainlock: libbar 2.0-1: apt downloaded no single libbar_2.0-1_*.deb to compare with "
      "the lock's sha256 (targets.cpu.debs)");
}

// apt names the file of 1:1.0-1 libfoo_1%3a1.0-1_<arch>.deb; the comparison finds it there.
TEST_F(DebianRunLine, AnEpochVersionsFileIsFoundUnderAptsName) {
  const std::string foo = PlantDeb("libfoo", "1:1.0-1", "libfoo_1%3a1.0-1_all.deb");
  const RunResult r = RunStep({{"libfoo", "1:1.0-1", kFooFile, foo}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(CallsText().find("--no-download libfoo=1:1.0-1\n"), std::string::npos) << CallsText();
}

TEST_F(DebianRunLine, AUrlsShellCharactersReachTheListAsWrittenAndRunNothing) {
  const std::string url = "http://127.0.0.1/deb;touch&(touch)*!,+=~%24(touch)";
  const std::string foo = PlantDeb("libfoo", "1.0-1", "libfoo_1.0-1_all.deb");
  const RunResult r = RunStep({{"libfoo", "1.0-1", kFooFile, foo}}, url);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(Marker()));
  EXPECT_EQ(ReadFile(root_ / "list"), "deb [check-valid-until=no] " + url + " bookworm main\n");
  EXPECT_NE(CallsText().find(" install -y --no-install-recommends --reinstall --no-download "
                             "libfoo=1.0-1"),
            std::string::npos)
      << CallsText();
}

TEST_F(DebianRunLine, PassesShellcheck) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  const std::string run =
      DebianRun(Containerfile({{"libfoo", "1:1.0-1", kFooFile, std::string(64, 'a')},
                               {"libbar", "2.0-1", kBarFile, std::string(64, 'b')}}));
  ASSERT_FALSE(run.empty());
  WriteFile(tmp_.path() / "debian-step.sh", "#!/bin/sh\n" + run + "\n");
  const RunResult check = testing::RunCommand(
      {"shellcheck", "--norc", "--format=gcc", (tmp_.path() / "debian-step.sh").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

}  // namespace
}  // namespace trainlock
