// The golden digest end to end on examples/tiny (CPU): four simulated nodes validate the same
// lock, one of them under --negative-control bitflip (one weight's lowest mantissa bit flipped
// after the first step, before the checkpoint). Its own round trip still resumes bitwise: only
// the golden digest tells, and `trainlock fleet summarize` names that node and no other.
//
// One round here (four validations, two at a time, about a minute under the sanitizers);
// bench/golden_bitflip.sh repeats it 20 times with the flipped node moving, which is too slow
// for the suite.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "validator/report_checks.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// One node's validation of a fresh copy of examples/tiny, its report at reports/<node>.json.
testing::RunResult ValidateNode(const fs::path& root, const std::string& node, bool flip) {
  const fs::path project = root / node;
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  std::vector<std::string> args = {"validate",  project.string(),
                                   "--out",     (root / "reports" / (node + ".json")).string(),
                                   "--threads", "1",
                                   "--only",    "train.roundtrip"};
  if (flip) args.insert(args.end(), {"--negative-control", "bitflip"});
  return testing::RunProgram("trainlock", args,
                             {"TRAINLOCK_NODE_NAME=" + node, "TMPDIR=" + project.string()});
}

TEST(GoldenBitflip, OfFourNodesTheOneWithAFlippedBitIsNamedAndNoOther) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "reports");
  const std::vector<std::string> nodes = {"node-1", "node-2", "node-3", "node-4"};
  const std::string flipped = "node-3";
  for (size_t i = 0; i < nodes.size(); i += 2) {  // two at a time: the CI machine has two cores
    auto first = std::async(std::launch::async, [&, i] {
      return ValidateNode(dir.path(), nodes[i], nodes[i] == flipped);
    });
    const testing::RunResult second =
        ValidateNode(dir.path(), nodes[i + 1], nodes[i + 1] == flipped);
    const testing::RunResult one = first.get();
    ASSERT_NE(one.exit_code, 2) << one.err;
    ASSERT_NE(second.exit_code, 2) << second.err;
  }
  for (const std::string& node : nodes) {
    const json report = json::parse(testing::ReadFile(dir.path() / "reports" / (node + ".json")));
    // The flipped node's own resume agrees with itself: no check of its own sees the flip.
    EXPECT_EQ(testing::ReportCheck(report, "train.roundtrip")["status"], "pass") << node;
    ASSERT_TRUE(report["golden"].is_object()) << node << ": " << report.dump(2);
    EXPECT_EQ(report["golden"]["key"]["gpu"], "cpu");
  }
  const testing::RunResult summary =
      testing::RunTrainlock({"fleet", "summarize", (dir.path() / "reports").string(), "--json"});
  EXPECT_EQ(summary.exit_code, 1) << summary.out << summary.err;
  const json out = json::parse(summary.out);
  ASSERT_EQ(out["golden"].size(), 1u) << out.dump(2);
  EXPECT_EQ(out["golden"][0]["differing"], json({flipped})) << out.dump(2);
  EXPECT_EQ(out["golden"][0]["nodes"].size(), 4u);
}

}  // namespace
}  // namespace trainlock
