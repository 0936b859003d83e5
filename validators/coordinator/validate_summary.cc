// The validator's summary; see validate_summary.h.
#include "coordinator/validate_summary.h"

#include <cctype>
#include <cstdio>
#include <iostream>

#include "base/terminal_text.h"
#include "base/version_info.h"
#include "report/report_render.h"

namespace trainlock::validate {

namespace {

constexpr size_t kVerboseMetricsChars = 400;

// "PASS ", "FAIL ", "skip ", "ERROR": the status name, loud where a person must look.
std::string StatusWord(CheckStatus s) {
  std::string word = CheckStatusName(s);
  if (s != CheckStatus::kSkip) {
    for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  word.resize(5, ' ');
  return word;
}

}  // namespace

void PrintSummary(const Report& report, const ValidateOptions& o, const std::string& lock_sha,
                  const std::optional<RankEnv>& rank) {
  // Every value here that trainlock did not write (a path, an engine's answer, an interpreter's
  // probe) goes through the terminal-safe printer: a path or a probe answer with an escape
  // sequence or a newline must not act on the terminal or forge a line (issue #61).
  std::cout << "trainlock-validate " << kTrainlockVersion << " (torch "
            << TerminalLine(report.torch_version) << ", " << report.build << ") "
            << TerminalLine(o.project.string()) << " lock " << lock_sha.substr(0, 12);
  if (rank)
    std::cout << " rank " << rank->rank << "/" << rank->world_size << " (" << rank->launcher << ")";
  std::cout << "\n";
  if (!report.negative_control.empty()) {
    std::cout << "NEGATIVE CONTROL (" << report.negative_control
              << "): this run breaks the resume on purpose; its verdict is never pass\n";
  }
  if (report.engine) {
    std::cout << "engine " << TerminalLine(report.engine->name) << ": torch "
              << (report.engine->torch.empty() ? "?" : TerminalLine(report.engine->torch)) << " in "
              << (report.engine->python.empty() ? "(no interpreter)"
                                                : TerminalLine(report.engine->python))
              << "\n";
  }
  if (!report.environment_error.empty()) {
    std::cout << "NOT JUDGED: " << TerminalLine(report.environment_error) << "\n";
  }
  for (const ReportDrift& d : report.drift)
    std::cout << "DRIFT (--allow-drift) " << d.id << ": " << TerminalLine(d.message) << "\n";
  int counts[4] = {};
  for (const CheckResult& c : report.checks) {
    ++counts[static_cast<int>(c.status)];
    char line[64];
    std::snprintf(line, sizeof line, "  %s %-16s %7.2fs  ", StatusWord(c.status).c_str(),
                  c.id.c_str(), c.duration_s);
    // Summaries quote devices, libraries and the project's command: text, never escapes.
    std::cout << line << TerminalLine(c.summary) << "\n";
    if (c.status == CheckStatus::kFail || c.status == CheckStatus::kError) {
      if (!c.remedy.empty()) std::cout << "         remedy: " << TerminalLine(c.remedy) << "\n";
    }
    if (o.verbose && c.metrics.is_object() && !c.metrics.empty()) {
      std::string metrics =
          c.metrics.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      // A metrics object can hold a table per device: the report has all of it.
      if (metrics.size() > kVerboseMetricsChars)
        metrics = metrics.substr(0, kVerboseMetricsChars) + "... (the report has the rest)";
      std::cout << "         metrics: " << TerminalLine(metrics) << "\n";
      if (const std::string t = c.id == "train.roundtrip" ? TelemetryLine(c.metrics) : "";
          !t.empty())
        std::cout << "         telemetry: " << TerminalLine(t) << "\n";
    }
  }
  std::cout << "verdict: " << report.Verdict() << " (" << counts[0] << " passed, " << counts[1]
            << " failed, " << counts[3] << " errors, " << counts[2] << " skipped) in "
            << static_cast<int>(report.duration_s + 0.5) << " s -> "
            << TerminalLine(rank && rank->rank != 0 ? RankReportPath(o.out.string(), rank->rank)
                                                    : o.out.string())
            << "\n";
}

void AnnounceChecks(Progress& progress, const Report& report) {
  for (const CheckResult& c : report.checks)
    progress.Checked(c.id, CheckStatusName(c.status), c.duration_s, c.summary);
}

ProgressStyle ProgressStyleFor(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  // main.cc accepted only names ParseProgressStyle knows.
  ProgressStyle style = ParseProgressStyle(o.progress).value_or(ProgressStyle::kNone);
  if (style == ProgressStyle::kTerminal && rank && rank->rank != 0) return ProgressStyle::kNone;
  return style;
}

std::string ProgressSource(const std::optional<RankEnv>& rank) {
  return rank ? "trainlock-validate rank " + std::to_string(rank->rank) : "trainlock-validate";
}

}  // namespace trainlock::validate
