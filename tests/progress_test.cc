// Progress on stderr in each style: what a log, a machine and a terminal get, and that none of
// them lets a hostile check summary reach the terminal as escapes.
#include "base/progress.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlock {
namespace {

// What a Progress wrote, read back from its temporary file.
class Captured {
 public:
  Captured() : file_(std::tmpfile()) {}
  ~Captured() { std::fclose(file_); }
  std::FILE* file() { return file_; }
  std::vector<std::string> Lines() {
    std::fflush(file_);
    std::rewind(file_);
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::FILE* file_;
};

TEST(Progress, ALogGetsATimestampedLineWhenAPhaseBeginsAndEnds) {
  Captured out;
  {
    Progress p(ProgressStyle::kLog, "trainlock-validate", out.file());
    p.Begin("train.roundtrip on cuda:0");
    p.End();
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 2u);
  const std::string stamp = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ )";
  EXPECT_TRUE(std::regex_match(lines[0],
                               std::regex(stamp + "trainlock-validate: train.roundtrip on cuda:0")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex(stamp + R"(trainlock-validate: done train.roundtrip on cuda:0 \(\d+\.\d s\))")))
      << lines[1];
}

TEST(Progress, ALogGetsEachCompletedCheckOnceWithItsStatusAndSummary) {
  Captured out;
  {
    Progress p(ProgressStyle::kLog, "trainlock-validate rank 1", out.file());
    p.Checked("env.driver", "pass", 0.01, "driver 580.159.04");
    p.Checked("env.driver", "pass", 0.01, "driver 580.159.04");  // announced again: ignored
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("trainlock-validate rank 1: check env.driver pass (0.0 s): driver "
                          "580.159.04"),
            std::string::npos)
      << lines[0];
}

// Without a terminal stdout and stderr meet in one log (CI, kubectl logs): the summary lists
// every check, so the log keeps only the phases and lists each check once.
TEST(Progress, ALogLeavesTheChecksToASummaryThatListsThem) {
  Captured out;
  {
    Progress p(ProgressStyle::kLog, "trainlock-validate", out.file());
    p.LeaveChecksToSummary();
    p.Begin("node probes");
    p.Checked("env.driver", "pass", 0.01, "driver 580.159.04");
    p.End();
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("trainlock-validate: node probes"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("trainlock-validate: done node probes"), std::string::npos) << lines[1];
}

TEST(Progress, JsonLinesKeepTheChecksASummaryLists) {
  Captured out;
  {
    Progress p(ProgressStyle::kJson, "trainlock-validate", out.file());
    p.LeaveChecksToSummary();
    p.Checked("env.driver", "pass", 0.01, "driver 580.159.04");
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["event"], "check") << lines[0];
}

TEST(Progress, JsonLinesCarryTheEventsForMachines) {
  Captured out;
  {
    Progress p(ProgressStyle::kJson, "trainlock-validate", out.file());
    p.Begin("ops.custom");
    p.Checked("ops.custom", "fail", 4.5, "relu_plus: forward differs");
    p.End();
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 3u);
  nlohmann::json begin = nlohmann::json::parse(lines[0]), check = nlohmann::json::parse(lines[1]),
                 end = nlohmann::json::parse(lines[2]);
  EXPECT_EQ(begin["event"], "begin");
  EXPECT_EQ(begin["phase"], "ops.custom");
  EXPECT_EQ(begin["source"], "trainlock-validate");
  EXPECT_FALSE(begin.contains("seconds"));
  EXPECT_EQ(check["event"], "check");
  EXPECT_EQ(check["check"], "ops.custom");
  EXPECT_EQ(check["status"], "fail");
  EXPECT_EQ(check["summary"], "relu_plus: forward differs");
  EXPECT_DOUBLE_EQ(check["seconds"].get<double>(), 4.5);
  EXPECT_EQ(end["event"], "end");
  EXPECT_TRUE(end["seconds"].is_number());
  EXPECT_TRUE(std::regex_match(begin["time"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));
}

TEST(Progress, NoneWritesNothing) {
  Captured out;
  {
    Progress p(ProgressStyle::kNone, "trainlock-validate", out.file());
    p.Begin("train.step");
    p.Checked("train.step", "pass", 0.4, "step 0.4 s");
    p.End();
  }
  EXPECT_TRUE(out.Lines().empty());
}

TEST(Progress, ATerminalShowsEachCheckAsItCompletesAndThePhaseWhenItEnds) {
  Captured out;
  {
    Progress p(ProgressStyle::kTerminal, "trainlock-validate", out.file());
    p.Begin("env.arch, perf.*: measuring each device");
    p.Checked("env.arch", "pass", 0.0, "sm_90");
    p.End();
  }
  std::string all;
  for (const std::string& line : out.Lines()) all += line + "\n";
  EXPECT_NE(all.find("env.arch"), std::string::npos);
  EXPECT_NE(all.find("pass"), std::string::npos);
  EXPECT_NE(all.find("done env.arch, perf.*: measuring each device ("), std::string::npos) << all;
}

// A pseudo-terminal: `stream` writes to its terminal side, Read() returns what reached it.
class Pty {
 public:
  Pty() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) return;
    terminal_ = ::open(::ptsname(master_), O_RDWR | O_NOCTTY);
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
    stream_ = ::fdopen(::dup(terminal_), "w");
  }
  ~Pty() {
    if (stream_) std::fclose(stream_);
    if (terminal_ >= 0) ::close(terminal_);
    if (master_ >= 0) ::close(master_);
  }
  bool ok() const { return stream_ != nullptr; }
  std::FILE* stream() { return stream_; }
  int terminal() const { return terminal_; }
  std::string Read() {
    std::fflush(stream_);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(master_, buf, sizeof buf)) > 0;) text.append(buf, n);
    return text;
  }

 private:
  int master_ = -1;
  int terminal_ = -1;
  std::FILE* stream_ = nullptr;
};

