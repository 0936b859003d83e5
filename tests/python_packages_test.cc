// env.packages: the image Python's installed distributions against the target's locked wheels,
// read from a planted site-packages directory.
#include <gtest/gtest.h>

#include <filesystem>

#include "checks/python_packages.h"
#include "report/check_metrics.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class SitePackages : public ::testing::Test {
 protected:
  fs::path site() const { return dir_.path() / "site-packages"; }

  void Install(const std::string& dist_info, const std::string& metadata) {
    fs::create_directories(site() / dist_info);
    testing::WriteFile(site() / dist_info / "METADATA", metadata);
  }
  void Install(const std::string& name, const std::string& version, const std::string& dir_name) {
    Install(dir_name + "-" + version + ".dist-info", "Metadata-Version: 2.1\nName: " + name +
                                                         "\nVersion: " + version +
                                                         "\nSummary: x\n\nName: not-a-header\n");
  }
  // The lock's closure: trainlock-demo 0.3.0 and trainlock-demo-util 1.2.0.
  void InstallTheLockedClosure() {
    Install("trainlock-demo", "0.3.0", "trainlock_demo");
    Install("Trainlock.Demo_Util", "1.2.0", "trainlock_demo_util");
  }
  std::vector<PythonWheel> Locked() const {
    return {{"trainlock-demo", "0.3.0", "", "", ""}, {"trainlock-demo-util", "1.2.0", "", "", ""}};
  }
  CheckResult Check() {
    return CompareInstalledPackages(Locked(), ScanSitePackages({site()}), {site()});
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
  Install("broken-1.0.dist-info", "Metadata-Version: 2.1\nSummary: no name\n");
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

TEST(CheckInstalledPackages, OutsideAnImageItSkips) {
  Spec lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  const CheckResult r = CheckInstalledPackages(lock, "cpu", false, "/nonexistent/python3", 5);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_NE(r.summary.find("not inside an image built by trainlock"), std::string::npos);
}

TEST(CheckInstalledPackages, WithoutAResolvedClosureItSkips) {
  Spec lock;
  lock.targets["cpu"];  // --skip-python left it unresolved
  const CheckResult r = CheckInstalledPackages(lock, "cpu", true, "/nonexistent/python3", 5);
  EXPECT_EQ(r.status, CheckStatus::kSkip);
  EXPECT_NE(r.summary.find("no resolved Python closure"), std::string::npos);
}

TEST(CheckInstalledPackages, AnImagePythonThatCannotAnswerIsAnError) {
  Spec lock;
  lock.targets["cpu"].wheels = std::vector<PythonWheel>{};
  const CheckResult r = CheckInstalledPackages(lock, "cpu", true, "/nonexistent/python3", 5);
  EXPECT_EQ(r.status, CheckStatus::kError);
}

TEST(PythonSitePackages, TheHostsPythonNamesItsDirectories) {
  std::string error;
  const auto dirs = PythonSitePackages("/usr/bin/python3", 30, &error);
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no python3";
  ASSERT_FALSE(dirs.empty()) << error;
  EXPECT_TRUE(dirs.front().is_absolute());
}

}  // namespace
}  // namespace trainlock
