// The image's Python verified before any Python runs (coordinator/image_python.h), through the
// real validator inside a simulated cpu image: a private mount namespace in which
// /etc/trainlock holds the tiny project's lock, manifest, config and image.json, and /opt/venv
// is a venv of the machine's Python holding exactly the two locked wheels, recorded by
// `trainlock-validate record-python-files` as the image build records it. The honest image
// passes env.packages; each planted set-up fails it naming the file, with exit 1.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "image/image_record.h"
#include "image/in_image_paths.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

// The two wheels the tiny lock pins, built byte for byte as the loopback index builds them.
constexpr const char* kWriteDemoWheels = R"PY(
import json, sys
sys.path.insert(0, sys.argv[1])
import pypi_server
for spec in pypi_server.DEMO:
    if (spec["name"], spec["version"]) in [("trainlock-demo-app", "1.0.0"), ("trainlock-demo-util", "1.2.0")]:
        name, data, _ = pypi_server.build_wheel(spec, False)
        open(sys.argv[2] + "/" + name, "wb").write(data)
)PY";

class SimulatedImage : public ::testing::Test {
 protected:
  // The venv with the two locked wheels, made once for the suite (pip is the slow part).
  static void SetUpTestSuite() {
    suite_ = new testing::TempDir();
    const fs::path wheels = suite_->path() / "wheels";
    fs::create_directories(wheels);
    fs::create_directories(suite_->path() / "venv");
    made_venv_ =
        testing::RunCommand({"/usr/bin/python3", "-c", kWriteDemoWheels,
                             (testing::SourceDir() / "tests/servers").string(), wheels.string()});
    if (made_venv_.exit_code != 0) return;
    // Made at /opt/venv (inside a mount namespace), where the image has it.
    made_venv_ = testing::RunCommand(
        {"unshare", "-m", "--propagation", "private", "sh", "-c",
         "mkdir -p /opt/venv && mount --bind " + (suite_->path() / "venv").string() +
             " /opt/venv && /usr/bin/python3 -m venv /opt/venv && /opt/venv/bin/pip install -q "
             "--no-index --no-deps " +
             wheels.string() + "/*.whl"});
  }
  static void TearDownTestSuite() {
    delete suite_;
    suite_ = nullptr;
  }

  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "a mount namespace needs root";
    if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
    if (testing::RunCommand({"unshare", "-m", "true"}).exit_code != 0)
      GTEST_SKIP() << "no mount namespace can be made here";
    ASSERT_EQ(made_venv_.exit_code, 0) << made_venv_.out << made_venv_.err;
    // The mount points stay, empty, when the test ends: another test of the suite may be using
    // them at the same time (ctest -j), and an empty /etc/trainlock or /opt/venv is no image.
    for (const char* mount_point : {kProjectInImage, "/opt/venv"})
      fs::create_directories(mount_point);
    project_ = testing::CopyExample("tiny", tmp_.path() / "project");
    etc_ = testing::CopyExample("tiny", tmp_.path() / "etc");
    const auto copied = testing::RunCommand(
        {"cp", "-a", (suite_->path() / "venv").string(), (tmp_.path() / "venv").string()});
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
    WriteImageRecord();
    const auto recorded = InImage(Validator() + " record-python-files");
    ASSERT_EQ(recorded.exit_code, 0) << recorded.out << recorded.err;
    EXPECT_NE(recorded.out.find("recorded "), std::string::npos) << recorded.out;
  }

  static std::string Validator() { return (testing::BinDir() / "trainlock-validate").string(); }

  // /etc/trainlock/image.json as the build writes it, naming this validator.
  void WriteImageRecord() {
    const Project baked = LoadProject(etc_);
    ImageRecord record;
    record.target = "cpu";
    record.lock_sha256 = baked.lock->lock_build_sha256;
    record.config_sha256 = baked.config_sha256;
    record.base = "127.0.0.1:5000/base@sha256:" + std::string(64, '1');
    record.validator_sha256 = Sha256FileHex(Validator());
    testing::WriteFile(etc_ / "image.json", record.ToJson().dump(2) + "\n");
  }

  // `script` in a private mount namespace with the simulated image's directories in place.
  testing::RunResult InImage(const std::string& script) {
    return testing::RunCommand({"unshare", "-m", "--propagation", "private", "sh", "-c",
                                "set -e; mount --bind " + etc_.string() + " " + kProjectInImage +
                                    " && mount --bind " + (tmp_.path() / "venv").string() +
                                    " /opt/venv && " + script});
  }

  // The validation of the project inside the image, after `plant` ran there: only env.packages
  // unless `whole`. The exit code is the validator's.
  testing::RunResult Validate(const std::string& plant, const std::string& extra = "",
                              const std::string& env = "", bool whole = false) {
    return InImage(plant + " && exec env " + env + " " + Validator() + " " + project_.string() +
                   " --out " + (tmp_.path() / "report.json").string() + " --progress none " +
                   (whole ? "" : "--only env.packages ") + extra);
  }

  std::string Report() const { return testing::ReadFile(tmp_.path() / "report.json"); }
  static std::string CheckSummary(const nlohmann::json& report, const std::string& id) {
    for (const nlohmann::json& c : report["checks"])
      if (c["id"] == id) return c["summary"].get<std::string>();
    return "";
  }

  static testing::TempDir* suite_;
  static testing::RunResult made_venv_;
  testing::TempDir tmp_;
  fs::path project_, etc_;
};

