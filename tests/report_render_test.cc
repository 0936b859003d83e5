// The report renderers (report_render.h) as specifications: what each format shows, how it
// escapes the report's untrusted strings, and that odd-but-valid content renders instead of
// crashing. The goldens in tests/golden/report are the text and markdown of the tiny fixture;
// regenerate them with `trainlock report tests/fixtures/reports/tiny-report.json --color never`
// (and `--format markdown`) into tests/golden/report/tiny.txt (and tiny.md).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "report/report_render.h"
#include "test_support.h"

namespace trainlock {
namespace {

using nlohmann::json;

json Fixture(const std::string& name) {
  return json::parse(
      testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports" / (name + "-report.json")));
}

json Tiny() {
  return Fixture("tiny");
}

json H200() {
  return Fixture("h200-pilot");
}

json& CheckIn(json& report, const std::string& id) {
  for (json& c : report["checks"]) {
    if (c["id"] == id) return c;
  }
  throw std::runtime_error("no check " + id);
}

// The tiny report with train.step failed (an out-of-memory, say).
json TinyWithFailedStep(const std::string& summary, const std::string& remedy) {
  json report = Tiny();
  json& step = CheckIn(report, "train.step");
  step["status"] = "fail";
  step["summary"] = summary;
  step["remedy"] = remedy;
  report["verdict"] = "fail";
  return report;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// The merged report of the pilot on two H200s, one round trip per GPU (bench/results).
json H200x2() {
  return Fixture("h200-x2-merged");
}

// ---- text ----

TEST(ReportText, AMergedReportListsEveryRankWithDeviceThroughputMemoryAndBits) {
  std::string text = RenderReportText(H200x2(), false);
  ASSERT_NE(text.find("\nranks\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  rank 0  cuda:0"), std::string::npos) << text;
  EXPECT_NE(text.find("  rank 1  cuda:1"), std::string::npos) << text;
  EXPECT_NE(text.find("37728 tokens/s  peak reserved 77.1 GiB  bits a61ad119af9c  6 passed"),
            std::string::npos)
      << text;
}

TEST(ReportText, ARankThatSentNoResultShowsWhy) {
  json report = H200x2();
  report["ranks"][1] = {{"rank", 1}, {"error", "no heartbeat for 20s: the process died or hangs"}};
  std::string text = RenderReportText(report, false);
  EXPECT_NE(text.find("  rank 1  ERROR: no heartbeat for 20s"), std::string::npos) << text;
}

TEST(ReportText, ARanksFailedCheckIsOnItsLine) {
  json report = H200x2();
  report["ranks"][1]["checks"]["train.roundtrip"]["status"] = "fail";
  std::string text = RenderReportText(report, false);
  EXPECT_NE(text.find("5 passed; train.roundtrip fail"), std::string::npos) << text;
}

TEST(ReportText, ASingleProcessReportHasNoRanksSection) {
  EXPECT_EQ(RenderReportText(Tiny(), false).find("\nranks\n"), std::string::npos);
}

TEST(ReportText, MatchesTheGoldenForTheTinyReport) {
  EXPECT_EQ(RenderReportText(Tiny(), false),
            testing::ReadFile(testing::SourceDir() / "tests/golden/report/tiny.txt"));
}

TEST(ReportText, TheRoundTripsGpuTelemetryIsOneLineUnderIt) {
  json report = H200();
  CheckIn(report, "train.roundtrip")["metrics"]["telemetry"] = {
      {"interval_s", 0.2},
      {"window_s", 41.0},
      {"devices",
       {{{"index", 0},
         {"samples", 205},
         {"power_w", {{"min", 452.2}, {"mean", 650.0}, {"max", 688.4}}},
         {"power_limit_w", 700.0},
         {"temperature_c", {{"max", 71.0}}},
         {"sm_clock_mhz", {{"min", 1500.0}, {"max", 1980.0}}},
         {"utilization_pct", {{"mean", 98.2}}},
         {"throttled_s", 0.0}}}}};
  EXPECT_NE(RenderReportText(report, false)
                .find("telemetry: GPU 0: 452-688 W (mean 650, limit 700), max 71 C, SM "
                      "1500-1980 MHz, util 98%, throttled "),
            std::string::npos)
      << RenderReportText(report, false);
  CheckIn(report, "train.roundtrip")["metrics"]["telemetry"] = {{"unavailable", "CPU run"}};
  EXPECT_EQ(RenderReportText(report, false).find("telemetry:"), std::string::npos);
  EXPECT_EQ(TelemetryLine(CheckIn(report, "train.roundtrip")["metrics"]), "none (CPU run)");
}

TEST(ReportText, HeaderNamesProjectVerdictLockDevicesValidatorAndTimes) {
  std::string text = RenderReportText(H200(), false);
  EXPECT_NE(text.find("trainlock report: h200-pilot\n"), std::string::npos);
  EXPECT_NE(text.find("verdict    PASS\n"), std::string::npos);
  EXPECT_NE(text.find("lock       c2e1a5bdf33e\n"), std::string::npos);
  EXPECT_NE(text.find("devices    1 x NVIDIA H200 (9.0, 140.4 GiB)\n"), std::string::npos);
  EXPECT_NE(text.find("validator  trainlock-validate 0.1.0, torch 2.11.0, build cuda\n"),
            std::string::npos);
  EXPECT_NE(text.find("started    2026-11-30T03:09:17Z, took 29.04 s\n"), std::string::npos);
}

TEST(ReportText, OneLinePerCheckWithStatusIdDurationAndSummary) {
  std::string text = RenderReportText(Tiny(), false);
  EXPECT_NE(text.find("\nPASS   train.roundtrip    3.420 s  resumed run is bitwise equal"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nSKIP   env.driver         0.000 s  CPU build of the validator"),
            std::string::npos);
  EXPECT_EQ(Count(text, "\nPASS "), 5u);
  EXPECT_EQ(Count(text, "\nSKIP "), 14u);
}

TEST(ReportText, RemedyOfAFailedCheckFollowsOnAnIndentedLine) {
  std::string text = RenderReportText(
      TinyWithFailedStep("out of memory", "enable activation checkpointing"), false);
  EXPECT_NE(text.find("\nFAIL   train.step         0.071 s  out of memory\n"
                      "       remedy: enable activation checkpointing\n"),
            std::string::npos)
      << text;
}

// A node the validator could not judge: every format says so, with the reason, first.
json NotJudged() {
  json report = Tiny();
  report["verdict"] = "error";
  report["environment_error"] =
      "engine hf-trainer: /usr/bin/python3 cannot import transformers (No module named "
      "'transformers'): install transformers in that interpreter or pass --python PATH";
  report["engine"] = {{"name", "hf-trainer"},
                      {"python", "/usr/bin/python3"},
                      {"torch", "1.13.0a0"},
                      {"versions", {{"torch", "1.13.0a0"}}}};
  for (json& c : report["checks"]) c["status"] = "skip";
  return report;
}

TEST(ReportNotJudged, EveryFormatSaysTheNodeWasNotJudgedAndWhy) {
  const json report = NotJudged();
  const std::string why = "/usr/bin/python3 cannot import transformers";
  const std::string text = RenderReportText(report, false);
  EXPECT_NE(text.find("NOT JUDGED engine hf-trainer: " + why), std::string::npos) << text;
  EXPECT_NE(text.find("engine     torch 1.13.0a0 in /usr/bin/python3\n"), std::string::npos)
      << text;
  const std::string markdown = RenderReportMarkdown(report);
  EXPECT_NE(markdown.find("| **not judged** | engine hf-trainer: " + why), std::string::npos)
      << markdown;
  const std::string html = RenderReportHtml(report);
  EXPECT_NE(html.find("<dt>not judged</dt><dd><strong>engine hf-trainer: " + why),
            std::string::npos);
  const std::string junit = RenderReportJunit(report);
  EXPECT_NE(junit.find("<testcase classname=\"trainlock.environment\" name=\"environment\""),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<error message=\"not judged: engine hf-trainer: " + why), std::string::npos)
      << junit;
  EXPECT_NE(junit.find("errors=\"1\""), std::string::npos) << junit;
}

TEST(ReportText, FooterGivesTheVerdictAndTheCounts) {
  std::string text = RenderReportText(TinyWithFailedStep("out of memory", ""), false);
  EXPECT_NE(text.find("\nverdict: FAIL (4 passed, 1 failed, 0 errors, 14 skipped)\n"),
            std::string::npos)
      << text;
}

TEST(ReportText, WithoutColourThereIsNoEscapeSequence) {
  for (const json& report : {Tiny(), H200(), TinyWithFailedStep("x", "y")}) {
    EXPECT_EQ(RenderReportText(report, false).find('\x1b'), std::string::npos);
  }
}

TEST(ReportText, WithColourStatusesAndVerdictAreColoured) {
  std::string text = RenderReportText(TinyWithFailedStep("out of memory", ""), true);
  EXPECT_NE(text.find("\x1b[32mPASS "), std::string::npos);
  EXPECT_NE(text.find("\x1b[31mFAIL "), std::string::npos);
  EXPECT_NE(text.find("\x1b[33mSKIP "), std::string::npos);
  EXPECT_NE(text.find("\x1b[0m"), std::string::npos);
}

TEST(ReportText, ControlCharactersFromTheReportNeverReachTheTerminal) {
  json report = Tiny();
  CheckIn(report, "train.step")["summary"] = "evil\x1b]0;owned\x07\x1b[2J\nsecond line\x9b";
  std::string text = RenderReportText(report, false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_NE(text.find("evil\\x1b]0;owned\\x07\\x1b[2J\\x0asecond line\xEF\xBF\xBD"),
            std::string::npos)
      << text;
}

// A summary that would reorder itself (a right-to-left override), clear the screen or act as a
// C1 control comes out of every format shown, never obeyed.
TEST(ReportFormats, BidiOverridesAndControlsAreShownInEveryFormat) {
  json report = Tiny();
  CheckIn(report, "train.step")["summary"] = "pass\u202Eliaf\u2066x\x1b[2J\u0085end";
  for (const auto& [format, out] :
       {std::pair<std::string, std::string>{"text", RenderReportText(report, false)},
        {"markdown", RenderReportMarkdown(report)},
        {"html", RenderReportHtml(report)},
        {"junit", RenderReportJunit(report)}}) {
    EXPECT_EQ(out.find("\u202E"), std::string::npos) << format;  // the override itself
    EXPECT_EQ(out.find("\u2066"), std::string::npos) << format;
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << format;
    EXPECT_EQ(out.find("\u0085"), std::string::npos) << format;
    // Shown as the text \u202e (markdown escapes its backslash once more).
    EXPECT_NE(out.find("u202eliaf\\"), std::string::npos) << format << ": " << out;
    EXPECT_NE(out.find("u2066x"), std::string::npos) << format << ": " << out;
  }
}

// ---- colour decision ----

TEST(ReportColor, AutoColoursATerminal) {
  EXPECT_TRUE(ShouldUseColor(ColorMode::kAuto, true, nullptr, "xterm-256color"));
}

TEST(ReportColor, AutoDoesNotColourAPipeOrFile) {
  EXPECT_FALSE(ShouldUseColor(ColorMode::kAuto, false, nullptr, "xterm"));
}

TEST(ReportColor, NonEmptyNoColorTurnsAutoOff) {
  EXPECT_FALSE(ShouldUseColor(ColorMode::kAuto, true, "1", "xterm"));
  EXPECT_FALSE(ShouldUseColor(ColorMode::kAuto, true, "false", "xterm"));
}

TEST(ReportColor, EmptyNoColorIsIgnored) {
  EXPECT_TRUE(ShouldUseColor(ColorMode::kAuto, true, "", "xterm"));
}

TEST(ReportColor, DumbTerminalGetsNoColour) {
  EXPECT_FALSE(ShouldUseColor(ColorMode::kAuto, true, nullptr, "dumb"));
}

TEST(ReportColor, ExplicitAlwaysWinsOverNoColorAndPipes) {
  EXPECT_TRUE(ShouldUseColor(ColorMode::kAlways, false, "1", "dumb"));
}

TEST(ReportColor, NeverMeansNever) {
  EXPECT_FALSE(ShouldUseColor(ColorMode::kNever, true, nullptr, "xterm"));
}

// ---- markdown ----

TEST(ReportMarkdown, MatchesTheGoldenForTheTinyReport) {
  EXPECT_EQ(RenderReportMarkdown(Tiny()),
            testing::ReadFile(testing::SourceDir() / "tests/golden/report/tiny.md"));
}

TEST(ReportMarkdown, HasTheHeaderFactsAndOneRowPerCheck) {
  std::string md = RenderReportMarkdown(H200());
  EXPECT_NE(
      md.find(
          "| lock_sha256 | `c2e1a5bdf33e590dbe045c05a09a4e1bf94dd61214ab3ab06931c27db87cd5fc` |"),
      std::string::npos);
  EXPECT_NE(md.find("| devices | 1 x NVIDIA H200 (9.0, 140.4 GiB) |"), std::string::npos);
  EXPECT_NE(md.find("| status | check | duration | summary | remedy |\n|---|---|--:|---|---|\n"),
            std::string::npos);
  const json report = H200();
  for (const json& check : report["checks"]) {
    EXPECT_NE(md.find(" | `" + check["id"].get<std::string>() + "` | "), std::string::npos);
  }
}

TEST(ReportMarkdown, AMergedReportHasATableOfTheRanks) {
  std::string md = RenderReportMarkdown(H200x2());
  EXPECT_NE(md.find("| rank | device | host | tokens/s | peak reserved | bits | checks |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | `cuda:1` |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 77.1 GiB | `a61ad119af9c` | 6 passed |"), std::string::npos) << md;
}

TEST(ReportMarkdown, PipesAndNewlinesInCellsAreEscaped) {
  std::string md = RenderReportMarkdown(
      TinyWithFailedStep("peak | 80 GiB\nover the limit", "1) FSDP\r\n2) smaller | batch"));
  EXPECT_NE(md.find("| peak \\| 80 GiB<br>over the limit | 1) FSDP<br>2) smaller \\| batch |"),
            std::string::npos)
      << md;
  // Every row of the checks table still has exactly its six cell borders.
  for (const std::string& line : Lines(md)) {
    if (line.rfind("| ", 0) != 0 || line.find("train.step") == std::string::npos) continue;
    size_t borders = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      borders += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
    }
    EXPECT_EQ(borders, 6u) << line;
  }
}

TEST(ReportMarkdown, HtmlAndEmphasisInCellsAreEscaped) {
  std::string md = RenderReportMarkdown(TinyWithFailedStep("<img src=x> *bold* _it_", ""));
  EXPECT_NE(md.find("&lt;img src=x&gt; \\*bold\\* \\_it\\_"), std::string::npos) << md;
  EXPECT_EQ(md.find("<img"), std::string::npos);
}

// A remedy's `command` renders as code: the span is kept, its text literal.
TEST(ReportMarkdown, ACodeSpanInACellStaysACodeSpan) {
  std::string md =
      RenderReportMarkdown(TinyWithFailedStep("x", "run `trainlock lock` (a_b*c in ``x`y``)"));
  EXPECT_NE(md.find("| run `trainlock lock` (a\\_b\\*c in ``x`y``) |"), std::string::npos) << md;
}

// Inside a code span a pipe is still escaped for the table and a newline is a space; a backtick
// that closes no span is escaped.
TEST(ReportMarkdown, ACodeSpanCannotBreakTheTableAndALoneBacktickIsEscaped) {
  std::string md = RenderReportMarkdown(TinyWithFailedStep("x", "`a | b\nc` then ` alone"));
  EXPECT_NE(md.find("| `a \\| b c` then \\` alone |"), std::string::npos) << md;
}

// ---- HTML ----

const char* const kInjection = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";

TEST(ReportHtml, HasTheThreeChartsEachWithATitle) {
  for (const json& report : {Tiny(), H200()}) {
    std::string html = RenderReportHtml(report);
    for (const char* id : {"chart-loss", "chart-memory", "chart-durations"}) {
      std::string open = std::string("<svg id=\"") + id + "\"";
      size_t at = html.find(open);
      ASSERT_NE(at, std::string::npos) << id;
      size_t title = html.find("<title", at);
      EXPECT_LT(title, html.find("</svg>", at)) << id;
    }
  }
}

TEST(ReportHtml, InjectedMarkupFromTheReportComesOutEscaped) {
  json report = TinyWithFailedStep(kInjection, kInjection);
  report["project"] = kInjection;
  CheckIn(report, "train.eval")["metrics"]["note"] = kInjection;
  std::string html = RenderReportHtml(report);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"
                      "&quot;&#39;&amp;"),
            std::string::npos);
}

TEST(ReportHtml, IsSelfContainedWithoutScriptsOrExternalResources) {
  for (const json& report : {Tiny(), H200()}) {
    std::string html = RenderReportHtml(report);
    for (const char* banned : {"<script", "http://", "https://", "src=", "<link", "url(", "@import",
                               "<iframe", "<object", "<embed"}) {
      EXPECT_EQ(html.find(banned), std::string::npos) << banned;
    }
    EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"),
              std::string::npos);
  }
}

TEST(ReportHtml, LossChartDrawsBothRunsTheCheckpointAndSaysTheyAreBitwiseEqual) {
  std::string html = RenderReportHtml(Tiny());
  EXPECT_NE(html.find("<polyline class=\"uninterrupted\" points=\""), std::string::npos);
  EXPECT_NE(html.find("<polyline class=\"resumed\" points=\""), std::string::npos);
  EXPECT_NE(html.find("<line class=\"checkpoint\""), std::string::npos);
  EXPECT_NE(html.find("checkpoint after step 3"), std::string::npos);
  EXPECT_NE(html.find("bitwise equal at every step, so the resumed run (dashed) lies exactly"),
            std::string::npos);
}

TEST(ReportHtml, LossChartCaptionSaysWhenTheRunsDiffer) {
  json report = Tiny();
  CheckIn(report, "train.roundtrip")["metrics"]["losses_resumed"][4] = 5.5;
  std::string html = RenderReportHtml(report);
  EXPECT_NE(html.find("The runs differ: the largest difference is"), std::string::npos);
  EXPECT_NE(html.find("at step 5"), std::string::npos);
}

TEST(ReportHtml, CpuReportShowsPeakRssAgainstHostMemory) {
  std::string html = RenderReportHtml(Tiny());
  EXPECT_NE(html.find("peak RSS (training process)"), std::string::npos);
  EXPECT_NE(html.find("host memory 23.5 GiB"), std::string::npos);
  EXPECT_NE(html.find("CPU report"), std::string::npos);
  EXPECT_EQ(html.find("peak allocated"), std::string::npos);
}

TEST(ReportHtml, GpuReportShowsAllocatedReservedAndUsedAgainstTheDevice) {
  std::string html = RenderReportHtml(H200());
  for (const char* label :
       {"peak allocated (tensors)", "peak reserved (caching allocator)",
        "device used (driver view)", "device capacity 139.8 GiB (NVIDIA H200)"}) {
    EXPECT_NE(html.find(label), std::string::npos) << label;
  }
  EXPECT_NE(html.find("73.0 GiB, 52%"), std::string::npos);  // peak allocated
  EXPECT_EQ(html.find("peak RSS"), std::string::npos);
}

TEST(ReportHtml, SkippedCheckGivesANoDataNoteInPlaceOfItsChart) {
  json report = Tiny();
  json& roundtrip = CheckIn(report, "train.roundtrip");
  roundtrip["status"] = "skip";
  roundtrip["summary"] = "no checkpoint directory";
  roundtrip["metrics"] = json::object();
  std::string html = RenderReportHtml(report);
  EXPECT_NE(html.find("<p class=\"no-data\" id=\"chart-loss\">no data: train.roundtrip was "
                      "skipped: no checkpoint directory</p>"),
            std::string::npos);
  EXPECT_EQ(html.find("<svg id=\"chart-loss\""), std::string::npos);
}

TEST(ReportHtml, AbsentChecksGiveNoDataNotes) {
  json report = Tiny();
  report["checks"] = json::array();
  std::string html = RenderReportHtml(report);
  EXPECT_NE(html.find("id=\"chart-loss\">no data: the report has no train.roundtrip check"),
            std::string::npos);
  EXPECT_NE(html.find("id=\"chart-memory\">no data: the report has no train.step check"),
            std::string::npos);
  EXPECT_NE(html.find("id=\"chart-durations\">no data: the report has no checks"),
            std::string::npos);
}

TEST(ReportHtml, StatusesAreColouredAndMetricsAreCollapsiblePrettyJson) {
  std::string html = RenderReportHtml(TinyWithFailedStep("out of memory", "use FSDP"));
  EXPECT_NE(html.find("<tr class=\"fail\"><td><span class=\"badge fail\">fail</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>use FSDP</td>"), std::string::npos);
  EXPECT_NE(html.find("<details><summary>21 metrics</summary><pre>{\n  &quot;bitwise_equal&quot;: "
                      "true,"),
            std::string::npos);
}

// ---- JUnit ----

TEST(ReportJunit, OneSuiteWithCountsTimeAndTimestamp) {
  std::string xml = RenderReportJunit(Tiny());
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0), 0u);
  EXPECT_NE(xml.find("<testsuite name=\"trainlock\" tests=\"19\" failures=\"0\" errors=\"0\" "
                     "skipped=\"14\" time=\"4.188\" timestamp=\"2026-11-30T03:43:41Z\""),
            std::string::npos)
      << xml;
  EXPECT_EQ(Count(xml, "<testcase "), 19u);
}