// The terminal progress of a run that announces env.arch while "measuring" runs.
std::string TerminalProgress(Pty& pty, int results_fd) {
  {
    Progress p(ProgressStyle::kTerminal, "trainlock-validate", pty.stream(), results_fd);
    p.Begin("measuring");
    p.Checked("env.arch", "pass", 0.0, "sm_90");
    p.End();
  }
  return pty.Read();
}

TEST(Progress, OnTheTerminalTheSummaryGoesToEachCheckIsLeftToTheSummary) {
  Pty pty;
  ASSERT_TRUE(pty.ok()) << "no pseudo-terminal";
  const std::string shown = TerminalProgress(pty, pty.terminal());
  EXPECT_EQ(shown.find("env.arch"), std::string::npos) << shown;
  EXPECT_NE(shown.find("done measuring ("), std::string::npos) << shown;
}

TEST(Progress, OnATerminalTheSummaryDoesNotGoToEachCheckIsShown) {
  Pty pty;
  ASSERT_TRUE(pty.ok()) << "no pseudo-terminal";
  int results[2];
  ASSERT_EQ(::pipe(results), 0);
  const std::string shown = TerminalProgress(pty, results[1]);
  ::close(results[0]);
  ::close(results[1]);
  EXPECT_NE(shown.find("env.arch"), std::string::npos) << shown;
}

TEST(Progress, AHostileSummaryReachesALogAsTextNotEscapes) {
  Captured out;
  {
    Progress p(ProgressStyle::kLog, "trainlock-validate", out.file());
    p.Checked("ext.command", "fail", 1, "exit 1: \x1b]0;pwned\x07\x1b[2J\rok");
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find('\x1b'), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find('\r'), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\\x1b]0;pwned"), std::string::npos) << lines[0];
}

// A check's summary quotes what a command or an engine printed; no style shows its secrets.
TEST(Progress, ASecretInASummaryIsMaskedInEveryStyle) {
  const std::string token = "hf_" + std::string(34, 'Q');
  for (ProgressStyle style : {ProgressStyle::kLog, ProgressStyle::kJson}) {
    Captured out;
    {
      Progress p(style, "trainlock-validate", out.file());
      p.Checked("ext.command", "fail", 1, "exit 1: DB_PASSWORD=hunter2-planted " + token);
    }
    std::vector<std::string> lines = out.Lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].find("hunter2-planted"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].find(token), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("DB_PASSWORD=***"), std::string::npos) << lines[0];
  }
}

TEST(Progress, APhaseAnErrorCutsShortEndsAsStoppedNotDone) {
  Captured out;
  try {
    Progress p(ProgressStyle::kLog, "trainlock fetch", out.file());
    p.Begin("model org/name: model.safetensors");
    throw std::runtime_error("connection reset");
  } catch (const std::runtime_error&) {
  }
  std::vector<std::string> lines = out.Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("trainlock fetch: stopped model org/name: model.safetensors ("),
            std::string::npos)
      << lines[1];
}

TEST(Progress, StyleNamesParseAndAnUnknownOneIsRefused) {
  EXPECT_EQ(ParseProgressStyle("log"), ProgressStyle::kLog);
  EXPECT_EQ(ParseProgressStyle("json"), ProgressStyle::kJson);
  EXPECT_EQ(ParseProgressStyle("none"), ProgressStyle::kNone);
  EXPECT_EQ(ParseProgressStyle("terminal"), ProgressStyle::kTerminal);
  EXPECT_TRUE(ParseProgressStyle("auto").has_value());
  EXPECT_FALSE(ParseProgressStyle("xml").has_value());
}

}  // namespace
}  // namespace trainlock
