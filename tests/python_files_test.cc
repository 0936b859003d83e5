// The image Python's loadable files (checks/python_files.h): recorded at build time, walked
// again before any Python runs, and every file added, changed or missing on the path named.
// The trees here are planted: an interpreter, a venv, a standard library and a site-packages
// laid out as an image's are, with a Python version no host has (python3.99), so nothing of
// the machine's own Python is read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "checks/python_files.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class PythonFilesTree : public ::testing::Test {
 protected:
  void SetUp() override {
    Write("usr/bin/python3.99",
          "\x7f"
          "ELF interpreter");
    ::chmod(At("usr/bin/python3.99").c_str(), 0755);
    fs::create_directories(At("venv/bin"));
    fs::create_symlink(At("usr/bin/python3.99"), At("venv/bin/python3"));
    Write("venv/pyvenv.cfg", "home = " + At("usr/bin").string() + "\n");
    Write("usr/lib/python3.99/os.py", "# os\n");
    Write("usr/lib/python3.99/json/__init__.py", "# json\n");
    Write("usr/lib/python3.99/lib-dynload/_ssl.so",
          "\x7f"
          "ELF ssl");
    Write("venv/lib/python3.99/site-packages/torch/__init__.py", "# the locked torch\n");
    Write("venv/lib/python3.99/site-packages/torch/lib/libtorch.so",
          "\x7f"
          "ELF torch");
    record_.interpreter = At("venv/bin/python3").string();
    record_.sys_path = {At("usr/lib/python399.zip").string(), At("usr/lib/python3.99").string(),
                        At("usr/lib/python3.99/lib-dynload").string(),
                        At("venv/lib/python3.99/site-packages").string()};
    record_.files = WalkPythonFiles(record_.interpreter, record_.sys_path, Deadline::max());
  }

  fs::path At(const std::string& rel) const { return dir_.path() / rel; }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories(At(rel).parent_path());
    testing::WriteFile(At(rel), text);
  }
  PythonFilesDiff Verify() const { return VerifyPythonFiles(record_, Deadline::max()); }

  testing::TempDir dir_;
  PythonFiles record_;
};

TEST_F(PythonFilesTree, AnUnchangedTreeVerifiesEveryRecordedFile) {
  const PythonFilesDiff diff = Verify();
  EXPECT_EQ(diff.problems(), 0);
  // os.py, json/__init__.py, _ssl.so, torch/__init__.py, libtorch.so, pyvenv.cfg
  EXPECT_EQ(diff.files_verified, 6);
}

TEST_F(PythonFilesTree, TheInterpreterItselfIsRecordedThroughItsLink) {
  bool found = false;
  for (const PythonFile& f : record_.files) {
    if (f.path != record_.interpreter) continue;
    found = true;
    EXPECT_EQ(f.kind, PythonFile::Kind::kLink);
    EXPECT_EQ(f.link, At("usr/bin/python3.99").string());
    EXPECT_EQ(f.size, 16);
  }
  EXPECT_TRUE(found);
}

TEST_F(PythonFilesTree, AnotherInterpreterBinaryIsNamedChanged) {
  Write("usr/bin/python3.99",
        "\x7f"
        "ELF another one");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_NE(diff.changed[0].find(record_.interpreter + ": sha256"), std::string::npos);
}