TEST(ReportJunit, EachCheckIsATestCaseInItsGroup) {
  std::string xml = RenderReportJunit(Tiny());
  EXPECT_NE(xml.find("<testcase classname=\"trainlock.train\" name=\"train.roundtrip\" "
                     "time=\"3.420\">"),
            std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"trainlock.env\" name=\"env.driver\" time=\"0.000\">\n"
                     "      <skipped message=\"CPU build of the validator: no GPU driver, runtime "
                     "or device to probe\"/>"),
            std::string::npos);
}

TEST(ReportJunit, FailErrorAndSkipMapToTheirElementsWithTheRemedyAsBody) {
  json report = TinyWithFailedStep("out of memory", "use FSDP");
  json& eval = CheckIn(report, "train.eval");
  eval["status"] = "error";
  eval["summary"] = "eval crashed";
  eval["remedy"] = "";
  CheckIn(report, "ext.command")["remedy"] = "add [validate] smoke-command";
  std::string xml = RenderReportJunit(report);
  EXPECT_NE(xml.find("failures=\"1\" errors=\"1\" skipped=\"14\""), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"out of memory\" type=\"failure\">remedy: use "
                     "FSDP</failure>"),
            std::string::npos);
  EXPECT_NE(xml.find("<error message=\"eval crashed\" type=\"error\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"the lock declares no smoke command\">remedy: add "
                     "[validate] smoke-command</skipped>"),
            std::string::npos);
}

