// Specification of the one way to read a report (report_view.h): a tampered report reads as
// empty facts, never an exception.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

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
  EXPECT_EQ(v.checks.size(), 18u);
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

}  // namespace
}  // namespace trainlock
