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

// One planted secret: the line a program prints, the secret in it, and what is shown instead.
struct PlantedSecret {
  std::string line;
  std::string secret;
  std::string shown;
};

const std::string kHubToken = "hf_" + std::string(34, 'H');
const std::string kGitHubToken = "0123456789abcdefghijklmnopqrstuvwxyZ";  // 36 characters

// Every form of secret issue #61 found printed unmasked, and the ones masked before it.
std::vector<PlantedSecret> PlantedSecrets() {
  return {
      {"Authorization: Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl", "Authorization: Bearer ***"},
      {"curl -H 'authorization: bearer eyJhbGciOi.planted'", "eyJhbGciOi.planted",
       "curl -H 'authorization: bearer ***'"},
      {"sent bearer eyJhbGciOi.planted2", "eyJhbGciOi.planted2", "sent bearer ***"},
      {"Bearer\teyJhbGciOi.planted3", "eyJhbGciOi.planted3", "Bearer\t***"},
      {"Authorization: Basic YWxpY2U6czNjcmV0", "YWxpY2U6czNjcmV0", "Authorization: Basic ***"},
      {"Authorization: Token 9f8e7d6c-planted", "9f8e7d6c-planted", "Authorization: Token ***"},
      {"authorization: token planted-token-1", "planted-token-1", "authorization: token ***"},
      {"Authorization: planted-raw-1", "planted-raw-1", "Authorization: ***"},
      {R"({"Authorization": "Bearer planted-json-1"})", "planted-json-1",
       R"({"Authorization": "Bearer ***"})"},
      {"Proxy-Authorization: Basic cGxhbnRlZDpwdw==", "cGxhbnRlZDpwdw==",
       "Proxy-Authorization: Basic ***"},
      {"X-Api-Key: planted-api-key-1", "planted-api-key-1", "X-Api-Key: ***"},
      {"token " + kHubToken + " used", kHubToken.substr(3), "token hf_*** used"},
      {"ghp_" + kGitHubToken, kGitHubToken, "ghp_***"},
      {"gho_" + kGitHubToken, kGitHubToken, "gho_***"},
      {"ghs_" + kGitHubToken, kGitHubToken, "ghs_***"},
      {"ghu_" + kGitHubToken, kGitHubToken, "ghu_***"},
      {"push with github_pat_11ABCDEFG0plantedPLANTEDplanted_xyz",
       "11ABCDEFG0plantedPLANTEDplanted_xyz", "push with github_pat_***"},
      {"PRIVATE-TOKEN: glpat-PlantedGitLab-Token1", "PlantedGitLab-Token1", "PRIVATE-TOKEN: ***"},
      {"token glpat-PlantedGitLab-Token2 refused", "PlantedGitLab-Token2",
       "token glpat-*** refused"},
      {"GET https://h.example/f?token=planted-q1&page=2 404", "planted-q1",
       "GET https://h.example/f?token=***&page=2 404"},
      {"GET https://h.example/f?page=2&token=planted-q2#top", "planted-q2",
       "GET https://h.example/f?page=2&token=***#top"},
      {"redirect to /cb?access_token=planted-q3", "planted-q3", "redirect to /cb?access_token=***"},
      {"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED",
       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED", "AWS_SECRET_ACCESS_KEY=***"},
      {"AWS_SESSION_TOKEN=FwoGZXIvYXdzEPLANTED//", "FwoGZXIvYXdzEPLANTED//",
       "AWS_SESSION_TOKEN=***"},
      {"aws_secret_access_key = wJalrPlantedIni", "wJalrPlantedIni", "aws_secret_access_key = ***"},
      {"AWS_ACCESS_KEY_ID=AKIAPLANTED0000", "AKIAPLANTED0000", "AWS_ACCESS_KEY_ID=***"},
      {"DB_PASSWORD=hunter2", "hunter2", "DB_PASSWORD=***"},
      {"export DB_PASSWORD='pa ss w0rd'", "pa ss w0rd", "export DB_PASSWORD='***'"},
      {"MYSQL_PWD=hunter3", "hunter3", "MYSQL_PWD=***"},
      {"DB_PASS=hunter4", "hunter4", "DB_PASS=***"},
      {"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T000/B000/PlantedXXXX", "PlantedXXXX",
       "SLACK_WEBHOOK_URL=***"},
      {"posting to https://hooks.slack.com/services/T000/B000/PlantedYYYY", "B000/PlantedYYYY",
       "posting to https://hooks.slack.com/services/***"},
      {"MY_AUTH=planted-auth", "planted-auth", "MY_AUTH=***"},
      {"CLIENT_SECRET=planted-secret", "planted-secret", "CLIENT_SECRET=***"},
      {"GITHUB_TOKEN=planted-gh", "planted-gh", "GITHUB_TOKEN=***"},
      {"train.py --api-key=planted-cli-key", "planted-cli-key", "train.py --api-key=***"},
      {"Namespace(apiKey=planted-camel, lr=0.1)", "planted-camel", "Namespace(apiKey=*** lr=0.1)"},
  };
}

// The table of redact.cc, form by form: the planted secret never survives, and the line around
// it does.
TEST(RedactCredentials, EachFormOfPrintedSecretIsMasked) {
  for (const PlantedSecret& p : PlantedSecrets()) {
    const std::string shown = RedactCredentials(p.line);
    EXPECT_EQ(shown.find(p.secret), std::string::npos) << p.line << " -> " << shown;
    EXPECT_EQ(shown, p.shown) << p.line;
  }
}

// Text is redacted more than once on its way (a report string, then the terminal line that
// quotes it): the second time changes nothing.
TEST(RedactCredentials, RedactingTwiceChangesNothing) {
  for (const PlantedSecret& p : PlantedSecrets()) {
    const std::string once = RedactCredentials(p.line);
    EXPECT_EQ(RedactCredentials(once), once) << p.line;
  }
}

// What an engine or a command prints besides secrets stays readable: torch's answers, counts
// of tokens, comparisons, file names and the shell's working directory are no secrets.
TEST(RedactCredentials, NamesThatOnlyHoldASecretWordKeepTheirValues) {
  for (const char* text :
       {"_IncompatibleKeys(missing_keys=['lm_head.weight'], unexpected_keys=[])",
        "max_tokens=4096 pad_token_id=0 tokenizer=gpt2 num_tokens=12", "KeyError: 'model.layers.0'",
        "torch==2.4.0 and a != b and x <= y",
        "kubectl create secret generic NAME --from-file=trainlock.key=KEY.key",
        "PWD=/work/project OLDPWD=/work", "checks_passed=3",
        "WWW-Authenticate: Bearer realm=\"https://auth.example/token\",service=\"r\"",
        "refusing to send the Authorization header", "the authorization failed"})
    EXPECT_EQ(RedactCredentials(text), text);
}

// The same secrets on the terminal: TerminalLine, TerminalText and CleanText (markup, report
// strings) mask through the one function.
TEST(RedactCredentials, EveryPrinterMasksEachForm) {
  for (const PlantedSecret& p : PlantedSecrets()) {
    for (const std::string& shown :
         {TerminalLine(p.line), TerminalText("a\n" + p.line + "\n"), CleanText(p.line)})
      EXPECT_EQ(shown.find(p.secret), std::string::npos) << p.line << " -> " << shown;
  }
}

// Each planted form, printed by a project's smoke command (ext.command): the report's copy of
// its output holds none of them.
TEST(NoSecretInTheReport, AnExtCommandPrintingEachFormOfSecretLeavesNoneInTheReport) {
  testing::TempDir dir;
  std::string lines;
  for (const PlantedSecret& p : PlantedSecrets()) lines += p.line + "\n";
  testing::WriteFile(dir.path() / "printed.txt", lines);
  ExtCommand command;
  command.argv = {"cat", (dir.path() / "printed.txt").string()};
  command.tail_lines = 100;  // every line kept
  const SmokeRun run = RunSmokeCommand(command, dir.path());
  Report report;
  report.checks.push_back(SmokeCommandCheck(command, run));
  const std::string json = report.ToJson().dump();
  for (const PlantedSecret& p : PlantedSecrets())
    EXPECT_EQ(json.find(p.secret), std::string::npos) << p.line << "\n" << json;
  EXPECT_NE(json.find("DB_PASSWORD=***"), std::string::npos) << json;
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