TEST(ReportJunit, PropertiesCarryLockImageVerdictAndValidator) {
  json report = H200();
  report["image"] = {{"ref", "registry.example/pilot:1"},
                     {"digest", "sha256:" + std::string(64, 'a')}};
  std::string xml = RenderReportJunit(report);
  for (const std::string& property : std::vector<std::string>{
           "name=\"lock_sha256\" "
           "value=\"c2e1a5bdf33e590dbe045c05a09a4e1bf94dd61214ab3ab06931c27db87cd5fc\"",
           "name=\"image_digest\" value=\"sha256:" + std::string(64, 'a') + "\"",
           std::string("name=\"verdict\" value=\"pass\""),
           std::string("name=\"validator_version\" value=\"0.1.0\"")}) {
    EXPECT_NE(xml.find("<property " + property + "/>"), std::string::npos) << property;
  }
}

TEST(ReportJunit, MarkupAndNewlinesInTheReportAreEscaped) {
  std::string xml =
      RenderReportJunit(TinyWithFailedStep("a\"b</failure><x>&\nnext", "]]></failure>"));
  EXPECT_NE(xml.find("<failure message=\"a&quot;b&lt;/failure&gt;&lt;x&gt;&amp;&#10;next\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find(">remedy: ]]&gt;&lt;/failure&gt;</failure>"), std::string::npos);
}

