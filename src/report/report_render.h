// Rendering a report.json (trainlock.report/v2) for people and CI systems: text for a
// terminal, GitHub-flavoured markdown, one self-contained HTML page with charts, and JUnit XML.
//
// Every function here is pure (json in, string out, no I/O). The report is untrusted input:
// the renderers read it only through its view (report_view.h), escape every string taken from
// it for the output's language and never throw on odd-but-valid content (missing metrics, NaN,
// huge strings, invalid UTF-8).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/terminal_text.h"

#include "report/report_view.h"

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

// "NVIDIA H200 (9.0, 140.4 GiB)".
std::string DescribeDevice(const DeviceView& device);

// "vm, Debian GNU/Linux 12 (bookworm), 2 CPUs, 23.5 GiB"; "" when the report says nothing.
std::string DescribeHost(const HostView& host);

// train.roundtrip's GPU telemetry in one line, from that check's metrics: "GPU 0: 452-688 W
// (mean 650, limit 700), max 71 C, SM 1500-1980 MHz, util 98%, throttled 0 s of 41 s"; "none
// (CPU run)" when it is unavailable; "" when the metrics carry no telemetry.
std::string TelemetryLine(const nlohmann::json& roundtrip_metrics);

// Escapes for HTML/XML text and attribute values (& < > " '), after CleanText.
std::string EscapeMarkup(std::string_view text);

// The group a check belongs to: the part of its id before the first '.' ("train").
std::string CheckGroup(std::string_view id);

}  // namespace trainlock
