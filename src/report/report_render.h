// Rendering a report.json (trainlock.report/v1) for people and CI systems: text for a
// terminal, GitHub-flavoured markdown, one self-contained HTML page with charts, and JUnit XML.
//
// Every function here is pure (json in, string out, no I/O). The report is untrusted input:
// the renderers escape every string taken from it for the output's language and never throw
// on odd-but-valid content (missing metrics, NaN, huge strings, invalid UTF-8).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

enum class ReportFormat { kText, kMarkdown, kHtml, kJunit };

// "text", "markdown", "html" or "junit"; nullopt for anything else.
std::optional<ReportFormat> ParseReportFormat(std::string_view name);

// `--color auto|always|never`.
enum class ColorMode { kAuto, kAlways, kNever };

// Whether text output gets ANSI colour. Follows https://no-color.org: NO_COLOR set to a
// non-empty value turns off the default (auto) colouring, and so does TERM=dumb; an explicit
// `always` asked for on the command line wins over both. `no_color` and `term` are the
// variables' values, nullptr when unset.
bool ShouldUseColor(ColorMode mode, bool output_is_tty, const char* no_color, const char* term);

// One line per check (status, id, duration, summary; the remedy indented on the next line for
// a check that did not pass), under a header of the report's facts and over a verdict footer;
// a merged report adds one line per rank (device, tokens/s, peak memory, bits, its checks).
// With `color`, statuses and the verdict carry ANSI colours; without, the output has no
// escape sequence at all (control characters from the report are shown as \xNN).
std::string RenderReportText(const nlohmann::json& report, bool color);

// The header facts and a table of the checks, GitHub-flavoured (for job summaries and PRs);
// a merged report adds a table of the ranks.
std::string RenderReportMarkdown(const nlohmann::json& report);

// One self-contained HTML page (no scripts, no external resources) with inline SVG charts:
// id="chart-loss" (per-step loss of the uninterrupted vs the resumed run), id="chart-memory"
// (peak memory against capacity) and id="chart-durations" (time per check); a chart without
// data is a "no data: <reason>" note carrying the same id.
std::string RenderReportHtml(const nlohmann::json& report);

// JUnit XML: <testsuites> with one <testsuite name="trainlock">, one <testcase> per check.
// Valid against tests/junit/junit.xsd.
std::string RenderReportJunit(const nlohmann::json& report);

// Renders `report` in `format`; `color` only matters for text.
std::string RenderReport(const nlohmann::json& report, ReportFormat format, bool color);

// ---- Pieces the renderers share (report_render.cc), exposed for their tests. ----

// The facts of a report the renderers show, read tolerantly: a missing or ill-typed field
// becomes "" (or NaN for a number) instead of an exception.
struct ReportCheckView {
  std::string id;
  std::string status;  // "pass" | "fail" | "skip" | "error" (anything else shown as given)
  double duration_s = 0;
  std::string summary;
  std::string remedy;
  nlohmann::json metrics = nlohmann::json::object();
};

// One rank of a distributed validation's merged report (its `ranks` entries).
struct ReportRankView {
  std::string rank;  // "3"; "?" when absent
  std::string device;
  std::string host;
  std::string error;  // a rank that sent no result: why
  std::optional<double> tokens_per_s;
  std::optional<double> peak_reserved_bytes;
  std::string digest;                   // the first 12 hex of its uninterrupted run's digest
  int passed = 0;                       // its own checks that passed
  std::vector<std::string> not_passed;  // "train.roundtrip fail"
};

struct ReportView {
  std::string project;
  std::string verdict;
  std::string lock_sha256;
  std::string image_ref;     // "" when the report has no image
  std::string image_digest;  // "" when the report has no image
  std::string validator_version;
  std::string torch;
  std::string build;
  std::string started_at;
  double duration_s = 0;
  std::vector<std::string> devices;  // "0: NVIDIA H200 (9.0, 140.4 GiB)"
  std::string host;                  // "vm, Debian GNU/Linux 12 (bookworm), 2 CPUs, 23.5 GiB"
  std::vector<ReportCheckView> checks;
  std::vector<ReportRankView> ranks;  // empty for a single process

  int Count(std::string_view status) const;
};

ReportView ViewOfReport(const nlohmann::json& report);

// The member `key` of `object` when it is a finite number; nullopt otherwise.
std::optional<double> FiniteNumber(const nlohmann::json& object, const char* key);

// `text` as valid UTF-8 without control characters other than tab and newline: invalid
// sequences and other controls become U+FFFD. XML forbids them, and HTML and terminals
// misbehave on them.
std::string CleanText(std::string_view text);

// One line of report text as a terminal may show it: control characters (an escape sequence
// smuggled into a summary or a hostname, a newline) become \xNN, and the rest valid UTF-8.
std::string TerminalLine(std::string_view text);

// Escapes for HTML/XML text and attribute values (& < > " '), after CleanText.
std::string EscapeMarkup(std::string_view text);

// The group a check belongs to: the part of its id before the first '.' ("train").
std::string CheckGroup(std::string_view id);

}  // namespace trainlock