// ---- odd but valid content ----

// A report with everything a renderer could trip over: NaN and infinite numbers, a 1 MB
// summary, invalid UTF-8, control characters, ill-typed metrics, 10000-deep nested metrics.
json OddReport() {
  json report = H200();
  report["duration_s"] = std::nan("");
  report["started_at"] = "not a time";
  report["devices"].push_back("not an object");
  json& step = CheckIn(report, "train.step");
  step["duration_s"] = INFINITY;
  step["summary"] = std::string(1 << 20, 'x');
  step["metrics"]["device_total_bytes"] = 0;
  step["metrics"]["peak_rss_bytes"] = "lots";
  json& roundtrip = CheckIn(report, "train.roundtrip");
  roundtrip["summary"] = "bad \xff\xfe utf-8 \x01\x02 and a surrogate \xed\xa0\x80";
  roundtrip["metrics"]["losses_uninterrupted"] = {1.0, std::nan(""), "two", nullptr, 1e308};
  roundtrip["metrics"]["losses_resumed"] = json::object();
  roundtrip["metrics"]["checkpoint_at"] = -7;
  CheckIn(report, "train.eval")["metrics"]["deep"] =
      json::parse(std::string(10000, '[') + std::string(10000, ']'));
  report["checks"].push_back({{"id", std::string(5000, 'z')}, {"status", "weird"}});
  report["checks"].push_back(42);
  report["ranks"] = {7,
                     {{"rank", "zero"}, {"train", {{"tokens_per_s", "fast"}}}},
                     {{"rank", 1e300}, {"device", "\x1b[31mcuda:1"}, {"checks", {1, 2}}},
                     {{"rank", 2}, {"error", std::string(1 << 16, 'e')}}};
  return report;
}

