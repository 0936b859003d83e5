// Reading inputs and writing outputs as base/file_io promises: inputs without a size are read
// to their end under the cap, and an atomic write goes through a temporary file nobody could
// have prepared.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/file_io.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

TEST(ReadInputFile, AProcFileThatReportsNoSizeIsReadToItsEnd) {
  const std::string text = ReadInputFile("/proc/self/status", "/proc/self/status");
  EXPECT_NE(text.find("Name:"), std::string::npos);
  EXPECT_NE(text.find("Pid:"), std::string::npos);
}

TEST(WriteFileAtomically, ALinkPlantedAtThePredictableTemporaryNameIsNotFollowed) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "victim", "precious");
  // The name the temporary file used to have: the file's name, ".tmp." and the process id.
  fs::create_symlink(dir.path() / "victim",
                     dir.path() / (".report.json.tmp." + std::to_string(::getpid())));
  WriteFileAtomically(dir.path() / "report.json", "{}\n");
  EXPECT_EQ(testing::ReadFile(dir.path() / "victim"), "precious");
  EXPECT_EQ(testing::ReadFile(dir.path() / "report.json"), "{}\n");
}

}  // namespace
}  // namespace trainlock
