// Report rendering: the header facts, escaping and number formatting the renderers share, and
// the text and markdown renderers; see report_render.h. HTML is in report_html.cc, JUnit in
// report_junit.cc.
#include "report/report_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"
#include "base/text_format.h"
#include "project/check_ids.h"
#include "report/check_metrics.h"

namespace trainlock {

std::optional<ReportFormat> ParseReportFormat(std::string_view name) {
  if (name == "text") return ReportFormat::kText;
  if (name == "markdown") return ReportFormat::kMarkdown;
  if (name == "html") return ReportFormat::kHtml;
  if (name == "junit") return ReportFormat::kJunit;
  return std::nullopt;
}

bool ShouldUseColor(ColorMode mode, bool output_is_tty, const char* no_color, const char* term) {
  if (mode == ColorMode::kAlways) return true;
  if (mode == ColorMode::kNever || !output_is_tty) return false;
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return term == nullptr || std::string_view(term) != "dumb";
}

std::string RenderReport(const nlohmann::json& report, ReportFormat format, bool color) {
  switch (format) {
    case ReportFormat::kText:
      return RenderReportText(report, color);
    case ReportFormat::kMarkdown:
      return RenderReportMarkdown(report);
    case ReportFormat::kHtml:
      return RenderReportHtml(report);
    case ReportFormat::kJunit:
      return RenderReportJunit(report);
  }
  return RenderReportText(report, color);
}

std::string TelemetryLine(const nlohmann::json& roundtrip_metrics) {
  const auto t = ReadMetrics<TelemetryMetrics>(
      ReadMetrics<RoundtripMetrics>(roundtrip_metrics).telemetry.value_or(nlohmann::json()));
  if (!t.devices || t.devices->empty()) return t.unavailable ? "none (" + *t.unavailable + ")" : "";
  auto whole = [](const Number& n) { return n ? std::to_string(std::lround(*n)) : "?"; };
  std::string out;
  for (const TelemetryDevice& d : *t.devices) {
    const auto power = ReadMetrics<TelemetryRange>(d.power_w.value_or(nlohmann::json()));
    const auto sm = ReadMetrics<TelemetryRange>(d.sm_clock_mhz.value_or(nlohmann::json()));
    const auto temp = ReadMetrics<TelemetryRange>(d.temperature_c.value_or(nlohmann::json()));
    const auto util = ReadMetrics<TelemetryRange>(d.utilization_pct.value_or(nlohmann::json()));
    out += (out.empty() ? "GPU " : "; GPU ") + whole(d.index ? Number(*d.index) : Number()) + ": " +
           whole(power.min) + "-" + whole(power.max) + " W (mean " + whole(power.mean) +
           ", limit " + whole(d.power_limit_w) + "), max " + whole(temp.max) + " C, SM " +
           whole(sm.min) + "-" + whole(sm.max) + " MHz, util " + whole(util.mean) +
           "%, throttled " + FormatSeconds(d.throttled_s.value_or(0.0)) + " of " +
           FormatSeconds(t.window_s.value_or(0.0));
  }
  return out;
}

// ---- Facts of the header ----

std::string DescribeDevice(const DeviceView& device) {
  std::string out = device.name.empty() ? "unnamed device" : device.name;
  std::string details = device.arch;
  if (device.memory_bytes) {
    details += (details.empty() ? "" : ", ") + FormatBytes(*device.memory_bytes);
  }
  return details.empty() ? out : out + " (" + details + ")";
}

std::string DescribeHost(const HostView& host) {
  std::vector<std::string> parts;
  for (const std::string& s : {host.hostname, host.os}) {
    if (!s.empty()) parts.push_back(s);
  }
  if (host.cpus) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.0f CPUs", *host.cpus);
    parts.push_back(buf);
  }
  if (host.memory_bytes) parts.push_back(FormatBytes(*host.memory_bytes));
  return JoinStrings(parts, ", ");
}

namespace {

// "6 passed" or "5 passed; train.roundtrip fail".
std::string RankChecksLine(const RankView& r) {
  std::string out = std::to_string(r.passed) + " passed";
  for (const std::string& s : r.not_passed) out += "; " + s;
  return out;
}

// "38378 tokens/s" ("38378" without the unit); "" when unknown.
std::string RankTokensLine(const RankView& r, bool unit = true) {
  if (!r.tokens_per_s) return "";
  char text[48];
  std::snprintf(text, sizeof text, "%.0f%s", *r.tokens_per_s, unit ? " tokens/s" : "");
  return text;
}

}  // namespace