TEST(ReportOdd, OddButValidContentRendersInEveryFormat) {
  json report = OddReport();
  for (ReportFormat format :
       {ReportFormat::kText, ReportFormat::kMarkdown, ReportFormat::kHtml, ReportFormat::kJunit}) {
    std::string out;
    EXPECT_NO_THROW(out = RenderReport(report, format, true));
    EXPECT_FALSE(out.empty());
    EXPECT_EQ(out.find("nan"), std::string::npos);
    EXPECT_EQ(out.find('\x01'), std::string::npos);
    EXPECT_EQ(out.find("\xff"), std::string::npos);
  }
}

TEST(ReportOdd, NotEvenAnObjectStillRenders) {
  for (const json& report : {json(), json(3), json::array(), json::object()}) {
    EXPECT_NO_THROW(RenderReportHtml(report));
    EXPECT_NO_THROW(RenderReportJunit(report));
    EXPECT_NO_THROW(RenderReportText(report, false));
    EXPECT_NO_THROW(RenderReportMarkdown(report));
  }
}

TEST(ReportOdd, CleanTextKeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(CleanText("caf\xC3\xA9 \xE2\x9C\x85 \xF0\x9F\x9A\x80"),
            "caf\xC3\xA9 \xE2\x9C\x85 \xF0\x9F\x9A\x80");
  EXPECT_EQ(CleanText("a\xC3"), "a\xEF\xBF\xBD");                // truncated
  EXPECT_EQ(CleanText("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(CleanText("\x1b\x7f\t\n"), "\xEF\xBF\xBD\xEF\xBF\xBD\t\n");
  EXPECT_EQ(CleanText("\xC2\x9B"), "\xEF\xBF\xBD");  // C1 CSI
}

}  // namespace
}  // namespace trainlock
