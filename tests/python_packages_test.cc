// env.packages: the image Python's installed distributions against the target's locked wheels,
// read from a planted site-packages directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/sha256.h"
#include "checks/installed_files.h"
#include "checks/python_packages.h"
#include "report/check_metrics.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class SitePackages : public ::testing::Test {
 protected:
  fs::path site() const { return dir_.path() / "site-packages"; }

  // A .dist-info holding only `metadata`, no RECORD.
  void InstallMetadataOnly(const std::string& dist_info, const std::string& metadata) {
    fs::create_directories(site() / dist_info);
    testing::WriteFile(site() / dist_info / "METADATA", metadata);
  }
  // A distribution as pip installs one: `files` (relative to site-packages) and METADATA, all
  // listed in RECORD with their sha256 and size; RECORD's own line without, as the spec says.
  void InstallDistribution(const std::string& dist_info, const std::string& metadata,
                           std::map<std::string, std::string> files) {
    files[dist_info + "/METADATA"] = metadata;
    std::string record;
    for (const auto& [rel, content] : files) {
      fs::create_directories((site() / rel).parent_path());
      testing::WriteFile(site() / rel, content);
      record += rel + ",sha256=" + RecordDigestFromHex(Sha256Hex(content)) + "," +
                std::to_string(content.size()) + "\n";
    }
    testing::WriteFile(site() / dist_info / "RECORD", record + dist_info + "/RECORD,,\n");
  }
  void Install(const std::string& name, const std::string& version, const std::string& dir_name,
               std::map<std::string, std::string> files = {}) {
    if (files.empty()) files[dir_name + "/__init__.py"] = "# " + name + "\n";
    InstallDistribution(dir_name + "-" + version + ".dist-info",
                        "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
                            "\nSummary: x\n\nName: not-a-header\n",
                        files);
  }
  // The lock's closure: trainlock-demo 0.3.0 and trainlock-demo-util 1.2.0.
  void InstallTheLockedClosure() {
    Install("trainlock-demo", "0.3.0", "trainlock_demo");
    Install("Trainlock.Demo_Util", "1.2.0", "trainlock_demo_util");
  }
  std::vector<PythonWheel> Locked() const {
    return {{"trainlock-demo", "0.3.0", "", std::string(64, 'a'), ""},
            {"trainlock-demo-util", "1.2.0", "", std::string(64, 'b'), ""}};
  }
  CheckResult Check() {
    return CompareInstalledPackages(Locked(), ScanSitePackages({site()}), {site()});
  }
  // `r` fails and its summary holds `what` and the planted `path`.
  void ExpectFailNaming(const CheckResult& r, const std::string& what, const fs::path& path) {
    EXPECT_EQ(r.status, CheckStatus::kFail) << r.summary;
    EXPECT_NE(r.summary.find(what), std::string::npos) << r.summary;
    EXPECT_NE(r.summary.find(path.string()), std::string::npos) << r.summary;
  }

  testing::TempDir dir_;
};

TEST(NormalizedDistributionName, FollowsPep503) {
  EXPECT_EQ(NormalizedDistributionName("Trainlock.Demo__Util"), "trainlock-demo-util");
  EXPECT_EQ(NormalizedDistributionName("torch"), "torch");
}

TEST_F(SitePackages, TheLockedClosurePasses) {
  InstallTheLockedClosure();
  Install("pip", "24.0", "pip");  // the venv's bootstrap: allowed unlocked, and listed
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.summary;
  const auto m = ReadMetrics<PackagesMetrics>(r.metrics);
  EXPECT_EQ(m.packages_installed, 3);
  EXPECT_EQ(*m.packages_bootstrap, nlohmann::json::array({"pip 24.0"}));
}

