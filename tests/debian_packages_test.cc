// Pinned Debian packages: the grammar of names and versions (a crafted one is refused, exit 2,
// naming the file and key), dpkg's version order, `trainlock lock` pinning from a loopback apt
// archive (a Packages.gz served by python3 -m http.server) and `lock --check --upstream`
// seeing a newer version there, the generated Containerfile installing exactly the pins from
// the snapshot after comparing each .deb with the lock's sha256 (tests/debian_step_test.cc
// runs that step), and env.packages comparing them with a planted dpkg database.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "checks/python_packages.h"
#include "lock/debian_index.h"
#include "project/debian_names.h"
#include "project/lockfile_loader.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunTrainlock;

TEST(DebianNames, FollowDebianPolicy) {
  EXPECT_TRUE(IsDebianPackageName("libtorch1.13"));
  EXPECT_TRUE(IsDebianPackageName("g++"));
  EXPECT_FALSE(IsDebianPackageName("Libtorch"));
  EXPECT_FALSE(IsDebianPackageName("a"));
  EXPECT_FALSE(IsDebianPackageName("-o"));
  EXPECT_FALSE(IsDebianPackageName("curl;rm"));
  EXPECT_TRUE(IsDebianVersion("1.13.1+dfsg-4"));
  EXPECT_TRUE(IsDebianVersion("1:2.39.2-1.1"));
  EXPECT_TRUE(IsDebianVersion("3.0~rc1"));
  EXPECT_FALSE(IsDebianVersion("latest"));
  EXPECT_FALSE(IsDebianVersion("1.0 -o"));
  EXPECT_FALSE(IsDebianVersion("1.0-"));
  EXPECT_TRUE(IsAptSnapshot("20261201T000000Z"));
  EXPECT_FALSE(IsAptSnapshot("2026-12-01"));
}

TEST(DebianNames, VersionsCompareInDpkgsOrder) {
  EXPECT_LT(CompareDebianVersions("1.0~rc1", "1.0"), 0);
  EXPECT_LT(CompareDebianVersions("1.0", "1.0-1"), 0);
  EXPECT_LT(CompareDebianVersions("1.0-1", "1.0-2"), 0);
  EXPECT_LT(CompareDebianVersions("1.9", "1.10"), 0);
  EXPECT_GT(CompareDebianVersions("1:0.1", "2.0"), 0);
  EXPECT_EQ(CompareDebianVersions("1.01", "1.1"), 0);
  EXPECT_LT(CompareDebianVersions("1.0a", "1.0+"), 0);
}

std::string ManifestWith(const std::string& target_lines) {
  std::string text = testing::ReadFile(testing::SourceDir() / "examples/tiny/trainlock.toml");
  const std::string at = "[targets.cpu]\n";
  return text.insert(text.find(at) + at.size(), target_lines);
}

