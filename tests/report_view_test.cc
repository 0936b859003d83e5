// Specification of the one way to read a report (report_view.h): a tampered report reads as
// empty facts, never an exception; and the one failing rule (report.h, IsFailingCheck) judges a
// check alike in the verdict, the gate and the fleet summary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/time_text.h"
#include "compat/catalog.h"
#include "fleet/fleet.h"
#include "project/project.h"
#include "report/gate.h"
#include "report/report.h"
#include "report/report_view.h"
#include "test_support.h"

namespace trainlock {
namespace {

using nlohmann::json;
using testing::ReadFile;
using testing::SourceDir;

json TinyReport() {
  return json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
}

// ---- Reading ----

TEST(ReportView, ReadsTheFactsOfAValidatorReport) {
  ReportView v = ViewOfReport(TinyReport());
  EXPECT_EQ(v.project, "tiny");
  EXPECT_EQ(v.verdict, "pass");
  EXPECT_EQ(v.build, "cpu");
  EXPECT_EQ(v.checks.size(), 19u);
  EXPECT_EQ(v.required, (std::vector<std::string>{"train.step", "train.roundtrip", "train.eval",
                                                  "ckpt.portable"}));
  EXPECT_EQ(v.Count("pass"), 5);
  EXPECT_FALSE(v.host.hostname.empty());
}

TEST(ReportView, ADocumentThatIsNotAnObjectReadsAsAnEmptyReport) {
  for (const json& document : {json::array({1, 2}), json("report"), json(nullptr), json(3)}) {
    ReportView v = ViewOfReport(document);
    EXPECT_EQ(v.verdict, "");
    EXPECT_TRUE(std::isnan(v.duration_s));
    EXPECT_TRUE(v.checks.empty());
    EXPECT_TRUE(v.devices.empty());
  }
}

TEST(ReportView, MembersOfTheWrongTypeReadAsEmpty) {
  json report = {{"verdict", 1},      {"lock_sha256", json::array()},  {"image", "x"},
                 {"validator", 3},    {"started_at", false},           {"duration_s", "12"},
                 {"host", {1, 2}},    {"devices", {{"name", "H200"}}}, {"checks", "all passed"},
                 {"required", "all"}, {"ranks", json::object()}};
  ReportView v = ViewOfReport(report);
  EXPECT_EQ(v.verdict, "");
  EXPECT_EQ(v.lock_sha256, "");
  EXPECT_EQ(v.image_digest, "");
  EXPECT_EQ(v.build, "");
  EXPECT_EQ(v.started_at, "");
  EXPECT_TRUE(std::isnan(v.duration_s));
  EXPECT_EQ(v.host.hostname, "");
  EXPECT_TRUE(v.devices.empty());
  EXPECT_TRUE(v.checks.empty());
  EXPECT_TRUE(v.required.empty());
  EXPECT_TRUE(v.ranks.empty());
}

TEST(ReportView, MissingMembersReadAsEmpty) {
  ReportView v = ViewOfReport(json::object());
  EXPECT_EQ(v.project, "");
  EXPECT_EQ(v.image_ref, "");
  EXPECT_FALSE(v.host.memory_bytes);
  EXPECT_TRUE(std::isnan(v.duration_s));
  EXPECT_EQ(v.FindCheck("train.step"), nullptr);
}

TEST(ReportView, AnEntryOfTheWrongTypeKeepsItsPlaceWithEmptyFacts) {
  json report = {{"devices", {"H200", {{"name", 7}, {"memory_bytes", "80 GB"}}}},
                 {"checks",
                  {3,
                   {{"id", 5},
                    {"status", true},
                    {"duration_s", "1"},
                    {"summary", nullptr},
                    {"metrics", json::array()}}}}};
  ReportView v = ViewOfReport(report);
  ASSERT_EQ(v.devices.size(), 2u);
  EXPECT_EQ(v.devices[1].name, "");
  EXPECT_FALSE(v.devices[1].memory_bytes);
  ASSERT_EQ(v.checks.size(), 2u);
  EXPECT_EQ(v.checks[1].id, "");
  EXPECT_EQ(v.checks[1].status, "");
  EXPECT_TRUE(std::isnan(v.checks[1].duration_s));
  EXPECT_EQ(v.checks[1].metrics, json::object());
}

TEST(ReportView, RequiredKeepsOnlyItsStrings) {
  ReportView v = ViewOfReport({{"required", {"train.step", 3, nullptr, "train.eval"}}});
  EXPECT_EQ(v.required, (std::vector<std::string>{"train.step", "train.eval"}));
  EXPECT_TRUE(v.IsRequired("train.eval"));
  EXPECT_FALSE(v.IsRequired("env.driver"));
}

TEST(ReportView, ARankEntryOfTheWrongTypeIsAnUnknownRank) {
  ReportView v = ViewOfReport({{"ranks", {7, {{"rank", "1"}, {"train", "fast"}}}}});
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[0].rank, "?");
  EXPECT_EQ(v.ranks[1].rank, "?");
  EXPECT_FALSE(v.ranks[1].tokens_per_s);
}

TEST(ReportView, FindCheckFindsTheFirstCheckWithTheId) {
  ReportView v = ViewOfReport(
      {{"checks",
        {{{"id", "train.step"}, {"status", "pass"}}, {{"id", "train.step"}, {"status", "fail"}}}}});
  ASSERT_NE(v.FindCheck("train.step"), nullptr);
  EXPECT_EQ(v.FindCheck("train.step")->status, "pass");
  EXPECT_EQ(v.FindCheck("train.eval"), nullptr);
}

// ---- The failing rule ----

// What the verdict, the gate and the fleet summary each make of one check, after its status
// is set in the tiny example's passing report (examples/tiny: train.eval is required,
// env.versions is not).
struct Judgements {
  bool verdict_fails = false;
  bool gate_refuses = false;  // a reason of the gate names the check
  bool fleet_lists = false;   // the fleet summary lists it among the node's failing checks

