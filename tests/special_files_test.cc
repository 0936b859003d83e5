// Every command that reads a file refuses a FIFO or a device planted in its place, at once:
// exit 2 with `path: error: not a regular file`, never a hang on an open() that waits for a
// writer or a read of /dev/zero that never ends. Each command runs under `timeout`, so a
// regression fails the test instead of stalling the suite.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

enum class Planted { kFifo, kDevice };

struct Command {
  const char* name;
  // Where the planted file goes, relative to a copy of examples/tiny ("" for a file beside it).
  const char* target;
  // The arguments, given the project copy and the planted file.
  std::vector<std::string> (*args)(const fs::path& project, const fs::path& planted);
};

const Command kCommands[] = {
    {"check", "trainlock.toml",
     [](const fs::path& p, const fs::path&) {
       return std::vector<std::string>{"check", p.string()};
     }},
    {"lock", "trainlock.toml",
     [](const fs::path& p, const fs::path&) {
       return std::vector<std::string>{"lock", p.string(), "--offline"};
     }},
    {"hash", "trainlock.lock",
     [](const fs::path& p, const fs::path&) {
       return std::vector<std::string>{"hash", p.string()};
     }},
    {"report", "../report.json",
     [](const fs::path&, const fs::path& f) {
       return std::vector<std::string>{"report", f.string()};
     }},
    {"gate", "../report.json",
     [](const fs::path& p, const fs::path& f) {
       return std::vector<std::string>{"gate", f.string(), "--lock", p.string()};
     }},
    {"gate_key", "../key.pub",
     [](const fs::path& p, const fs::path& f) {
       return std::vector<std::string>{
           "gate",   (testing::SourceDir() / "tests/fixtures/reports/tiny-report.json").string(),
           "--lock", p.string(),
           "--key",  f.string()};
     }},
    {"plan", "../report.json",
     [](const fs::path&, const fs::path& f) {
       return std::vector<std::string>{"plan", f.string()};
     }},
    {"inspect", "../libops.so",
     [](const fs::path&, const fs::path& f) {
       return std::vector<std::string>{"inspect", f.string()};
     }},
};

class SpecialFileInput : public ::testing::TestWithParam<std::tuple<Command, Planted>> {};

TEST_P(SpecialFileInput, IsRefusedAtOnceAsNotARegularFile) {
  const auto& [command, planted] = GetParam();
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path() / "project");
  const fs::path file = (project / command.target).lexically_normal();
  fs::remove(file);
  if (planted == Planted::kFifo) {
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  } else {
    fs::create_symlink("/dev/zero", file);
  }
  std::vector<std::string> argv = {"timeout", "60", (testing::BinDir() / "trainlock").string()};
  for (std::string& a : command.args(project, file)) argv.push_back(std::move(a));
  const auto start = std::chrono::steady_clock::now();
  testing::RunResult r = testing::RunCommand(argv);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(file.string() + ": error: not a regular file"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 10.0);
}

std::string CaseName(const ::testing::TestParamInfo<SpecialFileInput::ParamType>& info) {
  const auto& [command, planted] = info.param;
  return std::string(command.name) + (planted == Planted::kFifo ? "_Fifo" : "_DevZero");
}

INSTANTIATE_TEST_SUITE_P(EveryCommand, SpecialFileInput,
                         ::testing::Combine(::testing::ValuesIn(kCommands),
                                            ::testing::Values(Planted::kFifo, Planted::kDevice)),
                         CaseName);

}  // namespace
}  // namespace trainlock