TEST_F(SitePackages, AnAddedPackageFailsNamingIt) {
  InstallTheLockedClosure();
  Install("requests", "2.32.3", "requests");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("installed but not in the lock: requests 2.32.3"), std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, ARemovedPackageFailsNamingIt) {
  Install("trainlock-demo", "0.3.0", "trainlock_demo");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("locked but not installed: trainlock-demo-util 1.2.0"),
            std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, AnotherVersionFailsNamingBoth) {
  Install("trainlock-demo", "0.3.0", "trainlock_demo");
  Install("trainlock-demo-util", "1.3.0", "trainlock_demo_util");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("trainlock-demo-util 1.3.0 (locked 1.2.0)"), std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, AVersionSpelledOtherwiseIsTheSame) {
  Install("trainlock-demo", "0.3", "trainlock_demo");
  Install("trainlock-demo-util", "1.2.0", "trainlock_demo_util");
  EXPECT_EQ(Check().status, CheckStatus::kPass);
}

TEST_F(SitePackages, AMalformedMetadataFails) {
  InstallTheLockedClosure();
  InstallMetadataOnly("broken-1.0.dist-info", "Metadata-Version: 2.1\nSummary: no name\n");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("broken-1.0.dist-info: METADATA has no Name"), std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, ALinkedDistInfoIsNotFollowed) {
  InstallTheLockedClosure();
  fs::create_directories(dir_.path() / "elsewhere" / "evil-1.0.dist-info");
  fs::create_directory_symlink(dir_.path() / "elsewhere" / "evil-1.0.dist-info",
                               site() / "evil-1.0.dist-info");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("a link is not followed"), std::string::npos) << r.summary;
}

TEST_F(SitePackages, AnEggInfoFails) {
  InstallTheLockedClosure();
  fs::create_directories(site() / "legacy-1.0.egg-info");
  EXPECT_EQ(Check().status, CheckStatus::kFail);
}

TEST_F(SitePackages, EveryInstalledFileIsVerifiedAgainstItsRecord) {
  InstallTheLockedClosure();
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.summary;
  const auto m = ReadMetrics<PackagesMetrics>(r.metrics);
  EXPECT_EQ(m.files_verified, 4);  // two __init__.py, two METADATA
  EXPECT_EQ(m.files_unhashed, 2);  // the RECORDs
  EXPECT_EQ(m.files_problems, 0);
}

TEST_F(SitePackages, AChangedFileInsideADistributionFailsNamingIt) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "trainlock_demo/__init__.py", "import os; os.system('x')\n");
  const CheckResult r = Check();
  ExpectFailNaming(r, "an installed file differs from its RECORD",
                   site() / "trainlock_demo/__init__.py");
  EXPECT_NE(r.summary.find("trainlock_demo-0.3.0.dist-info's RECORD lists"), std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, AChangedFileOfTheSameSizeFailsByItsHash) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "trainlock_demo/__init__.py", "# trainlock-demX\n");
  ExpectFailNaming(Check(), "sha256=", site() / "trainlock_demo/__init__.py");
}

TEST_F(SitePackages, APthFileNoDistributionOwnsFailsNamingIt) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "zz-evil.pth", "import os; os.system('x')\n");
  ExpectFailNaming(Check(), "no installed distribution owns", site() / "zz-evil.pth");
}

TEST_F(SitePackages, AStrayModuleFailsNamingIt) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "sitecustomize.py", "print('hi')\n");
  ExpectFailNaming(Check(), "no installed distribution owns", site() / "sitecustomize.py");
}

TEST_F(SitePackages, AFileAddedInsideAnOwnedPackageFails) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "trainlock_demo/extra.py", "x = 1\n");
  ExpectFailNaming(Check(), "no installed distribution owns", site() / "trainlock_demo/extra.py");
}

TEST_F(SitePackages, AFileListedInRecordButMissingFailsNamingIt) {
  InstallTheLockedClosure();
  fs::remove(site() / "trainlock_demo_util/__init__.py");
  const CheckResult r = Check();
  ExpectFailNaming(r, "an installed file is missing", site() / "trainlock_demo_util/__init__.py");
  EXPECT_NE(r.summary.find("listed in trainlock_demo_util-1.2.0.dist-info's RECORD"),
            std::string::npos)
      << r.summary;
}

