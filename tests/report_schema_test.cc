// The report contract (trainlock.report/v2): what conforms and what a tampered report breaks.
#include <gtest/gtest.h>

#include "project/check_ids.h"
#include "report/report.h"

namespace trainlock {
namespace {

Report MinimalReport() {
  Report r;
  r.lock_sha256 = std::string(64, 'a');
  r.validator_version = "0.1.0";
  r.torch_version = "1.13.0";
  r.build = "cpu";
  r.started_at = "2026-11-29T21:33:10Z";
  r.duration_s = 1.5;
  r.checks.push_back({"train.step", CheckStatus::kPass, 0.1, "ok", "", {{"step_time_s", 0.1}}});
  r.checks.push_back({"env.driver", CheckStatus::kSkip, 0, "no GPU", "", nlohmann::json::object()});
  r.target = "cpu";
  for (std::string_view id : kCheckIds) {  // the validator writes every id
    if (id != "train.step" && id != "env.driver")
      r.checks.push_back(
          {std::string(id), CheckStatus::kSkip, 0, "not run", "", nlohmann::json::object()});
  }
  return r;
}

bool Mentions(const std::vector<std::string>& problems, const std::string& what) {
  for (const std::string& p : problems) {
    if (p.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(ReportSchema, AReportBuiltByTheLibraryConforms) {
  EXPECT_EQ(ReportSchemaViolations(MinimalReport().ToJson()), std::vector<std::string>{});
}

TEST(ReportSchema, AReportLackingACheckIdIsAViolation) {
  Report r = MinimalReport();
  r.checks.pop_back();
  EXPECT_TRUE(Mentions(ReportSchemaViolations(r.ToJson()), "checks: missing check"));
}

TEST(ReportSchema, ATargetOtherThanTheBuildIsAViolation) {
  Report r = MinimalReport();
  r.target = "cuda";
  EXPECT_TRUE(
      Mentions(ReportSchemaViolations(r.ToJson()), "target: must be the validator's build"));
}

TEST(ReportSchema, ARankOwnReportIsPartialEvenWithoutItsMarker) {
  Report r = MinimalReport();
  r.rank = ReportRank{1, 2, 1, "torchrun"};
  EXPECT_TRUE(IsPartialReport(r.ToJson()));
  r.ranks = nlohmann::json::array();
  EXPECT_FALSE(IsPartialReport(r.ToJson()));  // the merged report
  r.partial = true;
  EXPECT_TRUE(Mentions(ReportSchemaViolations(r.ToJson()), "partial: the merged report"));
}

TEST(ReportSchema, VerdictIsFailWhenACheckFails) {
  Report r = MinimalReport();
  r.checks[0].status = CheckStatus::kFail;
  EXPECT_EQ(r.Verdict(), "fail");
}

// An environment that cannot run the validation: the node was not judged, whatever the checks.
TEST(ReportSchema, AnEnvironmentErrorMakesTheVerdictErrorAndConforms) {
  Report r = MinimalReport();
  r.checks[0].status = CheckStatus::kFail;
  r.environment_error = "engine ddp: /x/python cannot import torch (No module named 'torch')";
  r.engine = ReportEngine{"ddp", "/x/python", "", nlohmann::json::object()};
  EXPECT_EQ(r.Verdict(), "error");
  const nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["verdict"], "error");
  EXPECT_EQ(j["environment_error"], r.environment_error);
  EXPECT_EQ(j["engine"]["python"], "/x/python");
  EXPECT_EQ(ReportSchemaViolations(j), std::vector<std::string>{});
}

TEST(ReportSchema, AnErrorVerdictWithoutAReasonIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["verdict"] = "error";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "environment_error: a verdict \"error\""));
  nlohmann::json k = MinimalReport().ToJson();
  k["environment_error"] = "why";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(k), "verdict: must be \"error\""));
}

TEST(ReportSchema, VerdictIsFailWhenARequiredCheckIsSkipped) {
  Report r = MinimalReport();
  r.required = {"env.driver"};
  EXPECT_EQ(r.Verdict(), "fail");
}

TEST(ReportSchema, HowTheValidatorRanIsWrittenAndConforms) {
  Report r = MinimalReport();
  r.project = "tiny";
  r.only = {"train.step"};
  r.rank = ReportRank{1, 2, 1, "torchrun"};
  r.ranks = nlohmann::json::array({{{"rank", 0}}, {{"rank", 1}, {"error", "no result"}}});
  nlohmann::json j = r.ToJson();
  EXPECT_EQ(j["project"], "tiny");
  EXPECT_TRUE(j["work_dir"].is_null());
  EXPECT_EQ(j["only"], nlohmann::json::array({"train.step"}));
  EXPECT_EQ(j["rank"],
            (nlohmann::json{
                {"rank", 1}, {"world_size", 2}, {"local_rank", 1}, {"launcher", "torchrun"}}));
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(ReportSchemaViolations(j), std::vector<std::string>{});
}

TEST(ReportSchema, OnlyRankAndRanksAreLeftOutWhenTheValidatorHasNone) {
  nlohmann::json j = MinimalReport().ToJson();
  EXPECT_FALSE(j.contains("only"));
  EXPECT_FALSE(j.contains("rank"));
  EXPECT_FALSE(j.contains("ranks"));
}