// ---- Escaping and formatting ----

namespace {

// Appends the entity of a character that would start markup (& < >) and returns true; false
// for any other character. HTML and markdown cells both escape these.
bool AppendMarkupEntity(char c, std::string& out) {
  switch (c) {
    case '&':
      out += "&amp;";
      return true;
    case '<':
      out += "&lt;";
      return true;
    case '>':
      out += "&gt;";
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string EscapeMarkup(std::string_view text) {
  std::string out;
  for (char c : CleanText(text)) {
    if (AppendMarkupEntity(c, out)) continue;
    switch (c) {
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string CheckGroup(std::string_view id) {
  return std::string(id.substr(0, id.find('.')));
}

// ---- Text ----

namespace {

// ANSI SGR colours; only used when the caller asked for colour.
constexpr const char* kReset = "\x1b[0m";
constexpr const char* kBold = "\x1b[1m";
constexpr const char* kDim = "\x1b[2m";

const char* StatusColor(std::string_view status) {
  if (status == "pass") return "\x1b[32m";   // green
  if (status == "fail") return "\x1b[31m";   // red
  if (status == "error") return "\x1b[35m";  // magenta: the check itself broke
  if (status == "skip") return "\x1b[33m";   // yellow
  return "";
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

class TextWriter {
 public:
  explicit TextWriter(bool color) : color_(color) {}

  // `text` wrapped in `style` when colouring.
  std::string Styled(const std::string& text, const char* style) const {
    return color_ && style[0] != '\0' ? style + text + kReset : text;
  }

  std::string Status(std::string_view status, size_t width) const {
    std::string label = Upper(TerminalLine(status.empty() ? "?" : status));
    if (label.size() < width) label.append(width - label.size(), ' ');
    return Styled(label, StatusColor(status));
  }

 private:
  bool color_;
};

// "8 x NVIDIA H200 (9.0, 140.4 GiB)" for identical devices in a row.
std::string DeviceSummary(const ReportView& v) {
  if (v.devices.empty()) return v.build == "cpu" ? "none (CPU build)" : "none";
  std::vector<std::string> devices;
  for (const DeviceView& d : v.devices) devices.push_back(DescribeDevice(d));
  std::string out;
  for (size_t i = 0; i < devices.size();) {
    size_t same = i;
    while (same < devices.size() && devices[same] == devices[i]) ++same;
    out += (out.empty() ? "" : "; ") + std::to_string(same - i) + " x " + devices[i];
    i = same;
  }
  return out;
}

std::string CountsLine(const ReportView& v) {
  return std::to_string(v.Count("pass")) + " passed, " + std::to_string(v.Count("fail")) +
         " failed, " + std::to_string(v.Count("error")) + " errors, " +
         std::to_string(v.Count("skip")) + " skipped";
}

std::string ValidatorLine(const ReportView& v) {
  return "trainlock-validate " + (v.validator_version.empty() ? "?" : v.validator_version) +
         ", torch " + (v.torch.empty() ? "?" : v.torch) + ", build " +
         (v.build.empty() ? "?" : v.build);
}

// "torch 2.11.0+cu130 in /opt/venv/bin/python": the Python engine's interpreter.
std::string EngineLine(const ReportView& v) {
  return "torch " + (v.engine_torch.empty() ? std::string("?") : v.engine_torch) + " in " +
         v.engine_python;
}

std::string ImageLine(const ReportView& v) {
  if (v.image_ref.empty() && v.image_digest.empty()) return "none";
  return v.image_ref + (v.image_digest.empty() ? "" : " (" + v.image_digest + ")");
}

}  // namespace

std::string RenderReportText(const nlohmann::json& report, bool color) {
  ReportView v = ViewOfReport(report);
  TextWriter w(color);
  std::string verdict = w.Status(v.verdict, 0);
  std::string out;
  out += w.Styled("trainlock report" + (v.project.empty() ? "" : ": " + TerminalLine(v.project)),
                  kBold) +
         "\n";
  auto fact = [&](const char* name, const std::string& value) {
    std::string label = name;
    label.append(11 - label.size(), ' ');
    out += "  " + w.Styled(label, kDim) + value + "\n";
  };
  fact("verdict", verdict);
  if (!v.environment_error.empty()) {
    fact("NOT JUDGED", w.Styled(TerminalLine(v.environment_error), kBold));
  }
  if (!v.negative_control.empty()) {
    fact("NEGATIVE", w.Styled("control (" + TerminalLine(v.negative_control) +
                                  "): the resume was broken on purpose; never a pass",
                              kBold));
  }
  for (const std::string& d : v.drift) fact("DRIFT", TerminalLine(d));
  fact("lock", v.lock_sha256.empty() ? "?" : TerminalLine(ShortSha(v.lock_sha256)));
  fact("image", TerminalLine(ImageLine(v)));
  fact("devices", TerminalLine(DeviceSummary(v)));
  fact("validator", TerminalLine(ValidatorLine(v)));
  if (!v.engine_python.empty()) fact("engine", TerminalLine(EngineLine(v)));
  if (std::string host = DescribeHost(v.host); !host.empty()) fact("host", TerminalLine(host));
  fact("started", TerminalLine(v.started_at.empty() ? "?" : v.started_at) + ", took " +
                      FormatSeconds(v.duration_s));
  out += "\n";

  size_t id_width = 0;
  for (const CheckView& c : v.checks) id_width = std::max(id_width, c.id.size());
  id_width = std::min<size_t>(id_width, 24);
  for (const CheckView& c : v.checks) {
    std::string id = TerminalLine(c.id);
    if (id.size() < id_width) id.append(id_width - id.size(), ' ');
    std::string duration = FormatSeconds(c.duration_s);
    if (duration.size() < 9) duration.insert(0, 9 - duration.size(), ' ');
    out +=
        w.Status(c.status, 5) + "  " + id + "  " + duration + "  " + TerminalLine(c.summary) + "\n";
    if (c.status != "pass" && !c.remedy.empty()) {
      out += std::string(7, ' ') + "remedy: " + TerminalLine(c.remedy) + "\n";
    }
    // The GPUs watched while the round trip trained; a CPU run has nothing to show.
    if (const std::string t = c.id == "train.roundtrip" ? TelemetryLine(c.metrics) : "";
        t.rfind("GPU", 0) == 0) {
      out += std::string(7, ' ') + "telemetry: " + TerminalLine(t) + "\n";
    }
  }
  if (!v.ranks.empty()) out += "\n" + w.Styled("ranks", kBold) + "\n";
  for (const RankView& r : v.ranks) {
    std::string line = "rank " + r.rank;
    if (!r.error.empty()) {
      out += "  " + TerminalLine(line) + "  " + w.Status("error", 0) + ": " +
             TerminalLine(r.error) + "\n";
      continue;
    }
    for (const std::string& part :
         {r.device, r.host, RankTokensLine(r),
          r.peak_reserved_bytes ? "peak reserved " + FormatBytes(*r.peak_reserved_bytes) : "",
          r.digest.empty() ? "" : "bits " + r.digest, RankChecksLine(r)}) {
      if (!part.empty()) line += "  " + part;
    }
    out += "  " + TerminalLine(line) + "\n";
  }
  out += "\n" + w.Styled("verdict: ", kBold) + verdict + " (" + CountsLine(v) + ")\n";
  return out;
}

// ---- Markdown ----

namespace {

// One past the run of backticks that closes the code span whose opening run of `n` starts at
// `at` (the next run of exactly `n`, as CommonMark pairs them); npos when none closes it.
size_t CodeSpanEnd(std::string_view text, size_t at, size_t n) {
  for (size_t i = at + n; i < text.size();) {
    if (text[i] != '`') {
      ++i;
      continue;
    }
    const size_t run = text.find_first_not_of('`', i);
    const size_t end = run == std::string_view::npos ? text.size() : run;
    if (end - i == n) return end;
    i = end;
  }
  return std::string_view::npos;
}

// A code span inside a cell, `span` with its backtick runs: shown literally by markdown, so only
// what would break the table changes: '|' is escaped (GFM takes \| inside a span as a pipe of
// the span) and a line break becomes a space, as it would within a span anyway.
void AppendCodeSpan(std::string_view span, std::string& out) {
  for (size_t i = 0; i < span.size(); ++i) {
    const char c = span[i];
    if (c == '|') {
      out += "\\|";
    } else if (c == '\r' && i + 1 < span.size() && span[i + 1] == '\n') {
      continue;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else {
      out.push_back(c);
    }
  }
}

// A table cell: GitHub-flavoured markdown would end the cell at '|' and the row at a newline,
// and would render HTML and emphasis from the report's text; all of it is escaped. A code span
// (`trainlock lock` in a remedy) stays one, so it renders as code; a backtick that closes none
// is escaped.
std::string MarkdownCell(std::string_view text) {
  std::string out;
  std::string clean = CleanText(text);
  for (size_t i = 0; i < clean.size(); ++i) {
    char c = clean[i];
    if (c == '`') {
      const size_t run = std::min(clean.find_first_not_of('`', i), clean.size()) - i;
      const size_t end = CodeSpanEnd(clean, i, run);
      if (end != std::string_view::npos) {
        AppendCodeSpan(std::string_view(clean).substr(i, end - i), out);
        i = end - 1;
      } else {
        for (size_t k = 0; k < run; ++k) out += "\\`";
        i += run - 1;
      }
      continue;
    }
    if (AppendMarkupEntity(c, out)) continue;
    switch (c) {
      case '\r':
        if (i + 1 < clean.size() && clean[i + 1] == '\n') break;
        out += "<br>";
        break;
      case '\n':
        out += "<br>";
        break;
      case '\t':
        out += ' ';
        break;
      case '|':
      case '\\':
      case '*':
      case '_':
      case '[':
      case ']':
        out += '\\';
        out.push_back(c);
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// Text in a code span when it is made of characters that cannot end one, else a plain cell.
std::string MarkdownCode(std::string_view text) {
  if (text.empty()) return "";
  for (char c : text) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 std::string_view("._:@/+-").find(c) != std::string_view::npos;
    if (!plain) return MarkdownCell(text);
  }
  return "`" + std::string(text) + "`";
}

const char* StatusEmoji(std::string_view status) {
  if (status == "pass") return "\u2705 ";   // check mark
  if (status == "fail") return "\u274C ";   // cross
  if (status == "error") return "\u2757 ";  // exclamation
  if (status == "skip") return "\u23ED ";   // skip
  return "";
}

}  // namespace

std::string RenderReportMarkdown(const nlohmann::json& report) {
  ReportView v = ViewOfReport(report);
  std::string out =
      "## trainlock report" + (v.project.empty() ? "" : ": " + MarkdownCell(v.project)) + "\n\n";
  out += "| fact | value |\n|---|---|\n";
  out += "| verdict | " + std::string(StatusEmoji(v.verdict)) + "**" + MarkdownCell(v.verdict) +
         "** (" + CountsLine(v) + ") |\n";
  if (!v.environment_error.empty())
    out += "| **not judged** | " + MarkdownCell(v.environment_error) + " |\n";
  if (!v.negative_control.empty()) {
    out += "| **negative control** | " + MarkdownCell(v.negative_control) +
           ": the resume was broken on purpose; never a pass |\n";
  }
  for (const std::string& d : v.drift) out += "| **drift** | " + MarkdownCell(d) + " |\n";
  out += "| lock_sha256 | " + MarkdownCode(v.lock_sha256) + " |\n";
  out += "| image | " + MarkdownCell(ImageLine(v)) + " |\n";
  out += "| devices | " + MarkdownCell(DeviceSummary(v)) + " |\n";
  out += "| validator | " + MarkdownCell(ValidatorLine(v)) + " |\n";
  if (!v.engine_python.empty()) out += "| engine | " + MarkdownCell(EngineLine(v)) + " |\n";
  if (std::string host = DescribeHost(v.host); !host.empty())
    out += "| host | " + MarkdownCell(host) + " |\n";
  out += "| started | " + MarkdownCell(v.started_at) + " |\n";
  out += "| duration | " + FormatSeconds(v.duration_s) + " |\n\n";

  out += "| status | check | duration | summary | remedy |\n|---|---|--:|---|---|\n";
  for (const CheckView& c : v.checks) {
    out += "| " + std::string(StatusEmoji(c.status)) + MarkdownCell(c.status) + " | " +
           MarkdownCode(c.id) + " | " + FormatSeconds(c.duration_s) + " | " +
           MarkdownCell(c.summary) + " | " + MarkdownCell(c.remedy) + " |\n";
  }
  if (v.ranks.empty()) return out;
  out +=
      "\n| rank | device | host | tokens/s | peak reserved | bits | checks |\n"
      "|--:|---|---|--:|--:|---|---|\n";
  for (const RankView& r : v.ranks) {
    out += "| " + MarkdownCell(r.rank) + " | " + MarkdownCode(r.device) + " | " +
           MarkdownCell(r.host) + " | " + MarkdownCell(RankTokensLine(r, false)) + " | " +
           (r.peak_reserved_bytes ? FormatBytes(*r.peak_reserved_bytes) : "") + " | " +
           MarkdownCode(r.digest) + " | " +
           MarkdownCell(r.error.empty() ? RankChecksLine(r) : "error: " + r.error) + " |\n";
  }
  return out;
}

}  // namespace trainlock
