// --only (validators/support/check_selection.h): a check outside it never runs, and a check
// that ran keeps its status whatever --only says.
#include <gtest/gtest.h>

#include "support/check_selection.h"

namespace trainlock::validate {
namespace {

CheckResult Failed(const std::string& id) {
  return {id, CheckStatus::kFail, 1.5, "no LibTorch CUDA library found", "", {}};
}

TEST(CheckSelection, AnUnselectedChecksProbeIsNeverInvoked) {
  bool invoked = false;
  CheckResult c = RunSelected({"train.step"}, "env.packages", [&] {
    invoked = true;
    return Failed("env.packages");
  });
  EXPECT_FALSE(invoked);
  EXPECT_EQ(c.status, CheckStatus::kSkip);
  EXPECT_EQ(c.summary, "not selected (--only)");
}

TEST(CheckSelection, ASelectedCheckRunsAndKeepsWhatItFound) {
  CheckResult c = RunSelected({"env.arch"}, "env.arch", [] { return Failed("env.arch"); });
  EXPECT_EQ(c.status, CheckStatus::kFail);
}

TEST(CheckSelection, OnlyNeverTurnsACheckThatRanIntoASkip) {
  Report report;
  report.checks = {Failed("env.arch"),
                   {"train.step", CheckStatus::kPass, 2, "ok", "", nlohmann::json::object()}};
  report.required = {"train.step", "train.roundtrip"};
  ApplyOnly(report, {"train.step"});
  EXPECT_EQ(report.checks[0].status, CheckStatus::kFail);
  EXPECT_EQ(report.checks[0].summary, "no LibTorch CUDA library found");
  EXPECT_EQ(report.Verdict(), "fail");
  EXPECT_EQ(report.required, std::vector<std::string>{"train.step"});
}

}  // namespace
}  // namespace trainlock::validate
