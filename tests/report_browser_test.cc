// `trainlock report` end to end: the HTML of a real report of examples/tiny rendered by
// headless Chromium (a screenshot that is not blank, a DOM with both charts), the JUnit of both
// fixtures validated by xmllint against tests/junit/junit.xsd (and a broken document rejected,
// so the schema check can fail), colour on a pseudo-terminal, and bad input.
//
// Chromium and xmllint come from ci/deps.sh (chromium, libxml2-utils, fonts-dejavu-core); a
// test that needs one skips, saying so, when it is missing.
#include <gtest/gtest.h>

#include <cstdint>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCommand;
using testing::RunProgram;
using testing::RunTrainlock;

fs::path FixturePath(const std::string& name) {
  return testing::SourceDir() / "tests/fixtures/reports" / (name + "-report.json");
}

fs::path SchemaPath() {
  return testing::SourceDir() / "tests/junit/junit.xsd";
}

// ---- headless Chromium ----

// The size of the screenshot window; the PNG must come out this wide.
constexpr int kWindowWidth = 1200, kWindowHeight = 1800;

// Measured with Chromium 156 (Debian 12) at 1200x1800: a blank page is 10,039 bytes of PNG
// (one colour compresses to almost nothing), the report's title and facts alone (the page cut
// before its first chart) 47,730 bytes, and the whole tiny report about 226,000 bytes. 100 kB
// is above "only the header rendered" and well below the real page, leaving room for other
// Chromium versions and fonts; the DOM checks below then prove the charts are there.
constexpr uintmax_t kMinScreenshotBytes = 100'000;

