// No credential is ever printed: the userinfo of URLs and image references is redacted in
// every message, including the network layer's, and a header that would smuggle a line break
// is never sent.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/redact.h"
#include "base/terminal_text.h"
#include "checks/smoke_command.h"
#include "lock/http_client.h"
#include "report/report.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

TEST(RedactCredentials, TheUserinfoOfAUrlIsMasked) {
  EXPECT_EQ(RedactUrl("https://user:secret@hub.example/api/x"), "https://***@hub.example/api/x");
  EXPECT_EQ(RedactUrl("http://token@127.0.0.1:8080"), "http://***@127.0.0.1:8080");
  EXPECT_EQ(RedactUrl("http://user:p@ss@host/x"), "http://***@host/x");
}

TEST(RedactCredentials, UrlsInsideAMessageAreMaskedWhereverTheyStand) {
  EXPECT_EQ(RedactCredentials("model x: Hub unreachable: http://u:secret@h:1/api/y: refused"),
            "model x: Hub unreachable: http://***@h:1/api/y: refused");
  EXPECT_EQ(RedactCredentials("'https://u:se'cret@h/x' is not"), "'https://***@h/x' is not");
}

TEST(RedactCredentials, AnImageReferenceWithCredentialsIsMasked) {
  EXPECT_EQ(RedactCredentials("'user:secret@registry.example/org/img:1.0'"),
            "'***@registry.example/org/img:1.0'");
}

TEST(RedactCredentials, ImageReferencesWithTagsAndDigestsAreLeftAlone) {
  for (const char* ref :
       {"ubuntu:22.04@sha256:0123", "nvcr.io/nvidia/pytorch:24.05-py3@sha256:abcd",
        "docker.io/library/debian:bookworm-slim", "someone@example.com wrote",
        "org-tiny-model@0123456789ab/model.safetensors: error: is a symbolic link"}) {
    EXPECT_EQ(RedactCredentials(ref), ref);
  }
}

TEST(RedactCredentials, AQuotedValueIsRedactedBeforeItIsCutShort) {
  const std::string url = "https://user:" + std::string(80, 's') + "@host/x";
  EXPECT_EQ(Quoted(url).find("sss"), std::string::npos) << Quoted(url);
}

TEST(RedactCredentials, TextShownOnATerminalOrInMarkupIsRedacted) {
  EXPECT_EQ(TerminalLine("cloning https://bot:hunter2@git.example/x"),
            "cloning https://***@git.example/x");
  EXPECT_EQ(TerminalText("a\nhttps://bot:hunter2@git.example/x\n"),
            "a\nhttps://***@git.example/x\n");
  EXPECT_EQ(CleanText("<https://bot:hunter2@git.example/x>"), "<https://***@git.example/x>");
}

TEST(HttpHeaders, AValueWithALineBreakIsRefusedWithoutShowingIt) {
  HttpRequest request;
  request.url = "http://127.0.0.1:1/x";
  request.headers = {"Authorization: Bearer secret\r\nX-Evil: 1"};
  try {
    HttpFetch(request);
    ADD_FAILURE() << "sent";
  } catch (const HttpError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refusing to send the Authorization header"), std::string::npos) << what;
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
  }
}

TEST(HttpErrors, LibcurlsTextAndTheUrlAreRedacted) {
  HttpRequest request;
  request.url =
      "http://user:hunter2-secret@127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) +
      "/v2/x";
  request.timeout_s = 5;
  try {
    HttpFetch(request);
    ADD_FAILURE() << "a dead port answered";
  } catch (const HttpError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("http://***@127.0.0.1:"), std::string::npos) << what;
    EXPECT_EQ(what.find("hunter2-secret"), std::string::npos) << what;
  }
  EXPECT_EQ(std::string(HttpError("libcurl: bad URL 'https://u:hunter2-secret@h/x'").what()),
            "libcurl: bad URL 'https://***@h/x'");
}

TEST(NoSecretInTheReport, ACheckThatPrintedAUrlWithCredentials) {
  testing::TempDir dir;
  ExtCommand command;
  command.argv = {"sh", "-c", "echo pulling https://bot:hunter2-secret@git.example/data.git",
                  "--from=https://bot:hunter2-secret@git.example/x"};
  const SmokeRun run = RunSmokeCommand(command, dir.path());
  Report report;
  report.checks.push_back(SmokeCommandCheck(command, run));
  const std::string json = report.ToJson().dump();
  EXPECT_NE(json.find("https://***@git.example/data.git"), std::string::npos) << json;
  EXPECT_NE(json.find("--from=https://***@git.example/x"), std::string::npos) << json;
  EXPECT_EQ(json.find("hunter2-secret"), std::string::npos) << json;
}

// The project's smoke command inherits the environment (it may need its token); what it prints
// of its secrets never reaches the report, which CI uploads and `gate -v` shows.
TEST(NoSecretInTheReport, AnExtCommandPrintingTokensFromItsEnvironmentLeavesNoneInTheReport) {
  testing::TempDir dir;
  ::setenv("HF_TOKEN", "planted-hub-token-123", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "wJalrPLANTEDSECRETKEY", 1);
  ExtCommand command;
  command.argv = {"sh", "-c",
                  "echo token=$HF_TOKEN; echo AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY"};
  const SmokeRun run = RunSmokeCommand(command, dir.path());
  Report report;
  report.checks.push_back(SmokeCommandCheck(command, run));
  const std::string json = report.ToJson().dump();
  ::unsetenv("HF_TOKEN");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_NE(json.find("token=***"), std::string::npos) << json;
  EXPECT_EQ(json.find("planted-hub-token-123"), std::string::npos) << json;
  EXPECT_EQ(json.find("wJalrPLANTEDSECRETKEY"), std::string::npos) << json;
}

