// Hostile report.json files through the commands that read them (`trainlock report`, `plan`,
// `fleet summarize`, all through ReadReportFile and base/json_file.h): nesting deeper than 64,
// a number beyond a double and a member named twice are bad input, exit 2 with
// report.json:line:column, never exit 3 with a JSON library's exception text.
#include <gtest/gtest.h>

#include <string>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class HostileReport : public ::testing::Test {
 protected:
  // Writes `text` as report.json and runs trainlock with `args` then its path.
  testing::RunResult Run(std::vector<std::string> args, const std::string& text) {
    const fs::path report = dir_.path() / "report.json";
    testing::WriteFile(report, text);
    args.push_back(report.string());
    return testing::RunTrainlock(args);
  }
  std::string Path() const { return (dir_.path() / "report.json").string(); }

  testing::TempDir dir_;
};

const std::string kDeep = std::string(10000, '[') + std::string(10000, ']');
const std::string kDeepRefusal =
    ":1:65: error: JSON nested deeper than 64 levels of arrays and objects\n";

TEST_F(HostileReport, TenThousandLevelsDeepIsExit2ForReport) {
  auto r = Run({"report"}, kDeep);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Path() + kDeepRefusal);
}

TEST_F(HostileReport, TenThousandLevelsDeepIsExit2ForPlan) {
  auto r = Run({"plan"}, kDeep);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Path() + kDeepRefusal);
}

TEST_F(HostileReport, TenThousandLevelsDeepIsAnUnreadableRowInAFleetSummary) {
  testing::WriteFile(dir_.path() / "node-1.json", kDeep);
  auto r = testing::RunTrainlock({"fleet", "summarize", dir_.path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE((r.out + r.err).find("JSON nested deeper than 64 levels"), std::string::npos)
      << r.out << r.err;
}

TEST_F(HostileReport, ANumberBeyondADoubleIsExit2NotALibraryError) {
  auto r = Run({"report"}, "{\"schema\": \"trainlock.report/v2\",\n \"duration_s\": 1e999}");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Path() + ":2:16: error: number '1e999' is beyond the range of a double\n");
}

TEST_F(HostileReport, AVerdictNamedTwiceIsExit2) {
  auto r = Run({"report"}, R"({"verdict": "fail", "verdict": "pass"})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, Path() + ":1:21: error: member 'verdict' appears twice in one object\n");
}

}  // namespace
}  // namespace trainlock