  bool operator==(const Judgements&) const = default;
};

void PrintTo(const Judgements& j, std::ostream* os) {
  *os << "{verdict_fails " << j.verdict_fails << ", gate_refuses " << j.gate_refuses
      << ", fleet_lists " << j.fleet_lists << "}";
}

constexpr Judgements kFailing = {true, true, true};
constexpr Judgements kNotFailing = {false, false, false};

CheckStatus StatusOf(const std::string& name) {
  for (CheckStatus s : {CheckStatus::kPass, CheckStatus::kFail, CheckStatus::kSkip}) {
    if (name == CheckStatusName(s)) return s;
  }
  return CheckStatus::kError;
}

// The report as the validator would have built it: its checks and required list.
Report ReportOf(const json& report) {
  Report r;
  for (const json& c : report["checks"])
    r.checks.push_back({c["id"].get<std::string>(), StatusOf(c["status"].get<std::string>()), 0,
                        c["summary"].get<std::string>(), "", json::object()});
  r.required = report["required"].get<std::vector<std::string>>();
  return r;
}

class FailingRule : public ::testing::Test {
 protected:
  void SetUp() override { project_ = LoadProject(SourceDir() / "examples/tiny"); }

  // `status` "" removes the check from the report.
  Judgements Judge(const std::string& id, const std::string& status) {
    json report = TinyReport();
    report["lock_sha256"] = project_.lock_sha256;
    json& checks = report["checks"];
    auto it =
        std::find_if(checks.begin(), checks.end(), [&](const json& c) { return c["id"] == id; });
    if (status.empty()) {
      checks.erase(it);
    } else {
      (*it)["status"] = status;
    }
    Judgements j;
    const std::string verdict = ReportOf(report).Verdict();
    report["verdict"] = verdict;
    j.verdict_fails = verdict == "fail";
    j.gate_refuses = GateNames(report, id);
    j.fleet_lists = FleetLists(report, id);
    return j;
  }

  bool GateNames(const json& report, const std::string& id) {
    GateRequest request;
    request.report_path = "report.json";
    request.report_text = report.dump(2);
    request.lock = &*project_.lock;
    request.lock_path = "trainlock.lock";
    request.lock_sha256 = project_.lock_sha256;
    request.now_s = *ParseRfc3339(report["started_at"].get<std::string>()) + 60;
    GateDecision d = EvaluateGate(request, Catalog::Embedded());
    return std::any_of(d.reasons.begin(), d.reasons.end(),
                       [&](const std::string& r) { return r.find(id) != std::string::npos; });
  }

  static bool FleetLists(const json& report, const std::string& id) {
    testing::TempDir dir;
    testing::WriteFile(dir.path() / "node-1.json", report.dump(2));
    FleetSummary summary = SummarizeReports(dir.path(), "reports");
    const std::vector<FailingCheck>& failing = summary.nodes.at(0).failing;
    return std::any_of(failing.begin(), failing.end(),
                       [&](const FailingCheck& c) { return c.id == id; });
  }

  Project project_;
};

TEST_F(FailingRule, APassingReportHasNoFailingCheck) {
  EXPECT_EQ(Judge("train.eval", "pass"), kNotFailing);
}

TEST_F(FailingRule, AFailedCheckIsFailingEverywhere) {
  EXPECT_EQ(Judge("env.versions", "fail"), kFailing);
}

TEST_F(FailingRule, AnErroredCheckIsFailingEverywhere) {
  EXPECT_EQ(Judge("env.versions", "error"), kFailing);
}

TEST_F(FailingRule, ASkippedRequiredCheckIsFailingEverywhere) {
  EXPECT_EQ(Judge("train.eval", "skip"), kFailing);
}

TEST_F(FailingRule, ASkippedOptionalCheckIsFailingNowhere) {
  EXPECT_EQ(Judge("env.versions", "skip"), kNotFailing);
}

TEST_F(FailingRule, ARequiredCheckMissingFromTheReportFailsTheVerdictAndTheGate) {
  Judgements j = Judge("train.eval", "");
  EXPECT_TRUE(j.verdict_fails);
  EXPECT_TRUE(j.gate_refuses);
}

TEST(FailingRuleStatus, AStatusTheSchemaDoesNotKnowFailsOnlyARequiredCheck) {
  EXPECT_TRUE(IsFailingCheck("maybe", true));
  EXPECT_FALSE(IsFailingCheck("maybe", false));
}

TEST(GateOfATamperedReport, ADocumentThatIsNotAnObjectIsRefusedNotThrown) {
  Project project = LoadProject(SourceDir() / "examples/tiny");
  GateRequest request;
  request.report_path = "report.json";
  request.report_text = "[1, 2, 3]";
  request.allow_unsigned = true;
  request.lock = &*project.lock;
  request.lock_path = "trainlock.lock";
  request.lock_sha256 = project.lock_sha256;
  GateDecision d = EvaluateGate(request, Catalog::Embedded());
  EXPECT_FALSE(d.allowed());
  EXPECT_EQ(d.reasons.front().rfind("schema: ", 0), 0u) << d.reasons.front();
}

}  // namespace
}  // namespace trainlock