TEST_F(SitePackages, ADistributionWithoutARecordFails) {
  InstallTheLockedClosure();
  fs::remove(site() / "trainlock_demo-0.3.0.dist-info/RECORD");
  ExpectFailNaming(Check(), "cannot be verified", site() / "trainlock_demo-0.3.0.dist-info/RECORD");
}

TEST_F(SitePackages, ARecordLineWithoutAHashFailsWhereTheSpecWantsOne) {
  InstallTheLockedClosure();
  const fs::path record = site() / "trainlock_demo-0.3.0.dist-info/RECORD";
  testing::WriteFile(record, testing::ReadFile(record) + "trainlock_demo/nohash.py,,\n");
  testing::WriteFile(site() / "trainlock_demo/nohash.py", "x = 1\n");
  ExpectFailNaming(Check(), "without a hash", site() / "trainlock_demo/nohash.py");
}

TEST_F(SitePackages, CompiledBytecodeMayGoWithoutAHash) {
  InstallTheLockedClosure();
  const fs::path record = site() / "trainlock_demo-0.3.0.dist-info/RECORD";
  testing::WriteFile(record, testing::ReadFile(record) +
                                 "trainlock_demo/__pycache__/__init__.cpython-311.pyc,,\n");
  testing::WriteFile(site() / "trainlock_demo/__pycache__/__init__.cpython-311.pyc", "pyc");
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.summary;
  EXPECT_EQ(ReadMetrics<PackagesMetrics>(r.metrics).files_unhashed, 3);
}

TEST_F(SitePackages, PycacheOfAnOwnedSourceIsToleratedAndOfNoneIsNot) {
  InstallTheLockedClosure();
  testing::WriteFile(site() / "trainlock_demo/__pycache__/__init__.cpython-311.opt-1.pyc", "pyc");
  const CheckResult tolerated = Check();
  EXPECT_EQ(tolerated.status, CheckStatus::kPass) << tolerated.summary;
  EXPECT_EQ(ReadMetrics<PackagesMetrics>(tolerated.metrics).files_compiled, 1);
  testing::WriteFile(site() / "trainlock_demo/__pycache__/evil.cpython-311.pyc", "pyc");
  ExpectFailNaming(Check(), "no installed distribution owns",
                   site() / "trainlock_demo/__pycache__/evil.cpython-311.pyc");
}

TEST_F(SitePackages, ALinkInsideSitePackagesIsNotFollowed) {
  InstallTheLockedClosure();
  testing::WriteFile(dir_.path() / "elsewhere.py", "x = 1\n");
  fs::create_symlink(dir_.path() / "elsewhere.py", site() / "linked.py");
  ExpectFailNaming(Check(), "a link (not followed)", site() / "linked.py");
}

TEST_F(SitePackages, AnUnpinnedBootstrapOwnsItsOwnPthFile) {
  InstallTheLockedClosure();
  Install("setuptools", "68.1.2", "setuptools",
          {{"setuptools/__init__.py", "#\n"}, {"distutils-precedence.pth", "import os\n"}});
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kPass) << r.summary;
}

TEST_F(SitePackages, AWheelHashTheInstallerRecordedMustBeTheLocks) {
  Install("trainlock-demo-util", "1.2.0", "trainlock_demo_util");
  const std::string other = std::string(64, 'c');
  Install("trainlock-demo", "0.3.0", "trainlock_demo",
          {{"trainlock_demo/__init__.py", "#\n"},
           {"trainlock_demo-0.3.0.dist-info/direct_url.json",
            R"({"url": "file:///w.whl", "archive_info": {"hashes": {"sha256": ")" + other +
                R"("}}})"}});
  const CheckResult r = Check();
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("installed from a wheel of sha256 " + other), std::string::npos)
      << r.summary;
  EXPECT_EQ(ReadMetrics<PackagesMetrics>(r.metrics).wheel_hashes, 1);
}