std::string LoadError(const std::string& text, LockfileKind kind) {
  try {
    LoadLockfile(text, "trainlock.toml", kind);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DebianManifest, APackageNameOutsideDebiansGrammarIsRefusedNamingFileAndKey) {
  const std::string error = LoadError(
      ManifestWith("debian-packages = [\"libfoo\", \"-o APT::x\"]\n"), LockfileKind::kManifest);
  EXPECT_NE(error.find("trainlock.toml:8:"), std::string::npos) << error;
  EXPECT_NE(error.find("'targets.cpu.debian-packages' entry '-o APT::x' is not a Debian "
                       "package name"),
            std::string::npos)
      << error;
}

TEST(DebianManifest, ASnapshotThatIsNotASnapshotTimeIsRefused) {
  const std::string error =
      LoadError(ManifestWith("apt-snapshot = \"yesterday\"\n"), LockfileKind::kManifest);
  EXPECT_NE(error.find("'targets.cpu.apt-snapshot' = 'yesterday' is not a snapshot time"),
            std::string::npos)
      << error;
}

TEST(DebianLock, APinnedVersionOutsideDebiansGrammarIsRefusedNamingTheKey) {
  std::string lock = testing::ReadFile(testing::SourceDir() / "examples/tiny/trainlock.lock");
  const std::string at = "[targets.cpu]\n";
  lock.insert(lock.find(at) + at.size(),
              "debian-packages = [\"libfoo\"]\n"
              "debs = [{ name = \"libfoo\", version = \"1.0 && curl x\", file = "
              "\"pool/main/libf/libfoo/libfoo_1.0_amd64.deb\", sha256 = \"" +
                  std::string(64, 'a') + "\" }]\n");
  const std::string error = LoadError(lock, LockfileKind::kLock);
  EXPECT_NE(error.find("'targets.cpu.debs.version' = '1.0 && curl x' is not a Debian version"),
            std::string::npos)
      << error;
}

// The index is hostile input: a stanza whose values fail their grammar never becomes a pin.
TEST(DebianPackagesIndex, AStanzaOutsideTheGrammarIsLeftOut) {
  const std::string sha(64, 'a');
  const auto pins = ParseDebianPackagesIndex(
      "Package: good\nVersion: 1.0-1\nFilename: pool/main/g/good/good_1.0-1_amd64.deb\n"
      "SHA256: " +
      sha +
      "\nDescription: x\n continued: Version: 9\n\n"
      "Package: evil\nVersion: 1.0 -o Debug::x\nFilename: pool/e.deb\nSHA256: " +
      sha +
      "\n\n"
      "Package: escape\nVersion: 1.0\nFilename: pool/../../etc/passwd.deb\nSHA256: " +
      sha + "\n");
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins[0].name, "good");
  EXPECT_EQ(pins[0].version, "1.0-1");
}