testing::TempDir* SimulatedImage::suite_ = nullptr;
testing::RunResult SimulatedImage::made_venv_;

TEST_F(SimulatedImage, TheHonestImagePassesWithEveryFileOfItsPythonVerified) {
  const auto r = Validate("true", "", "TRAINLOCK_IMAGE_DIGEST=sha256:" + std::string(64, '2'),
                          /*whole=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(Report());
  EXPECT_EQ(report["image"]["digest_source"], "environment") << report["image"];
  EXPECT_NE(Report().find("files of /opt/venv/bin/python3's path"), std::string::npos);
}

TEST_F(SimulatedImage, AStandInAndAPthFilePlantedInSitePackagesFailNamingThem) {
  const auto r = Validate(
      "cd /opt/venv/lib/python3*/site-packages && echo 'print(1)' > torch.py && "
      "echo '/tmp/clean' > redirect.pth && cd /");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string report = Report();
  EXPECT_NE(report.find("site-packages/redirect.pth"), std::string::npos);
  EXPECT_NE(report.find("site-packages/torch.py"), std::string::npos);
}

TEST_F(SimulatedImage, AChangedFileOfAnInstalledDistributionFailsNamingIt) {
  const auto r = Validate(
      "cd /opt/venv/lib/python3*/site-packages && echo 'x = 1' >> trainlock_demo_util/__init__.py "
      "&& cd /");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(Report().find("trainlock_demo_util/__init__.py: sha256"), std::string::npos);
}

TEST_F(SimulatedImage, AnotherInterpreterThanTheImagesFailsNamingBoth) {
  const auto r = Validate("true", "--python /usr/bin/python3");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string report = Report();
  EXPECT_NE(report.find("--python /usr/bin/python3 is not the image's interpreter "
                        "/opt/venv/bin/python3"),
            std::string::npos);
}

TEST_F(SimulatedImage, AStandInPlantedInTheStandardLibraryFailsNamingIt) {
  // The standard library is the machine's: the plant goes into a copy mounted over it.
  if (!fs::is_directory("/usr/lib/python3.11")) GTEST_SKIP() << "not Debian 12's Python 3.11";
  const std::string copy = (tmp_.path() / "stdlib").string();
  const auto r = Validate("cp -a /usr/lib/python3.11 " + copy + " && echo 'print(1)' > " + copy +
                          "/torch.py && mount --bind " + copy + " /usr/lib/python3.11");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(Report().find("/usr/lib/python3.11/torch.py"), std::string::npos);
}

TEST_F(SimulatedImage, AHostCarryingACopyOfTheImagesRecordButNotItsPythonFails) {
  const auto r =
      Validate("umount /opt/venv", "", "TRAINLOCK_IMAGE_DIGEST=sha256:" + std::string(64, '2'));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(Report());
  EXPECT_NE(CheckSummary(report, "env.packages")
                .find("a file of the image's Python is missing: /opt/venv/"),
            std::string::npos);
  EXPECT_TRUE(report["image"].is_null()) << report["image"];  // the claimed digest is not named
}

TEST_F(SimulatedImage, AHostWithoutTheRecordIsNotTheImage) {
  const auto r = Validate("rm /etc/trainlock/python-files.json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(Report().find("python-files.json is missing"), std::string::npos);
}

}  // namespace
}  // namespace trainlock::validate