TEST_F(PythonFilesTree, APthFileAddedToSitePackagesIsNamed) {
  Write("venv/lib/python3.99/site-packages/redirect.pth", "import os\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0], At("venv/lib/python3.99/site-packages/redirect.pth").string());
}

TEST_F(PythonFilesTree, AModuleAddedToTheStandardLibraryIsNamed) {
  Write("usr/lib/python3.99/torch.py", "print('a stand-in')\n");
  Write("usr/lib/python3.99/sitecustomize.py", "import sys\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.added.size(), 2u);
  EXPECT_EQ(diff.added[0], At("usr/lib/python3.99/sitecustomize.py").string());
  EXPECT_EQ(diff.added[1], At("usr/lib/python3.99/torch.py").string());
}

TEST_F(PythonFilesTree, AChangedFileIsNamedWithBothHashes) {
  Write("venv/lib/python3.99/site-packages/torch/__init__.py", "# a stand-in torch!\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_NE(diff.changed[0].find("torch/__init__.py: sha256 "), std::string::npos);
  EXPECT_NE(diff.changed[0].find(", recorded "), std::string::npos);
}

TEST_F(PythonFilesTree, ARemovedFileIsNamedMissing) {
  fs::remove(At("usr/lib/python3.99/lib-dynload/_ssl.so"));
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.missing.size(), 1u);
  EXPECT_EQ(diff.missing[0], At("usr/lib/python3.99/lib-dynload/_ssl.so").string());
}

TEST_F(PythonFilesTree, AModeChangeIsNamed) {
  ::chmod(At("venv/lib/python3.99/site-packages/torch/lib/libtorch.so").c_str(), 0777);
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_NE(diff.changed[0].find("mode 0777, recorded"), std::string::npos) << diff.changed[0];
}

TEST_F(PythonFilesTree, APyvenvCfgChangedToIncludeTheBaseSitePackagesIsNamed) {
  Write("venv/pyvenv.cfg",
        "home = " + At("usr/bin").string() + "\ninclude-system-site-packages = true\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_NE(diff.changed[0].find("pyvenv.cfg"), std::string::npos);
}

TEST_F(PythonFilesTree, AnInterpreterLinkPointedElsewhereIsNamed) {
  Write("usr/bin/python3.98",
        "\x7f"
        "ELF interpreter");
  fs::remove(At("venv/bin/python3"));
  fs::create_symlink(At("usr/bin/python3.98"), At("venv/bin/python3"));
  const PythonFilesDiff diff = Verify();
  ASSERT_FALSE(diff.changed.empty());
  EXPECT_NE(diff.changed[0].find("links to"), std::string::npos) << diff.changed[0];
}

TEST_F(PythonFilesTree, SourcelessBytecodeIsRefusedEvenWhenTheBuildRecordedIt) {
  Write("venv/lib/python3.99/site-packages/torch/stand_in.pyc", "bytecode");
  record_.files = WalkPythonFiles(record_.interpreter, record_.sys_path, Deadline::max());
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.refused.size(), 1u);
  EXPECT_NE(diff.refused[0].find("sourceless bytecode"), std::string::npos);
}

TEST_F(PythonFilesTree, PycacheDirectoriesAreNeitherRecordedNorAFinding) {
  // The engine reads bytecode only under its own pycache prefix (engine_command.h).
  Write("usr/lib/python3.99/__pycache__/os.cpython-399.pyc", "planted bytecode");
  EXPECT_EQ(Verify().problems(), 0);
  for (const PythonFile& f : record_.files)
    EXPECT_EQ(f.path.find("__pycache__"), std::string::npos) << f.path;
}

TEST_F(PythonFilesTree, ADirectoryOfThePathThatAppearsAfterTheBuildIsNamed) {
  Write("usr/lib/python399.zip", "PK a zipped standard library first on the path");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0], At("usr/lib/python399.zip").string());
}

TEST_F(PythonFilesTree, AStandardLibraryLandmarkPlantedAboveTheInterpreterIsNamed) {
  // getpath would take usr/bin as the prefix and load the standard library from there.
  Write("usr/bin/lib/python3.99/os.py", "# another standard library\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0], At("usr/bin/lib/python3.99/os.py").string());
}

TEST_F(PythonFilesTree, AFifoOnThePathIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(At("venv/lib/python3.99/site-packages/hang.py").c_str(), 0644), 0);
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.refused.size(), 1u);
  EXPECT_NE(diff.refused[0].find("not a file, link or directory"), std::string::npos);
}

TEST_F(PythonFilesTree, ALinkCycleIsWalkedOnce) {
  fs::create_directory_symlink(At("venv/lib/python3.99"),
                               At("venv/lib/python3.99/site-packages/loop"));
  record_.files = WalkPythonFiles(record_.interpreter, record_.sys_path, Deadline::max());
  EXPECT_EQ(Verify().problems(), 0);
}