// A loopback apt archive: ROOT/archive/debian/<snapshot>/dists/bookworm/main/binary-amd64/
// Packages.gz, served by python3 -m http.server.
class AptArchive : public ::testing::Test {
 protected:
  static constexpr const char* kSnapshot = "20261201T000000Z";
  void SetUp() override {
    if (!testing::HaveProgram("python3") || !testing::HaveProgram("gzip"))
      GTEST_SKIP() << "python3 and gzip are needed for the loopback archive";
    port_ = testing::FreeLoopbackPort();
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3", "-m", "http.server", std::to_string(port_), "--bind",
                                 "127.0.0.1", "--directory", dir_.path().string()},
        dir_.path() / "server.log");
    ASSERT_TRUE(testing::WaitForHttp(Archive() + "/", 30));
  }
  std::string Archive() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The index lists libfoo at each of `versions`, and libbar 2.0-1.
  void Publish(const std::vector<std::string>& versions) {
    const fs::path dir =
        dir_.path() / "archive/debian" / kSnapshot / "dists/bookworm/main/binary-amd64";
    fs::create_directories(dir);
    std::string text;
    for (const std::string& v : versions) {
      text += "Package: libfoo\nVersion: " + v +
              "\nArchitecture: amd64\nFilename: " + "pool/main/libf/libfoo/libfoo_" + v +
              "_amd64.deb\nSHA256: " + std::string(64, v.back()) +
              "\nDescription: foo\n a library\n\n";
    }
    text +=
        "Package: libbar\nVersion: 2.0-1\nFilename: pool/main/libb/libbar/libbar_2.0-1_amd64"
        ".deb\nSHA256: " +
        std::string(64, 'b') + "\n";
    fs::remove(dir / "Packages.gz");
    testing::WriteFile(dir / "Packages", text);
    ASSERT_EQ(testing::RunCommand({"gzip", "-n", (dir / "Packages").string()}).exit_code, 0);
  }
  // examples/tiny without base or Python packages, asking for `packages` from the archive.
  fs::path Project(const std::string& packages = "\"libfoo\", \"libbar\"") {
    const fs::path p = testing::UnlockedTiny(dir_.path() / "p", "");
    std::string text = testing::ReadFile(p / "trainlock.toml");
    const std::string at = "[targets.cpu]\n";
    text.insert(text.find(at) + at.size(),
                "debian-packages = [" + packages + "]\napt-archive = \"" + Archive() +
                    "/archive/debian\"\napt-snapshot = \"" + kSnapshot + "\"\n");
    testing::WriteFile(p / "trainlock.toml", text);
    return p;
  }
  // The cpu Containerfile of Project() locked from libfoo 1.0-1 and libbar 2.0-1.
  std::string LockedContainerfile() {
    Publish({"1.0-1"});
    const fs::path p = Project();
    EXPECT_EQ(RunTrainlock({"lock", p.string()}).exit_code, 0);
    // A digest-pinned base, which this project (locked without a registry) lacks.
    std::string lock = testing::ReadFile(p / "trainlock.lock");
    lock.insert(lock.find("[targets.cpu]\n") + 14,
                "base = 'docker.io/library/debian@sha256:" + std::string(64, 'c') + "'\n");
    testing::WriteFile(p / "trainlock.lock", lock);
    auto r =
        RunTrainlock({"image", "generate", p.string(), "--target", "cpu", "--source-date-epoch",
                      "1764547200", "--build-validator", "--out", (dir_.path() / "out").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return testing::ReadFile(dir_.path() / "out/Containerfile");
  }
  static Lockfile Lock(const fs::path& p) {
    return LoadLockfile(testing::ReadFile(p / "trainlock.lock"), "lock", LockfileKind::kLock);
  }

  testing::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> server_;
};

TEST_F(AptArchive, LockPinsEachPackageToTheIndexsNewestVersionWithItsHash) {
  Publish({"1.0-1", "1.0-2", "1.0~rc1-1"});
  const fs::path p = Project();
  auto r = RunTrainlock({"lock", p.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Lockfile lock = Lock(p);
  const Target& cpu = lock.targets.at("cpu");
  ASSERT_EQ(cpu.debs.size(), 2u);
  EXPECT_EQ(cpu.debs[0].name, "libfoo");
  EXPECT_EQ(cpu.debs[0].version, "1.0-2");
  EXPECT_EQ(cpu.debs[0].sha256, std::string(64, '2'));
  EXPECT_EQ(cpu.debs[0].file, "pool/main/libf/libfoo/libfoo_1.0-2_amd64.deb");
  EXPECT_EQ(cpu.debs[1].name, "libbar");
  EXPECT_EQ(cpu.apt_suite, "bookworm");
  EXPECT_EQ(cpu.AptSourceUrl(), Archive() + "/archive/debian/" + kSnapshot);
}

// gzip -d reads every member of a file; so does lock: a package listed only in the second
// member of a concatenated Packages.gz is found.
TEST_F(AptArchive, APackageInTheSecondGzipMemberOfTheIndexIsFound) {
  Publish({"1.0-1"});
  const fs::path dir =
      dir_.path() / "archive/debian" / kSnapshot / "dists/bookworm/main/binary-amd64";
  testing::WriteFile(dir / "more",
                     "\nPackage: libbaz\nVersion: 3.0-1\nFilename: pool/main/libb/"
                     "libbaz/libbaz_3.0-1_amd64.deb\nSHA256: " +
                         std::string(64, 'c') + "\n");
  ASSERT_EQ(testing::RunCommand({"gzip", "-n", (dir / "more").string()}).exit_code, 0);
  testing::WriteFile(dir / "Packages.gz",
                     testing::ReadFile(dir / "Packages.gz") + testing::ReadFile(dir / "more.gz"));
  const fs::path p = Project("\"libfoo\", \"libbaz\"");
  auto r = RunTrainlock({"lock", p.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Lockfile lock = Lock(p);
  const Target& cpu = lock.targets.at("cpu");
  ASSERT_EQ(cpu.debs.size(), 2u);
  EXPECT_EQ(cpu.debs[1].name, "libbaz");
  EXPECT_EQ(cpu.debs[1].version, "3.0-1");
}

TEST_F(AptArchive, APackageTheIndexDoesNotListIsExit1NamingIt) {
  Publish({"1.0-1"});
  const fs::path p = Project("\"libfoo\", \"libmissing\"");
  auto r = RunTrainlock({"lock", p.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("targets.cpu.debian-packages: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lists no libmissing"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(p / "trainlock.lock"));
}

TEST_F(AptArchive, CheckUpstreamReportsANewerVersionThatCheckOfflineDoesNotAsk) {
  Publish({"1.0-1"});
  const fs::path p = Project();
  ASSERT_EQ(RunTrainlock({"lock", p.string()}).exit_code, 0);
  EXPECT_EQ(RunTrainlock({"lock", p.string(), "--check", "--upstream"}).exit_code, 0);
  Publish({"1.0-1", "1.1-1"});
  auto offline = RunTrainlock({"lock", p.string(), "--check"});
  EXPECT_EQ(offline.exit_code, 0) << offline.err;
  auto upstream = RunTrainlock({"lock", p.string(), "--check", "--upstream"});
  EXPECT_EQ(upstream.exit_code, 1) << upstream.out << upstream.err;
  EXPECT_NE(upstream.err.find("targets.cpu.debs[0].version: \"1.0-1\" but"), std::string::npos)
      << upstream.err;
  EXPECT_NE(upstream.err.find("says \"1.1-1\""), std::string::npos) << upstream.err;
}

// A pin renamed by hand would install another package; the lock's own pool file says so.
TEST_F(AptArchive, APinRenamedByHandIsRefusedOfflineNamingTheField) {
  Publish({"1.0-1"});
  const fs::path p = Project();
  ASSERT_EQ(RunTrainlock({"lock", p.string()}).exit_code, 0);
  ASSERT_EQ(RunTrainlock({"lock", p.string(), "--check"}).exit_code, 0);
  std::string lock = testing::ReadFile(p / "trainlock.lock");
  const std::string pin = "name = 'libfoo'";
  ASSERT_NE(lock.find(pin), std::string::npos) << lock;
  testing::WriteFile(p / "trainlock.lock",
                     lock.replace(lock.find(pin), pin.size(), "name = 'openssh-server'"));
  auto r = RunTrainlock({"lock", p.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("targets.cpu.debs[0].name: 'openssh-server' is not among "
                       "targets.cpu.debian-packages"),
            std::string::npos)
      << r.err;
  auto check = RunTrainlock({"check", p.string()});
  EXPECT_EQ(check.exit_code, 1) << check.out << check.err;
  EXPECT_NE(check.out.find("lock.edited"), std::string::npos) << check.out;
}

TEST_F(AptArchive, APoolFileOfAnotherPackageOrVersionIsRefused) {
  Publish({"1.0-1"});
  const fs::path p = Project();
  ASSERT_EQ(RunTrainlock({"lock", p.string()}).exit_code, 0);
  std::string lock = testing::ReadFile(p / "trainlock.lock");
  const std::string file = "libfoo_1.0-1_amd64.deb";
  ASSERT_NE(lock.find(file), std::string::npos) << lock;
  testing::WriteFile(p / "trainlock.lock",
                     lock.replace(lock.find(file), file.size(), "libfoo_0.9-1_amd64.deb"));
  auto r = RunTrainlock({"lock", p.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("targets.cpu.debs[0].file: 'pool/main/libf/libfoo/libfoo_0.9-1_amd64.deb' "
                       "is not libfoo at '1.0-1'"),
            std::string::npos)
      << r.err;
}

TEST_F(AptArchive, TheContainerfileInstallsExactlyThePinsFromTheSnapshot) {
  const std::string cf = LockedContainerfile();
  EXPECT_NE(cf.find("RUN echo 'deb [check-valid-until=no] " + Archive() + "/archive/debian/" +
                    kSnapshot + " bookworm main' > /etc/apt/trainlock.list"),
            std::string::npos)
      << cf;
  for (const char* step : {"--download-only", "--no-download"}) {
    EXPECT_NE(cf.find("install -y --no-install-recommends --reinstall " + std::string(step) +
                      " \\\n        'libfoo=1.0-1' \\\n        'libbar=2.0-1' && \\\n"),
              std::string::npos)
        << step << "\n"
        << cf;
  }
}

// Each pin's .deb, as apt names it, is compared with the sha256 the index gave the lock, after
// apt's download and before its install (tests/debian_step_test.cc runs the comparison).
TEST_F(AptArchive, TheContainerfileComparesEachPinnedDebWithTheLocksSha256BeforeInstalling) {
  const std::string cf = LockedContainerfile();
  const size_t download = cf.find("--download-only");
  const size_t install = cf.find("--no-download");
  for (const std::string& check :
       {"pinned_deb 'libfoo' '1.0-1' '" + std::string(64, '1') + "' 'libfoo_1.0-1_'",
        "pinned_deb 'libbar' '2.0-1' '" + std::string(64, 'b') + "' 'libbar_2.0-1_'"}) {
    const size_t at = cf.find(check);
    ASSERT_NE(at, std::string::npos) << check << "\n" << cf;
    EXPECT_LT(download, at) << cf;
    EXPECT_LT(at, install) << cf;
  }
}

// env.packages' Debian half, against a planted dpkg database.
class DpkgDatabase : public ::testing::Test {
 protected:
  void Plant(const std::string& foo_version) {
    testing::WriteFile(status(),
                       "Package: libfoo\nStatus: install ok installed\nVersion: " + foo_version +
                           "\n\nPackage: libgone\nStatus: deinstall ok "
                           "config-files\nVersion: 1\n\nPackage: base-files\n"
                           "Status: install ok installed\nVersion: 12.4\n");
  }
  fs::path status() const { return dir_.path() / "status"; }
  CheckResult Compare() {
    PackagesMetrics python;  // what a passing Python comparison states
    python.packages_locked = 2;
    python.packages_installed = 2;
    python.files_problems = 0;
    CheckResult r = Judged("env.packages", ToJson(python), "2 locked distributions");
    CompareDebianPackages({{"libfoo", "1.0-1", "pool/x.deb", std::string(64, 'a')}},
                          ReadDpkgStatus(status()), status(), r);
    return r;
  }
  testing::TempDir dir_;
};

TEST_F(DpkgDatabase, ThePinnedVersionsInstalledPass) {
  Plant("1.0-1");
  const CheckResult r = Compare();
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.summary;
  EXPECT_NE(r.summary.find("1 pinned Debian packages at their versions"), std::string::npos);
  EXPECT_EQ(ReadMetrics<PackagesMetrics>(r.metrics).debs_locked, 1);
}

TEST_F(DpkgDatabase, AnotherVersionInstalledFailsNamingBoth) {
  Plant("1.0-2");
  const CheckResult r = Compare();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("libfoo 1.0-2 (locked 1.0-1)"), std::string::npos) << r.summary;
}

TEST_F(DpkgDatabase, APinnedPackageNotInstalledFails) {
  testing::WriteFile(status(),
                     "Package: base-files\nStatus: install ok installed\n"
                     "Version: 12.4\n");
  const CheckResult r = Compare();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("locked but not installed: libfoo 1.0-1"), std::string::npos)
      << r.summary;
}

TEST_F(DpkgDatabase, NoDatabaseIsASkipThatSaysSoNeverAPass) {
  const CheckResult r = Compare();
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_NE(r.summary.find("the image has no dpkg database"), std::string::npos) << r.summary;
}

}  // namespace
}  // namespace trainlock