TEST(RecordFile, ParsesQuotedFieldsAsPythonsCsvWritesThem) {
  std::vector<RecordRow> rows;
  std::string error;
  ASSERT_TRUE(ParseRecord("a.py,sha256=x,3\r\n\"b,\"\"c\"\".py\",,\n", &rows, &error)) << error;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].path, "b,\"c\".py");
  EXPECT_EQ(rows[1].hash, "");
  EXPECT_FALSE(ParseRecord("a.py,sha256=x\n", &rows, &error));
  EXPECT_NE(error.find("line 1 has 2 fields"), std::string::npos) << error;
}

TEST(RecordFile, DigestsAreUrlsafeBase64WithoutPadding) {
  // SHA-256 of no bytes, as a wheel's RECORD spells it.
  EXPECT_EQ(RecordDigestFromHex(Sha256Hex("")), "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

ImagePythonFiles InImage(PythonFilesDiff diff = {}) {
  ImagePythonFiles python;
  python.in_image = true;
  python.record = "/etc/trainlock/python-files.json";
  python.interpreter = "/opt/venv/bin/python3";
  python.walked = true;
  python.diff = std::move(diff);
  return python;
}

TEST(CheckInstalledPackages, OutsideAnImageItSkipsAndCallsTheInterpreterUnverified) {
  Lockfile lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  const CheckResult r = CheckInstalledPackages(lock, "cpu", ImagePythonFiles{}, 5);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_NE(r.summary.find("not inside an image built by trainlock"), std::string::npos);
  EXPECT_NE(r.summary.find("interpreter is unverified"), std::string::npos);
}

TEST(CheckInstalledPackages, WithoutAResolvedClosureItSkips) {
  Lockfile lock;
  lock.targets["cpu"];  // --skip-python left it unresolved
  const CheckResult r = CheckInstalledPackages(lock, "cpu", InImage(), 5);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_NE(r.summary.find("no resolved Python closure"), std::string::npos);
}

TEST(CheckInstalledPackages, AFileAddedToTheImagesPythonFailsNamingItBeforeAnyDistributionIsRead) {
  Lockfile lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  PythonFilesDiff diff;
  diff.added = {"/opt/venv/lib/python3.11/site-packages/redirect.pth"};
  const CheckResult r = CheckInstalledPackages(lock, "cpu", InImage(diff), 5);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("redirect.pth"), std::string::npos) << r.summary;
  const auto m = ReadMetrics<PackagesMetrics>(r.metrics);
  ASSERT_TRUE(m.python_files_added);
  EXPECT_EQ(m.python_files_added->size(), 1u);
}

TEST(CheckInstalledPackages, AMissingRecordOfTheImagesPythonFails) {
  Lockfile lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  ImagePythonFiles python = InImage();
  python.walked = false;
  python.problem = "/etc/trainlock/python-files.json is missing";
  const CheckResult r = CheckInstalledPackages(lock, "cpu", python, 5);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("python-files.json is missing"), std::string::npos);
}

TEST(CheckInstalledPackages, AnotherInterpreterThanTheImagesFailsNamingBoth) {
  Lockfile lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  ImagePythonFiles python = InImage();
  python.walked = false;
  python.problem = "--python /usr/bin/python3 is not the image's interpreter /opt/venv/bin/python3";
  const CheckResult r = CheckInstalledPackages(lock, "cpu", python, 5);
  EXPECT_EQ(r.status, CheckStatus::kFail);
  EXPECT_NE(r.summary.find("/usr/bin/python3"), std::string::npos);
  EXPECT_NE(r.summary.find("/opt/venv/bin/python3"), std::string::npos);
  EXPECT_NE(r.remedy.find("leave out --python"), std::string::npos);
}

}  // namespace
}  // namespace trainlock