TEST_F(PythonFilesTree, AFileReachedThroughADirectoryLinkIsVerified) {
  Write("elsewhere/extra.py", "# outside the trees\n");
  fs::create_directory_symlink(At("elsewhere"), At("venv/lib/python3.99/site-packages/extra"));
  record_.files = WalkPythonFiles(record_.interpreter, record_.sys_path, Deadline::max());
  Write("elsewhere/extra.py", "# changed where the link leads\n");
  const PythonFilesDiff diff = Verify();
  ASSERT_EQ(diff.changed.size(), 1u);
  EXPECT_NE(diff.changed[0].find("site-packages/extra/extra.py"), std::string::npos);
}

TEST_F(PythonFilesTree, TheRecordReadsBackAsWritten) {
  testing::WriteFile(At("python-files.json"), PythonFilesJson(record_));
  const PythonFiles back = ReadPythonFiles(At("python-files.json"));
  EXPECT_EQ(back.interpreter, record_.interpreter);
  EXPECT_EQ(back.sys_path, record_.sys_path);
  EXPECT_EQ(PythonFilesJson(back), PythonFilesJson(record_));
  EXPECT_EQ(VerifyPythonFiles(back, Deadline::max()).problems(), 0);
}

TEST_F(PythonFilesTree, ARecordWithEntriesOutOfOrderIsRefusedNamingTheEntry) {
  std::swap(record_.files[1], record_.files[2]);
  testing::WriteFile(At("python-files.json"), PythonFilesJson(record_));
  try {
    ReadPythonFiles(At("python-files.json"));
    FAIL() << "read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("files[2] is out of order"), std::string::npos)
        << e.what();
  }
}

TEST(PythonFilesRecord, AFileEntryWithoutASha256IsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "r.json",
                     R"({"schema": "trainlock.python-files/v1", "interpreter": "/p",
                         "sys_path": ["/l"], "files": [{"path": "/l/a.py", "kind": "file"}]})");
  EXPECT_THROW(ReadPythonFiles(dir.path() / "r.json"), std::runtime_error);
}

TEST(PythonFilesRecord, ARelativePathIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "r.json",
                     R"({"schema": "trainlock.python-files/v1", "interpreter": "/p",
                         "sys_path": ["lib"], "files": []})");
  EXPECT_THROW(ReadPythonFiles(dir.path() / "r.json"), std::runtime_error);
}

TEST(SiteDirectoriesOf, OnlySitePackagesAndDistPackagesHoldDistributions) {
  EXPECT_EQ(SiteDirectoriesOf({"/usr/lib/python3.11", "/usr/lib/python3.11/lib-dynload",
                               "/opt/venv/lib/python3.11/site-packages",
                               "/usr/lib/python3/dist-packages"}),
            (std::vector<fs::path>{"/opt/venv/lib/python3.11/site-packages",
                                   "/usr/lib/python3/dist-packages"}));
}

// The real thing: a venv of the machine's Python, recorded as the image build records it.
TEST(RecordPythonFiles, AVenvOfTheHostsPythonRecordsItsPathAndAPlantedPthIsFound) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  testing::TempDir dir;
  const fs::path venv = dir.path() / "venv";
  const auto made =
      testing::RunCommand({"/usr/bin/python3", "-m", "venv", "--without-pip", venv.string()});
  if (made.exit_code != 0) GTEST_SKIP() << "python3 -m venv: " << made.err;
  const PythonFiles record = RecordPythonFiles(
      venv / "bin" / "python3", std::chrono::steady_clock::now() + std::chrono::minutes(5));
  ASSERT_FALSE(SiteDirectoriesOf(record.sys_path).empty());
  const fs::path site = SiteDirectoriesOf(record.sys_path).back();
  EXPECT_EQ(site.parent_path().parent_path().parent_path(), fs::weakly_canonical(venv));
  EXPECT_EQ(VerifyPythonFiles(record, Deadline::max()).problems(), 0);
  testing::WriteFile(site / "redirect.pth", "import sys\n");
  const PythonFilesDiff diff = VerifyPythonFiles(record, Deadline::max());
  ASSERT_EQ(diff.added.size(), 1u);
  EXPECT_EQ(diff.added[0], (site / "redirect.pth").string());
}

}  // namespace
}  // namespace trainlock