TEST(ReportSchema, HowTheValidatorRanOfTheWrongTypeIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["work_dir"] = 3;
  j["only"] = nlohmann::json::array({"train.stepp"});
  j["rank"] = {{"rank", "0"}};
  j["ranks"] = nlohmann::json::array({1});
  std::vector<std::string> problems = ReportSchemaViolations(j);
  EXPECT_TRUE(Mentions(problems, "work_dir: must be string"));
  EXPECT_TRUE(Mentions(problems, "only[0]: must be a check id"));
  EXPECT_TRUE(Mentions(problems, "rank.rank: must be number"));
  EXPECT_TRUE(Mentions(problems, "rank.world_size: missing"));
  EXPECT_TRUE(Mentions(problems, "ranks[0]: must be an object"));
}

TEST(ReportSchema, UnknownCheckIdIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["checks"][0]["id"] = "train.stepp";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "checks[0].id: unknown check id"));
}

TEST(ReportSchema, AMegabyteTimestampIsAViolationNotACrash) {
  nlohmann::json j = MinimalReport().ToJson();
  j["started_at"] = "2026-11-30T03:43:41." + std::string(3 << 20, '0') + "Z";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "started_at: must be RFC 3339"));
}

TEST(ReportSchema, ASchemaThatIsNotAStringIsAViolationNotAnException) {
  nlohmann::json j = MinimalReport().ToJson();
  j["schema"] = 1;
  j["checks"][0]["summary"] = 7;
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "schema: must be"));
}

// A report of trainlock.report/v1 (digest_source "engine") is not read as this version: the
// readers and the gate refuse it with this one line, before any rule.
TEST(ReportSchema, AReportOfAnEarlierVersionIsNamedWithItsSchemaAndAskedToBeValidatedAgain) {
  nlohmann::json j = MinimalReport().ToJson();
  j["schema"] = "trainlock.report/v1";
  EXPECT_EQ(ReportSchemaVersionProblem(j),
            "a trainlock.report/v1 report, which this trainlock does not read (it reads "
            "trainlock.report/v2): validate the node again with this trainlock");
}

TEST(ReportSchema, ThisVersionOrADocumentThatIsNoReportHasNoVersionProblem) {
  nlohmann::json j = MinimalReport().ToJson();
  EXPECT_EQ(ReportSchemaVersionProblem(j), "");
  j["schema"] = "something.else/v1";  // not a report at all: ReportSchemaViolations says so
  EXPECT_EQ(ReportSchemaVersionProblem(j), "");
  EXPECT_EQ(ReportSchemaVersionProblem(nlohmann::json::array()), "");
}

TEST(ReportSchema, AHugeSchemaIsQuotedShort) {
  nlohmann::json j = MinimalReport().ToJson();
  j["schema"] = "trainlock.report/" + std::string(100000, 'x');
  EXPECT_LT(ReportSchemaVersionProblem(j).size(), 300u);
}

TEST(ReportSchema, TheDigestSourceIsTheContainerToolOrTheEnvironmentNotV1sEngine) {
  Report r = MinimalReport();
  r.image = std::make_pair("registry/x", "sha256:" + std::string(64, 'b'));
  r.image_digest_source = "container-tool";
  EXPECT_EQ(ReportSchemaViolations(r.ToJson()), std::vector<std::string>{});
  r.image_digest_source = "environment";
  EXPECT_EQ(ReportSchemaViolations(r.ToJson()), std::vector<std::string>{});
  r.image_digest_source = "engine";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(r.ToJson()), "image.digest_source"));
}

TEST(ReportSchema, BadStatusIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["checks"][1]["status"] = "ok";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "checks[1].status"));
}

TEST(ReportSchema, MalformedLockHashIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["lock_sha256"] = "abc";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "lock_sha256"));
}

TEST(ReportSchema, MissingImageKeyIsAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j.erase("image");
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "image: missing"));
}

TEST(ReportSchema, ImageDigestMustBeADigest) {
  Report r = MinimalReport();
  r.image = std::make_pair("registry/x", "sha256:short");
  EXPECT_TRUE(Mentions(ReportSchemaViolations(r.ToJson()), "image.digest"));
}

TEST(ReportSchema, TimestampMustBeRfc3339) {
  nlohmann::json j = MinimalReport().ToJson();
  j["started_at"] = "yesterday";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "started_at"));
}

TEST(ReportSchema, DuplicateChecksAreAViolation) {
  nlohmann::json j = MinimalReport().ToJson();
  j["checks"].push_back(j["checks"][0]);
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "duplicate check"));
}

TEST(ReportSchema, AFailedCheckMustSayWhy) {
  nlohmann::json j = MinimalReport().ToJson();
  j["checks"][0]["status"] = "fail";
  j["checks"][0]["summary"] = "";
  EXPECT_TRUE(Mentions(ReportSchemaViolations(j), "must say why"));
}

TEST(ReportSchema, DevicesNeedAnArchitecture) {
  Report r = MinimalReport();
  r.devices.push_back({{"index", 0}, {"name", "H200"}, {"uuid", "GPU-1"}, {"memory_bytes", 1}});
  EXPECT_TRUE(Mentions(ReportSchemaViolations(r.ToJson()), "compute_capability or gfx"));
}

}  // namespace
}  // namespace trainlock