TEST(RedactCredentials, BearerAndBasicCredentialsAndHubTokensAreMasked) {
  EXPECT_EQ(RedactCredentials("Authorization: Bearer abc.def-ghi_jkl"),
            "Authorization: Bearer ***");
  EXPECT_EQ(RedactCredentials("Authorization: Basic YWxpY2U6czNjcmV0"), "Authorization: Basic ***");
  EXPECT_EQ(RedactCredentials("token hf_" + std::string(34, 'A') + " used"), "token hf_*** used");
}

// Ordinary words and names are not mistaken for credentials.
TEST(RedactCredentials, WordsThatOnlyLookLikeMarkersAreLeftAlone) {
  for (const char* text :
       {"Basic checks passed", "engines/hf_model.py", "hf_trainer_output_dir", "a Bearer of news"})
    EXPECT_EQ(RedactCredentials(text), text);
}

// A password typed with a space in it (invalid in a URL, so refused) is masked whole in the
// message that refuses it.
TEST(RedactCredentials, APasswordWithASpaceIsMaskedWhole) {
  for (const char* password : {"pa55 w0rd", "p@ss word"}) {
    const std::string text =
        std::string("entry 'https://bob:") + password + "@pypi.internal/simple' holds a space";
    const std::string shown = RedactCredentials(text);
    EXPECT_EQ(shown.find("w0rd"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("word"), std::string::npos) << shown;
    EXPECT_NE(shown.find("@pypi.internal/simple"), std::string::npos) << shown;
  }
}

TEST(NoSecretPrinted, HfEndpointWithCredentialsAtADeadPort) {
  testing::TempDir dir;
  const fs::path project = testing::UnlockedTiny(
      dir.path() / "p", "",
      "[model]\nsource = \"hf\"\nrepo = \"org/m\"\nrevision = \"main\"\nfiles = [\"a.json\"]\n");
  const std::string endpoint =
      "http://user:hunter2-secret@127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  auto r = testing::RunProgram("trainlock", {"lock", project.string(), "--timeout", "2"},
                               {"HF_ENDPOINT=" + endpoint});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("Hub unreachable"), std::string::npos) << r.err;
  EXPECT_EQ((r.out + r.err).find("hunter2-secret"), std::string::npos) << r.err;
}

TEST(NoSecretPrinted, AnImageBaseReferenceWithCredentials) {
  for (const char* base : {"user:hunter2-secret@registry.example/org/img:1.0",
                           "https://user:hunter2-secret@registry.example/org/img:1.0"}) {
    testing::TempDir dir;
    const fs::path project = testing::UnlockedTiny(dir.path() / "p", base);
    auto r = testing::RunTrainlock({"check", project.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("is not an image reference"), std::string::npos) << r.err;
    EXPECT_EQ((r.out + r.err).find("hunter2-secret"), std::string::npos) << r.err;
  }
}

TEST(NoSecretPrinted, JsonOutputRedactsEveryStringAndMemberName) {
  const nlohmann::json value = {
      {"summary", "pull https://alice:hunter2-secret@registry.example/x failed"},
      {"https://bob:pw2-secret@h.example", "a member name"},
      {"list", {"user:pw3-secret@registry.example/org/img:1.0", 7}}};
  const std::string out = DumpJsonOutput(value);
  for (const char* secret : {"hunter2-secret", "pw2-secret", "pw3-secret"})
    EXPECT_EQ(out.find(secret), std::string::npos) << out;
  EXPECT_NE(out.find("https://***@registry.example/x"), std::string::npos) << out;
  EXPECT_NE(out.find("7"), std::string::npos) << out;
}

TEST(NoSecretPrinted, FleetSummarizeJsonOfAReportQuotingACredential) {
  testing::TempDir dir;
  nlohmann::json report = nlohmann::json::parse(
      testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
  report["host"]["hostname"] = "https://bob:pw2-secret@h.example";
  testing::WriteFile(dir.path() / "node.json", report.dump(2));
  auto r = testing::RunTrainlock({"fleet", "summarize", dir.path().string(), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find("pw2-secret"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("https://***@h.example"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

TEST(RedactUrl, APasswordWithASlashQuestionMarkOrHashIsMaskedWhole) {
  for (const char* url :
       {"https://user:s3cr/et@hub.example/api", "https://user:s3cr?et@hub.example",
        "https://user:s3cr#et@hub.example/x"}) {
    const std::string redacted = RedactUrl(url);
    EXPECT_EQ(redacted.find("s3cr"), std::string::npos) << redacted;
    EXPECT_NE(redacted.find("hub.example"), std::string::npos) << redacted;
  }
  // A port is not a password: the path's '@' stays.
  EXPECT_EQ(RedactUrl("https://hub.example:8080/org/model@abc"),
            "https://hub.example:8080/org/model@abc");
}

}  // namespace
}  // namespace trainlock