// Chromium in a throwaway profile: no sandbox (CI containers run as root), no GPU, killed by
// timeout(1) if it hangs so that the test fails instead.
std::vector<std::string> Chromium(const fs::path& profile, std::vector<std::string> args) {
  std::vector<std::string> argv = {"timeout",
                                   "120",
                                   "chromium",
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--hide-scrollbars",
                                   "--no-first-run",
                                   "--user-data-dir=" + profile.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

uint32_t BigEndian32(const std::string& bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value = value << 8 | static_cast<unsigned char>(bytes.at(at + i));
  return value;
}

// The part of `dom` from the element with id `id` to the end of the svg holding it.
std::string SvgElement(const std::string& dom, const std::string& id) {
  size_t start = dom.find("<svg id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  size_t end = dom.find("</svg>", start);
  return end == std::string::npos ? "" : dom.substr(start, end - start);
}

TEST(ReportBrowser, TinyReportRendersInHeadlessChromiumWithBothCharts) {
  if (!testing::HaveProgram("chromium")) GTEST_SKIP() << "chromium not installed (ci/deps.sh)";
  testing::TempDir dir;
  const fs::path html = dir.path() / "report.html", png = dir.path() / "report.png";
  auto render = RunTrainlock(
      {"report", FixturePath("tiny").string(), "--format", "html", "--out", html.string()});
  ASSERT_EQ(render.exit_code, 0) << render.err;
  const std::vector<std::string> env = {"HOME=" + dir.path().string()};
  const std::string url = "file://" + html.string();

  auto shot =
      RunCommand(Chromium(dir.path() / "profile", {"--window-size=" + std::to_string(kWindowWidth) +
                                                       "," + std::to_string(kWindowHeight),
                                                   "--screenshot=" + png.string(), url}),
                 env);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(fs::exists(png)) << shot.err;
  const std::string image = testing::ReadFile(png);
  ASSERT_GE(image.size(), 24u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(image.substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndian32(image, 16), static_cast<uint32_t>(kWindowWidth));
  EXPECT_EQ(BigEndian32(image, 20), static_cast<uint32_t>(kWindowHeight));
  EXPECT_GT(image.size(), kMinScreenshotBytes) << "the screenshot looks blank";
  RecordProperty("screenshot_bytes", static_cast<int>(image.size()));

  auto dom = RunCommand(Chromium(dir.path() / "profile", {"--dump-dom", url}), env);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string loss = SvgElement(dom.out, "chart-loss");
  ASSERT_FALSE(loss.empty()) << "no chart-loss svg in the rendered DOM";
  EXPECT_NE(loss.find("<title"), std::string::npos);
  EXPECT_NE(loss.find("<polyline class=\"uninterrupted\""), std::string::npos);
  EXPECT_NE(loss.find("<polyline class=\"resumed\""), std::string::npos);
  const std::string memory = SvgElement(dom.out, "chart-memory");
  ASSERT_FALSE(memory.empty()) << "no chart-memory svg in the rendered DOM";
  EXPECT_NE(memory.find("<title"), std::string::npos);
  EXPECT_NE(memory.find("<rect class=\"bar\""), std::string::npos);
  EXPECT_NE(memory.find("peak RSS"), std::string::npos);
}

// `name`'s fixture rendered to HTML in `dir`, then its DOM as headless Chromium built it, and a
// screenshot of it at `png` (checked to be a real, non-blank PNG of the window's width).
std::string RenderedDom(const fs::path& dir, const std::string& name, const fs::path& png,
                        uintmax_t min_png_bytes) {
  const fs::path html = dir / (name + ".html");
  auto render = RunTrainlock(
      {"report", FixturePath(name).string(), "--format", "html", "--out", html.string()});
  EXPECT_EQ(render.exit_code, 0) << render.err;
  const std::vector<std::string> env = {"HOME=" + dir.string()};
  const std::string url = "file://" + html.string();
  auto shot =
      RunCommand(Chromium(dir / "profile", {"--window-size=" + std::to_string(kWindowWidth) + "," +
                                                std::to_string(kWindowHeight),
                                            "--screenshot=" + png.string(), url}),
                 env);
  EXPECT_EQ(shot.exit_code, 0) << shot.err;
  const std::string image = fs::exists(png) ? testing::ReadFile(png) : "";
  EXPECT_GE(image.size(), 24u) << "no screenshot: " << shot.err;
  if (image.size() >= 24) {
    EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_EQ(BigEndian32(image, 16), static_cast<uint32_t>(kWindowWidth));
    EXPECT_GT(image.size(), min_png_bytes) << "the screenshot looks blank";
  }
  auto dom = RunCommand(Chromium(dir / "profile", {"--dump-dom", url}), env);
  EXPECT_EQ(dom.exit_code, 0) << dom.err;
  return dom.out;
}

// A page that only has its header and failures is larger than a blank one (10 kB); the
// charts' own elements are asserted on the DOM.
constexpr uintmax_t kMinPageBytes = 40'000;

TEST(ReportBrowser, OutOfMemoryReportShowsTheFailureAndRemedyFirstAndTheOvershoot) {
  if (!testing::HaveProgram("chromium")) GTEST_SKIP() << "chromium not installed (ci/deps.sh)";
  testing::TempDir dir;
  const std::string dom =
      RenderedDom(dir.path(), "h200-8b-oom", dir.path() / "oom.png", kMinPageBytes);
  const size_t failures = dom.find("id=\"failures\"");
  ASSERT_NE(failures, std::string::npos) << dom;
  EXPECT_LT(failures, dom.find("<dl class=\"facts\"")) << "failures come before the facts";
  const std::string section = dom.substr(failures, dom.find("</section>", failures) - failures);
  EXPECT_NE(section.find("<code>train.step</code>"), std::string::npos) << section;
  EXPECT_NE(section.find("out of memory at seq_len 8192"), std::string::npos) << section;
  EXPECT_NE(section.find("Remedy:"), std::string::npos) << section;
  const std::string memory = SvgElement(dom, "chart-memory");
  ASSERT_FALSE(memory.empty()) << "no chart-memory svg in the rendered DOM";
  EXPECT_NE(memory.find("346.6 GiB needed of 139.8 GiB"), std::string::npos) << memory;
  EXPECT_NE(memory.find("<rect class=\"overshoot\""), std::string::npos) << memory;
  EXPECT_NE(memory.find("<line class=\"capacity\""), std::string::npos) << memory;
}

TEST(ReportBrowser, MergedReportHasARanksTableAndTheAllReduceBandwidthBySize) {
  if (!testing::HaveProgram("chromium")) GTEST_SKIP() << "chromium not installed (ci/deps.sh)";
  testing::TempDir dir;
  const std::string dom =
      RenderedDom(dir.path(), "h200-x2-merged", dir.path() / "x2.png", kMinPageBytes);
  const size_t ranks = dom.find("<table id=\"ranks\"");
  ASSERT_NE(ranks, std::string::npos) << dom;
  const std::string table = dom.substr(ranks, dom.find("</table>", ranks) - ranks);
  size_t rows = 0;
  for (size_t at = table.find("<tr"); at != std::string::npos; at = table.find("<tr", at + 1))
    ++rows;
  EXPECT_EQ(rows, 3u) << "a header and one row per rank: " << table;
  EXPECT_NE(table.find("<td>cuda:1</td>"), std::string::npos) << table;
  const std::string chart = SvgElement(dom, "chart-allreduce");
  ASSERT_FALSE(chart.empty()) << "no chart-allreduce svg in the rendered DOM";
  const json report = json::parse(testing::ReadFile(FixturePath("h200-x2-merged")));
  size_t sizes = 0;
  for (const json& c : report["checks"])
    if (c["id"] == "comm.allreduce") sizes = c["metrics"]["sizes"].size();
  size_t points = 0;
  for (size_t at = chart.find("<circle class=\"busbw\""); at != std::string::npos;
       at = chart.find("<circle class=\"busbw\"", at + 1))
    ++points;
  EXPECT_EQ(points, sizes) << "one point per measured message size";
  EXPECT_NE(chart.find("<polyline class=\"busbw\""), std::string::npos);
  EXPECT_NE(chart.find("threshold 225 GB/s"), std::string::npos) << chart;
  EXPECT_NE(chart.find("1.0 GiB"), std::string::npos) << chart;
  EXPECT_NE(dom.find("class=\"all-passed\""), std::string::npos) << "a passing report says so";
}

// ---- JUnit against the schema ----

testing::RunResult Xmllint(const fs::path& file) {
  return RunCommand(
      {"timeout", "60", "xmllint", "--noout", "--schema", SchemaPath().string(), file.string()});
}

TEST(ReportJunitSchema, BothFixturesValidate) {
  if (!testing::HaveProgram("xmllint")) GTEST_SKIP() << "xmllint not installed (libxml2-utils)";
  testing::TempDir dir;
  for (const char* name : {"tiny", "h200-pilot"}) {
    const fs::path xml = dir.path() / (std::string(name) + ".xml");
    auto render = RunTrainlock(
        {"report", FixturePath(name).string(), "--format", "junit", "--out", xml.string()});
    ASSERT_EQ(render.exit_code, 0) << render.err;
    auto lint = Xmllint(xml);
    EXPECT_EQ(lint.exit_code, 0) << name << ": " << lint.err;
    EXPECT_NE(lint.err.find("validates"), std::string::npos) << lint.err;
  }
}

TEST(ReportJunitSchema, FailingReportWithHostileStringsValidates) {
  if (!testing::HaveProgram("xmllint")) GTEST_SKIP() << "xmllint not installed (libxml2-utils)";
  testing::TempDir dir;
  json report = json::parse(testing::ReadFile(FixturePath("tiny")));
  report["verdict"] = "fail";
  for (json& check : report["checks"]) {
    if (check["id"] == "train.step") {
      check["status"] = "fail";
      check["summary"] = "]]></failure>\"<x/>&\x1b[31m\ttab\nnewline \xef\xbf\xbf";
      check["remedy"] = "<!-- not a comment --> &amp;";
    } else if (check["id"] == "train.eval") {
      check["status"] = "error";
    }
  }
  testing::WriteFile(dir.path() / "report.json", report.dump());
  const fs::path xml = dir.path() / "report.xml";
  auto render = RunTrainlock({"report", (dir.path() / "report.json").string(), "--format", "junit",
                              "--out", xml.string()});
  ASSERT_EQ(render.exit_code, 0) << render.err;
  auto lint = Xmllint(xml);
  EXPECT_EQ(lint.exit_code, 0) << lint.err << testing::ReadFile(xml);
}

// ---- JUnit against the Jenkins schema (junit-10.xsd, which pytest's output follows) ----

fs::path JenkinsSchemaPath() {
  return testing::SourceDir() / "tests/junit/jenkins/junit-10.xsd";
}

testing::RunResult XmllintJenkins(const fs::path& file) {
  return RunCommand({"timeout", "60", "xmllint", "--noout", "--schema",
                     JenkinsSchemaPath().string(), file.string()});
}

// Why the Jenkins schema test cannot run here, or "".
std::string JenkinsSchemaMissing() {
  if (!testing::HaveProgram("xmllint")) return "xmllint not installed (libxml2-utils)";
  if (!fs::exists(JenkinsSchemaPath()))
    return JenkinsSchemaPath().string() + " missing: run ci/junit-xsd.sh (ci/deps.sh does)";
  return "";
}

TEST(ReportJunitJenkinsSchema, EveryFixtureValidates) {
  if (std::string why = JenkinsSchemaMissing(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  for (const char* name : {"tiny", "h200-pilot", "h200-8b-oom", "h200-x2-merged"}) {
    const fs::path xml = dir.path() / (std::string(name) + ".xml");
    auto render = RunTrainlock(
        {"report", FixturePath(name).string(), "--format", "junit", "--out", xml.string()});
    ASSERT_EQ(render.exit_code, 0) << render.err;
    auto lint = XmllintJenkins(xml);
    EXPECT_EQ(lint.exit_code, 0) << name << ": " << lint.err;
    EXPECT_NE(lint.err.find("validates"), std::string::npos) << lint.err;
  }
}

// The fault the renderer had: a skipped count on <testsuites>, which junit-10.xsd refuses.
TEST(ReportJunitJenkinsSchema, RefusesASkippedCountOnTestsuites) {
  if (std::string why = JenkinsSchemaMissing(); !why.empty()) GTEST_SKIP() << why;
  testing::TempDir dir;
  const fs::path xml = dir.path() / "tiny.xml";
  auto render = RunTrainlock(
      {"report", FixturePath("tiny").string(), "--format", "junit", "--out", xml.string()});
  ASSERT_EQ(render.exit_code, 0) << render.err;
  std::string text = testing::ReadFile(xml);
  const size_t at = text.find("<testsuites ") + std::string("<testsuites ").size();
  text.insert(at, "skipped=\"14\" ");
  testing::WriteFile(xml, text);
  auto lint = XmllintJenkins(xml);
  EXPECT_NE(lint.exit_code, 0) << lint.err;
  EXPECT_NE(lint.err.find("skipped"), std::string::npos) << lint.err;
}

TEST(ReportJunitSchema, SchemaRejectsATestCaseWithoutAName) {
  if (!testing::HaveProgram("xmllint")) GTEST_SKIP() << "xmllint not installed (libxml2-utils)";
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "broken.xml",
                     "<?xml version=\"1.0\"?>\n<testsuites tests=\"1\" failures=\"0\" "
                     "errors=\"0\">\n  <testsuite name=\"trainlock\" tests=\"1\" failures=\"0\" "
                     "errors=\"0\">\n    <testcase classname=\"trainlock.env\" time=\"0.1\"/>\n"
                     "  </testsuite>\n</testsuites>\n");
  auto lint = Xmllint(dir.path() / "broken.xml");
  EXPECT_NE(lint.exit_code, 0);
  EXPECT_NE(lint.err.find("The attribute 'name' is required but missing"), std::string::npos)
      << lint.err;
}

TEST(ReportJunitSchema, SchemaRejectsCountsThatAreNotNumbers) {
  if (!testing::HaveProgram("xmllint")) GTEST_SKIP() << "xmllint not installed (libxml2-utils)";
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "broken.xml",
                     "<testsuites tests=\"one\" failures=\"0\" errors=\"0\"/>\n");
  EXPECT_NE(Xmllint(dir.path() / "broken.xml").exit_code, 0);
}

// ---- the command line ----

TEST(ReportCli, EveryFormatRendersTheFixturesAndExitsZero) {
  for (const char* name : {"tiny", "h200-pilot"}) {
    for (const char* format : {"text", "markdown", "html", "junit"}) {
      auto r = RunTrainlock({"report", FixturePath(name).string(), "--format", format});
      EXPECT_EQ(r.exit_code, 0) << name << " " << format << ": " << r.err;
      EXPECT_FALSE(r.out.empty());
      EXPECT_TRUE(r.err.empty()) << r.err;
    }
  }
}

TEST(ReportCli, AFailingVerdictStillExitsZero) {
  testing::TempDir dir;
  json report = json::parse(testing::ReadFile(FixturePath("tiny")));
  report["verdict"] = "fail";
  report["checks"][9]["status"] = "fail";
  testing::WriteFile(dir.path() / "report.json", report.dump());
  auto r = RunTrainlock({"report", (dir.path() / "report.json").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict: FAIL"), std::string::npos);
}

TEST(ReportCli, OutWritesTheFileAndNothingToStdout) {
  testing::TempDir dir;
  const fs::path out = dir.path() / "report.md";
  auto written = RunTrainlock(
      {"report", FixturePath("tiny").string(), "--format", "markdown", "--out", out.string()});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_TRUE(written.out.empty());
  auto printed = RunTrainlock({"report", FixturePath("tiny").string(), "--format", "markdown"});
  EXPECT_EQ(testing::ReadFile(out), printed.out);
}

TEST(ReportCli, AutoColourIsOffWhenStdoutIsNotATerminal) {
  auto r = RunProgram("trainlock", {"report", FixturePath("tiny").string()},
                      {"NO_COLOR=", "TERM=xterm"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
}

TEST(ReportCli, ExplicitColorAlwaysWinsOverNoColor) {
  auto r = RunProgram("trainlock", {"report", FixturePath("tiny").string(), "--color", "always"},
                      {"NO_COLOR=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\x1b[32mPASS"), std::string::npos);
}

// `trainlock report` with --color auto on a pseudo-terminal that script(1) provides.
testing::RunResult ReportOnATerminal(const std::string& no_color) {
  std::string command =
      (testing::BinDir() / "trainlock").string() + " report " + FixturePath("tiny").string();
  return RunCommand({"timeout", "60", "script", "-qec", command, "/dev/null"},
                    {"NO_COLOR=" + no_color, "TERM=xterm"});
}

TEST(ReportCli, AutoColoursATerminalUnlessNoColorIsSet) {
  if (!testing::HaveProgram("script")) GTEST_SKIP() << "script(1) not installed (util-linux)";
  auto coloured = ReportOnATerminal("");
  ASSERT_EQ(coloured.exit_code, 0) << coloured.err;
  EXPECT_NE(coloured.out.find("\x1b[32mPASS"), std::string::npos) << coloured.out;
  auto plain = ReportOnATerminal("1");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("PASS"), std::string::npos);
  EXPECT_EQ(plain.out.find('\x1b'), std::string::npos);
}

TEST(ReportCli, HelpDocumentsFormatsAndNoColor) {
  auto r = RunTrainlock({"report", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"markdown", "junit", "NO_COLOR", "always"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

TEST(ReportCli, NonJsonReportIsBadInputNamingFileLineAndColumn) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "report.json";
  testing::WriteFile(file, "{\n  \"schema\": oops\n}\n");
  auto r = RunTrainlock({"report", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(file.string() + ":2:", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(ReportCli, SchemaViolationsAreBadInputListingEveryOne) {
  testing::TempDir dir;
  json report = json::parse(testing::ReadFile(FixturePath("tiny")));
  report.erase("verdict");
  report["lock_sha256"] = "abc";
  report["checks"][0]["status"] = "maybe";
  const fs::path file = dir.path() / "report.json";
  testing::WriteFile(file, report.dump(2));
  auto r = RunTrainlock({"report", file.string(), "--format", "html"});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* violation : {"verdict: missing", "lock_sha256: must be 64 hex characters",
                                "checks[0].status: unexpected value \"maybe\""}) {
    EXPECT_NE(r.err.find(file.string() + ": error: not a trainlock.report/v2 report: " + violation +
                         "\n"),
              std::string::npos)
        << violation << "\n"
        << r.err;
  }
  EXPECT_TRUE(r.out.empty());
}

TEST(ReportCli, AV1ReportIsBadInputInOneLineAskingForANewValidation) {
  testing::TempDir dir;
  json report = json::parse(testing::ReadFile(FixturePath("tiny")));
  report["schema"] = "trainlock.report/v1";
  const fs::path file = dir.path() / "report.json";
  testing::WriteFile(file, report.dump(2));
  auto r = RunTrainlock({"report", file.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, file.string() +
                       ": error: a trainlock.report/v1 report, which this trainlock does not read "
                       "(it reads trainlock.report/v2): validate the node again with this "
                       "trainlock\n");
  EXPECT_TRUE(r.out.empty());
}

TEST(ReportCli, MissingReportFileIsBadInput) {
  auto r = RunTrainlock({"report", "/nonexistent/report.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/report.json: error: cannot read"), std::string::npos) << r.err;
}

TEST(ReportCli, UnknownFormatIsAUsageError) {
  auto r = RunTrainlock({"report", FixturePath("tiny").string(), "--format", "pdf"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace trainlock
