// The HTML rendering of a report: one self-contained page (inline CSS and SVG, no scripts, no
// external resources, a Content-Security-Policy that forbids loading anything) with what
// failed and its remedies first, the report's facts, the ranks of a merged report, four
// charts (loss of the resume round trip, peak memory against capacity with an out-of-memory's
// overshoot, all-reduce bus bandwidth by message size, time per check) and the table of
// checks with their metrics. Every string from the report is HTML-escaped.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/text_format.h"
#include "report/check_metrics.h"
#include "report/report.h"
#include "report/report_render.h"

namespace trainlock {
namespace {

std::string E(std::string_view text) {
  return EscapeMarkup(text);
}

// A coordinate or length for SVG attributes; never "nan" or "inf".
std::string N(double value) {
  if (!std::isfinite(value)) value = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", value);
  return buf;
}

// `text` cleaned and cut to at most `max` code points, with an ellipsis when cut, so a huge
// string from the report cannot stretch a chart label.
std::string Truncated(std::string_view text, size_t max) {
  std::string clean = CleanText(text);
  size_t points = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    if ((static_cast<unsigned char>(clean[i]) & 0xC0) == 0x80) continue;
    if (points++ == max) return clean.substr(0, i) + "\u2026";
  }
  return clean;
}

// The status as a CSS class: only the four known values, whatever the report says.
const char* StatusClass(std::string_view status) {
  if (status == "pass") return "pass";
  if (status == "fail") return "fail";
  if (status == "error") return "error";
  if (status == "skip") return "skip";
  return "unknown";
}

const char* StatusFill(std::string_view status) {
  if (status == "pass") return "#2e7d32";
  if (status == "fail") return "#c62828";
  if (status == "error") return "#6a1b9a";
  if (status == "skip") return "#b58900";
  return "#757575";
}

// The note shown in place of a chart, carrying the chart's id.
std::string NoData(const char* id, const std::string& reason) {
  return std::string("<p class=\"no-data\" id=\"") + id + "\">no data: " + E(reason) + "</p>\n";
}

// Why a check gives no chart data, or "" when it may have some.
std::string MissingCheckReason(const CheckView* check, std::string_view id) {
  if (check == nullptr) return "the report has no " + std::string(id) + " check";
  if (check->status == "skip") return std::string(id) + " was skipped: " + check->summary;
  return "";
}

std::string SvgOpen(const char* id, int width, int height, const std::string& title) {
  return std::string("<svg id=\"") + id + "\" class=\"chart\" role=\"img\" aria-labelledby=\"" +
         id + "-title\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "\"><title id=\"" + id + "-title\">" + E(title) + "</title>\n";
}

std::string Text(double x, double y, const std::string& escaped, const std::string& attrs = "") {
  return "<text x=\"" + N(x) + "\" y=\"" + N(y) + "\"" + attrs + ">" + escaped + "</text>\n";
}

// ---- Chart 1: per-step loss, uninterrupted vs resumed ----

// The finite values of a series of losses by index (non-numbers and NaN left out).
std::vector<std::optional<double>> Series(const Numbers& values) {
  std::vector<std::optional<double>> out;
  if (!values) return out;
  for (double value : *values)
    out.push_back(std::isfinite(value) ? std::optional<double>(value) : std::nullopt);
  return out;
}

// Decimals that tell apart tick labels `step` apart.
int TickDecimals(double step) {
  if (!(step > 0) || !std::isfinite(step)) return 2;
  return std::clamp(static_cast<int>(std::ceil(-std::log10(step))), 0, 8);
}

struct LossPlot {
  static constexpr int kWidth = 760, kHeight = 320;
  static constexpr double kLeft = 70, kRight = kWidth - 20, kTop = 50, kBottom = kHeight - 45;
  size_t steps = 1;
  double lo = 0, hi = 1;

  double X(double step) const {
    return steps <= 1 ? (kLeft + kRight) / 2
                      : kLeft + (step - 1) / static_cast<double>(steps - 1) * (kRight - kLeft);
  }
  double Y(double loss) const { return kBottom - (loss - lo) / (hi - lo) * (kBottom - kTop); }
};

std::string Polyline(const LossPlot& plot, const std::vector<std::optional<double>>& series,
                     const char* css_class) {
  std::string points;
  for (size_t i = 0; i < series.size(); ++i) {
    if (!series[i]) continue;
    points += (points.empty() ? "" : " ") + N(plot.X(static_cast<double>(i + 1))) + "," +
              N(plot.Y(*series[i]));
  }
  return std::string("<polyline class=\"") + css_class + "\" points=\"" + points + "\"/>\n";
}

std::string LossAxes(const LossPlot& plot) {
  std::string out;
  out += "<rect class=\"plot\" x=\"" + N(plot.kLeft) + "\" y=\"" + N(plot.kTop) + "\" width=\"" +
         N(plot.kRight - plot.kLeft) + "\" height=\"" + N(plot.kBottom - plot.kTop) + "\"/>\n";
  double tick = (plot.hi - plot.lo) / 4;
  int decimals = TickDecimals(tick);
  for (int i = 0; i <= 4; ++i) {
    double value = plot.lo + tick * i;
    const std::string label = Fixed(value, decimals);
    double y = plot.Y(value);
    out += "<line class=\"grid\" x1=\"" + N(plot.kLeft) + "\" x2=\"" + N(plot.kRight) + "\" y1=\"" +
           N(y) + "\" y2=\"" + N(y) + "\"/>\n";
    out += Text(plot.kLeft - 6, y + 4, label, " text-anchor=\"end\"");
  }
  size_t every = std::max<size_t>(1, (plot.steps + 9) / 10);
  for (size_t step = 1; step <= plot.steps; step += every) {
    out += Text(plot.X(static_cast<double>(step)), plot.kBottom + 16, std::to_string(step),
                " text-anchor=\"middle\"");
  }
  out += Text((plot.kLeft + plot.kRight) / 2, plot.kBottom + 36, "step", " text-anchor=\"middle\"");
  out += Text(16, (plot.kTop + plot.kBottom) / 2, "loss",
              " text-anchor=\"middle\" transform=\"rotate(-90 16 " +
                  N((plot.kTop + plot.kBottom) / 2) + ")\"");
  return out;
}

std::string LossLegend() {
  std::string out;
  out += "<line class=\"uninterrupted\" x1=\"80\" x2=\"110\" y1=\"20\" y2=\"20\"/>\n";
  out += Text(116, 24, "uninterrupted run");
  out += "<line class=\"resumed\" x1=\"280\" x2=\"310\" y1=\"20\" y2=\"20\"/>\n";
  out += Text(316, 24, "resumed run (killed, restored from the checkpoint)");
  return out;
}

std::string LossCaption(const std::vector<std::optional<double>>& a,
                        const std::vector<std::optional<double>>& b, bool bitwise_equal) {
  if (a == b) {
    return std::string("The losses of the two runs are ") +
           (bitwise_equal ? "bitwise equal" : "equal") +
           " at every step, so the resumed run (dashed) lies exactly on the uninterrupted one.";
  }
  double worst = 0;
  size_t worst_step = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] && b[i] && std::fabs(*a[i] - *b[i]) > worst) {
      worst = std::fabs(*a[i] - *b[i]);
      worst_step = i + 1;
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "The runs differ: the largest difference is %.3g at step %zu (the resumed run "
                "is dashed).",
                worst, worst_step);
  return a.size() == b.size() ? buf : "The runs have different numbers of steps.";
}

std::string LossChart(const ReportView& v) {
  const CheckView* check = v.FindCheck("train.roundtrip");
  if (std::string why = MissingCheckReason(check, "train.roundtrip"); !why.empty()) {
    return NoData("chart-loss", why);
  }
  const auto m = ReadMetrics<RoundtripMetrics>(check->metrics);
  auto a = Series(m.losses_uninterrupted);
  auto b = Series(m.losses_resumed);
  LossPlot plot;
  plot.steps = std::max(a.size(), b.size());
  bool any = false;
  plot.lo = INFINITY;
  plot.hi = -INFINITY;
  for (const auto* series : {&a, &b}) {
    for (const auto& value : *series) {
      if (!value) continue;
      any = true;
      plot.lo = std::min(plot.lo, *value);
      plot.hi = std::max(plot.hi, *value);
    }
  }
  if (!any) {
    return NoData("chart-loss",
                  "train.roundtrip has no per-step losses (metrics "
                  "losses_uninterrupted and losses_resumed)");
  }
  // Leave room above and below; a flat line gets a band around it.
  double pad =
      plot.hi > plot.lo ? (plot.hi - plot.lo) * 0.08 : std::max(std::fabs(plot.hi) * 0.01, 1e-6);
  plot.lo -= pad;
  plot.hi += pad;
  if (!(plot.hi > plot.lo)) plot.hi = plot.lo + 1;  // values too large to pad

  std::string out =
      "<figure>\n" + SvgOpen("chart-loss", plot.kWidth, plot.kHeight,
                             "Per-step training loss: uninterrupted run vs resumed run");
  out += LossAxes(plot) + LossLegend();
  if (const Integer at = m.checkpoint_at;
      at && *at >= 1 && static_cast<double>(*at) <= static_cast<double>(plot.steps)) {
    double x = plot.X(static_cast<double>(*at));
    out += "<line class=\"checkpoint\" x1=\"" + N(x) + "\" x2=\"" + N(x) + "\" y1=\"" +
           N(plot.kTop) + "\" y2=\"" + N(plot.kBottom) + "\"/>\n";
    out += Text(x + 4, plot.kTop + 14,
                "checkpoint after step " + std::to_string(static_cast<long long>(*at)));
  }
  out += Polyline(plot, a, "uninterrupted") + Polyline(plot, b, "resumed");
  out += "</svg>\n<figcaption>" + E(LossCaption(a, b, m.bitwise_equal.value_or(false))) +
         "</figcaption>\n</figure>\n";
  return out;
}

// ---- Chart 2: peak memory against capacity ----

struct MemoryBar {
  std::string label;
  double bytes;
};

struct MemoryFigures {
  std::string title;
  std::string capacity_label;
  double capacity = 0;
  std::vector<MemoryBar> bars;
  std::string caption;
  std::optional<double> needed;  // out of memory: what the step needs (the validator's estimate)
};

// The device's figures from train.step, or, on a CPU report (where they are -1), the training
// process's peak RSS against the host's memory.
std::optional<MemoryFigures> MemoryFiguresOf(const CheckView& step, const HostView& host) {
  const auto m = ReadMetrics<TrainStepMetrics>(step.metrics);
  MemoryFigures f;
  auto bytes_of = [](const Integer& bytes) {
    return bytes ? std::optional<double>(static_cast<double>(*bytes)) : std::nullopt;
  };
  auto total = bytes_of(m.device_total_bytes);
  if (total && *total > 0) {
    const std::pair<const Integer*, const char*> kBars[] = {
        {&m.peak_allocated_bytes, "peak allocated (tensors)"},
        {&m.peak_reserved_bytes, "peak reserved (caching allocator)"},
        {&m.device_used_bytes, "device used (driver view)"}};
    for (const auto& [member, label] : kBars) {
      if (auto bytes = bytes_of(*member); bytes && *bytes >= 0) f.bars.push_back({label, *bytes});
    }
    std::string device = m.device_name.value_or("the device");
    f.title = "Memory: peak device memory of one training step against the device's capacity";
    f.capacity = *total;
    f.capacity_label = "device capacity " + FormatBytes(*total) + " (" + device + ")";
    f.caption = "Device memory of one training step at the intended shape, against " +
                FormatBytes(*total) + " of " + device + ".";
    // An out-of-memory's peaks stop at the capacity; what the step needed is the estimate.
    if (m.out_of_memory.value_or(false) && m.estimate) {
      if (auto needed = ReadMetrics<MemoryEstimateMetrics>(*m.estimate).total_bytes;
          needed && *needed > 0) {
        f.needed = *needed;
        f.bars.insert(f.bars.begin(), {"needed (out of memory)", *needed});
        f.caption = "Out of memory: the step needs about " + FormatBytes(*needed) + " of " +
                    FormatBytes(*total) + " (" + device +
                    "); the red part is the overshoot. The peaks stop at the capacity.";
      }
    }
    if (!f.bars.empty()) return f;
  }
  auto rss = bytes_of(m.peak_rss_bytes);
  // A plain double, not an optional: GCC 12 at -O2 misreads the optional as maybe-uninitialized.
  const double host_bytes = host.memory_bytes.value_or(-1);
  if (!rss || *rss < 0 || host_bytes <= 0) return std::nullopt;
  f.bars = {{"peak RSS (training process)", *rss}};
  f.title = "Memory: peak RSS of the training process against host memory (CPU report)";
  f.capacity = host_bytes;
  f.capacity_label = "host memory " + FormatBytes(host_bytes);
  f.caption =
      "CPU report: no device memory to measure, so this is the training process's "
      "peak RSS against the host memory (" +
      FormatBytes(host_bytes) + ").";
  return f;
}

std::string MemoryChart(const ReportView& v) {
  const CheckView* check = v.FindCheck("train.step");
  if (std::string why = MissingCheckReason(check, "train.step"); !why.empty()) {
    return NoData("chart-memory", why);
  }
  std::optional<MemoryFigures> f = MemoryFiguresOf(*check, v.host);
  if (!f) {
    return NoData("chart-memory",
                  "train.step reports neither device memory nor peak RSS with host memory");
  }
  // The track spans the capacity or the largest bar, whichever is larger, so that a bar past
  // the capacity shows by how much: its part beyond the capacity line is the overshoot.
  double scale = f->capacity;
  for (const MemoryBar& bar : f->bars) scale = std::max(scale, bar.bytes);
  constexpr double kLabelEnd = 230, kTrack = 240, kTrackWidth = 320, kRow = 34, kTop = 36;
  const double capacity_x = kTrack + kTrackWidth * f->capacity / scale;
  const int height = static_cast<int>(kTop + kRow * static_cast<double>(f->bars.size()) + 16);
  std::string out = "<figure>\n" + SvgOpen("chart-memory", 780, height, f->title);
  out += Text(capacity_x, 20, E(f->capacity_label), " text-anchor=\"end\"");
  for (size_t i = 0; i < f->bars.size(); ++i) {
    const MemoryBar& bar = f->bars[i];
    double y = kTop + kRow * static_cast<double>(i);
    double fraction = bar.bytes / f->capacity;
    double width = kTrackWidth * std::clamp(bar.bytes / scale, 0.0, 1.0);
    out += Text(kLabelEnd, y + 15, E(bar.label), " text-anchor=\"end\"");
    out += "<rect class=\"track\" x=\"" + N(kTrack) + "\" y=\"" + N(y) + "\" width=\"" +
           N(kTrackWidth) + "\" height=\"20\"/>\n";
    out += "<rect class=\"bar\" x=\"" + N(kTrack) + "\" y=\"" + N(y) + "\" width=\"" +
           N(std::min(width, capacity_x - kTrack)) + "\" height=\"20\"/>\n";
    if (kTrack + width > capacity_x) {
      out += "<rect class=\"overshoot\" x=\"" + N(capacity_x) + "\" y=\"" + N(y) + "\" width=\"" +
             N(kTrack + width - capacity_x) + "\" height=\"20\"><title>" +
             E(FormatBytes(bar.bytes - f->capacity)) + " over the capacity</title></rect>\n";
    }
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.0f%%", fraction * 100);
    const std::string label =
        f->needed && i == 0 ? FormatBytes(bar.bytes) + " needed of " + FormatBytes(f->capacity)
                            : FormatBytes(bar.bytes) + ", " + percent;
    out += Text(kTrack + kTrackWidth + 10, y + 15, E(label),
                f->needed && i == 0 ? " class=\"needed\"" : "");
  }
  out += "<line class=\"capacity\" x1=\"" + N(capacity_x) + "\" y1=\"26\" x2=\"" + N(capacity_x) +
         "\" y2=\"" + N(height - 8) + "\"/>\n";
  out += "</svg>\n<figcaption>" + E(f->caption) + "</figcaption>\n</figure>\n";
  return out;
}

// ---- Chart: all-reduce bus bandwidth by message size ----

struct BandwidthPoint {
  double bytes;
  double busbw_gbps;
};

// comm.allreduce's metrics.sizes, the entries with a positive size and a finite bandwidth.
std::vector<BandwidthPoint> BandwidthPoints(const AllreduceMetrics& metrics) {
  std::vector<BandwidthPoint> points;
  if (!metrics.sizes) return points;
  for (const AllreduceSize& size : *metrics.sizes) {
    if (size.bytes && size.busbw_gbps && *size.bytes > 0 && *size.busbw_gbps >= 0)
      points.push_back({static_cast<double>(*size.bytes), *size.busbw_gbps});
  }
  std::sort(points.begin(), points.end(),
            [](const BandwidthPoint& a, const BandwidthPoint& b) { return a.bytes < b.bytes; });
  return points;
}

std::string AllReduceChart(const ReportView& v) {
  const CheckView* check = v.FindCheck("comm.allreduce");
  if (std::string why = MissingCheckReason(check, "comm.allreduce"); !why.empty()) {
    return NoData("chart-allreduce", why);
  }
  const auto metrics = ReadMetrics<AllreduceMetrics>(check->metrics);
  const std::vector<BandwidthPoint> points = BandwidthPoints(metrics);
  if (points.empty()) {
    return NoData("chart-allreduce", "comm.allreduce measured no message sizes (" +
                                         Truncated(check->summary, 200) + ")");
  }
  const std::optional<double> threshold = metrics.threshold_gbps;
  double top = threshold.value_or(0);
  for (const BandwidthPoint& p : points) top = std::max(top, p.busbw_gbps);
  top = top > 0 ? top * 1.1 : 1;
  constexpr double kLeft = 70, kTop = 20, kWidth = 640, kHeight = 220;
  // Sizes double from one point to the next: a log scale spaces them evenly.
  const double first = std::log2(points.front().bytes), last = std::log2(points.back().bytes);
  const double span = last > first ? last - first : 1;
  auto x = [&](double bytes) {
    return kLeft + (points.size() == 1 ? kWidth / 2 : kWidth * (std::log2(bytes) - first) / span);
  };
  auto y = [&](double gbps) { return kTop + kHeight * (1 - gbps / top); };
  std::string out = "<figure>\n" + SvgOpen("chart-allreduce", 780, 290,
                                           "All-reduce bus bandwidth (GB/s) by message size");
  out += "<rect class=\"plot\" x=\"" + N(kLeft) + "\" y=\"" + N(kTop) + "\" width=\"" + N(kWidth) +
         "\" height=\"" + N(kHeight) + "\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double gbps = top * i / 4;
    out += "<line class=\"grid\" x1=\"" + N(kLeft) + "\" y1=\"" + N(y(gbps)) + "\" x2=\"" +
           N(kLeft + kWidth) + "\" y2=\"" + N(y(gbps)) + "\"/>\n";
    char label[32];
    std::snprintf(label, sizeof label, "%.0f", gbps);
    out += Text(kLeft - 6, y(gbps) + 4, label, " text-anchor=\"end\"");
  }
  std::string line;
  for (const BandwidthPoint& p : points) {
    line += (line.empty() ? "" : " ") + N(x(p.bytes)) + "," + N(y(p.busbw_gbps));
    out += Text(x(p.bytes), kTop + kHeight + 16, E(FormatBytes(p.bytes)),
                " text-anchor=\"middle\" font-size=\"10\"");
  }
  out += "<polyline class=\"busbw\" points=\"" + line + "\"/>\n";
  for (const BandwidthPoint& p : points) {
    char value[48];
    std::snprintf(value, sizeof value, "%.1f GB/s", p.busbw_gbps);
    out += "<circle class=\"busbw\" cx=\"" + N(x(p.bytes)) + "\" cy=\"" + N(y(p.busbw_gbps)) +
           "\" r=\"3.5\"><title>" + E(FormatBytes(p.bytes)) + ": " + value + "</title></circle>\n";
  }
  if (threshold) {
    out += "<line class=\"threshold\" x1=\"" + N(kLeft) + "\" y1=\"" + N(y(*threshold)) +
           "\" x2=\"" + N(kLeft + kWidth) + "\" y2=\"" + N(y(*threshold)) + "\"/>\n";
    char label[64];
    std::snprintf(label, sizeof label, "threshold %.0f GB/s", *threshold);
    out += Text(kLeft + kWidth - 4, y(*threshold) - 5, label, " text-anchor=\"end\"");
  }
  out += Text(kLeft + kWidth / 2, kTop + kHeight + 34, "message size (log scale)",
              " text-anchor=\"middle\"");
  char peak[48];
  std::snprintf(peak, sizeof peak, "%.1f GB/s", points.back().busbw_gbps);
  out +=
      "</svg>\n<figcaption>Bus bandwidth (algbw x 2(n-1)/n, as nccl-tests) of each all-reduce "
      "size, " +
      E(FormatBytes(points.back().bytes)) + ": " + peak +
      (threshold ? "; the line is the check's threshold" : "") + ".</figcaption>\n</figure>\n";
  return out;
}

// ---- Chart 3: time per check ----

std::string DurationsChart(const ReportView& v) {
  if (v.checks.empty()) return NoData("chart-durations", "the report has no checks");
  double longest = 0;
  for (const CheckView& c : v.checks) {
    if (std::isfinite(c.duration_s)) longest = std::max(longest, c.duration_s);
  }
  constexpr double kLabelEnd = 150, kBar = 160, kBarWidth = 480, kRow = 20, kTop = 10;
  const int height = static_cast<int>(kTop + kRow * static_cast<double>(v.checks.size()) + 10);
  std::string out = "<figure>\n" + SvgOpen("chart-durations", 780, height,
                                           "Time per check (seconds), coloured by status");
  for (size_t i = 0; i < v.checks.size(); ++i) {
    const CheckView& c = v.checks[i];
    double y = kTop + kRow * static_cast<double>(i);
    bool known = std::isfinite(c.duration_s) && c.duration_s >= 0;
    double width = known && longest > 0 ? kBarWidth * c.duration_s / longest : 0;
    out += Text(kLabelEnd, y + 13, E(Truncated(c.id, 24)), " text-anchor=\"end\"");
    out += "<rect x=\"" + N(kBar) + "\" y=\"" + N(y + 2) + "\" width=\"" + N(width) +
           "\" height=\"14\" fill=\"" + StatusFill(c.status) + "\"/>\n";
    out += Text(kBar + width + 6, y + 13, E(FormatSeconds(c.duration_s) + " " + c.status));
  }
  out += "</svg>\n<figcaption>Wall time of each check, in report order (longest " +
         E(FormatSeconds(longest)) + ").</figcaption>\n</figure>\n";
  return out;
}

// ---- Page ----

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", system-ui, sans-serif; margin: 24px; color: #212121;
       background: #fff; max-width: 1150px; }
h1 { font-size: 24px; margin: 0 0 12px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
dl.facts dt { color: #616161; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 1px 8px; white-space: nowrap; border-radius: 4px; color: #fff;
         font-weight: bold; text-transform: uppercase; font-size: 13px; }
.badge.pass { background: #2e7d32; } .badge.fail { background: #c62828; }
.badge.error { background: #6a1b9a; } .badge.skip { background: #b58900; }
.badge.unknown { background: #757575; }
figure { margin: 8px 0 16px; } figcaption { color: #424242; font-size: 14px; }
svg.chart { font-size: 12px; } svg.chart text { fill: #212121; }
svg .plot { fill: #fafafa; stroke: #bdbdbd; } svg .grid { stroke: #e0e0e0; }
svg .uninterrupted { stroke: #1565c0; stroke-width: 3; fill: none; }
svg .resumed { stroke: #ef6c00; stroke-width: 2; stroke-dasharray: 7 5; fill: none; }
svg .checkpoint { stroke: #424242; stroke-width: 1.5; stroke-dasharray: 2 3; }
svg .track { fill: #eeeeee; stroke: #9e9e9e; } svg .bar { fill: #1565c0; }
svg .overshoot { fill: #c62828; } svg .capacity { stroke: #212121; stroke-width: 2; }
svg text.needed { fill: #c62828; font-weight: bold; }
svg polyline.busbw { stroke: #1565c0; stroke-width: 2; fill: none; } svg circle.busbw { fill: #1565c0; }
svg .threshold { stroke: #c62828; stroke-width: 1.5; stroke-dasharray: 6 4; }
section.failures { border: 2px solid #c62828; background: #ffebee; padding: 4px 16px 8px; }
section.failures h2 { border: none; margin-top: 8px; } section.failures li { margin: 6px 0; }
p.all-passed { color: #2e7d32; font-weight: bold; }
table.ranks { border-collapse: collapse; font-size: 14px; }
table.ranks th, table.ranks td { border: 1px solid #e0e0e0; padding: 4px 8px; text-align: left; }
.no-data { color: #616161; font-style: italic; }
table.checks { border-collapse: collapse; width: 100%; font-size: 14px; table-layout: fixed; }
table.checks th, table.checks td { border: 1px solid #e0e0e0; padding: 4px 6px;
  text-align: left; vertical-align: top; overflow-wrap: anywhere; }
table.checks tr.fail td, table.checks tr.error td { background: #ffebee; }
table.checks th { white-space: nowrap; overflow: hidden; }
td.time { text-align: right; white-space: nowrap; }
pre { margin: 4px 0; max-height: 400px; overflow: auto; font-size: 12px; background: #f5f5f5; }
)";

std::string Badge(std::string_view status) {
  return std::string("<span class=\"badge ") + StatusClass(status) + "\">" +
         E(status.empty() ? "?" : status) + "</span>";
}

std::string Facts(const ReportView& v) {
  std::string out = "<dl class=\"facts\">\n";
  auto fact = [&](const char* name, const std::string& escaped) {
    out += std::string("<dt>") + name + "</dt><dd>" + escaped + "</dd>\n";
  };
  std::string counts = std::to_string(v.Count("pass")) + " passed, " +
                       std::to_string(v.Count("fail")) + " failed, " +
                       std::to_string(v.Count("error")) + " errors, " +
                       std::to_string(v.Count("skip")) + " skipped";
  fact("verdict", Badge(v.verdict) + " " + counts);
  if (!v.environment_error.empty())
    fact("not judged", "<strong>" + E(v.environment_error) + "</strong>");
  fact("lock_sha256", "<code>" + E(v.lock_sha256) + "</code>");
  fact("image", v.image_ref.empty() && v.image_digest.empty()
                    ? "none"
                    : E(v.image_ref) + " <code>" + E(v.image_digest) + "</code>");
  std::string devices;
  for (const DeviceView& d : v.devices)
    devices += (devices.empty() ? "" : "<br>") + E(DescribeDevice(d));
  fact("devices", devices.empty() ? (v.build == "cpu" ? "none (CPU build)" : "none") : devices);
  fact("validator", "trainlock-validate " + E(v.validator_version) + ", torch " + E(v.torch) +
                        ", build " + E(v.build));
  if (!v.engine_python.empty()) {
    fact("engine", "torch " + E(v.engine_torch.empty() ? "?" : v.engine_torch) + " in <code>" +
                       E(v.engine_python) + "</code>");
  }
  if (std::string host = DescribeHost(v.host); !host.empty()) fact("host", E(host));
  fact("started", E(v.started_at));
  fact("duration", E(FormatSeconds(v.duration_s)));
  return out + "</dl>\n";
}

// A check's metrics as pretty JSON, collapsed until clicked; "" when it has none.
std::string MetricsDetails(const CheckView& c) {
  if (c.metrics.empty()) return "";
  // Invalid UTF-8 in a metric must not make dump() throw; NaN comes out as null.
  std::string pretty = c.metrics.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  return "<details><summary>" + std::to_string(c.metrics.size()) +
         (c.metrics.size() == 1 ? " metric" : " metrics") + "</summary><pre>" + E(pretty) +
         "</pre></details>";
}

// Every failing check (IsFailingCheck: failed, errored, or required and not passed) with its
// summary and remedy, first on the page: what a person opening the report came for.
std::string Failures(const ReportView& v) {
  std::string items;
  for (const CheckView& c : v.checks) {
    if (!IsFailingCheck(c.status, v.IsRequired(c.id))) continue;
    items += "<li>" + Badge(c.status) + " <code>" + E(c.id) + "</code>" +
             (v.IsRequired(c.id) ? " (required)" : "") + ": " + E(c.summary);
    if (!c.remedy.empty()) items += "<br><strong>Remedy:</strong> " + E(c.remedy);
    items += "</li>\n";
  }
  if (items.empty()) {
    return v.verdict == "pass" ? "<p id=\"failures\" class=\"all-passed\">No check failed.</p>\n"
                               : "";
  }
  return "<section id=\"failures\" class=\"failures\">\n<h2>What failed, and what to do</h2>\n"
         "<ol>\n" +
         items + "</ol>\n</section>\n";
}

// One row per rank of a merged report; "" for a single process.
std::string RanksTable(const ReportView& v) {
  if (v.ranks.empty()) return "";
  std::string out =
      "<h2>Ranks</h2>\n<table id=\"ranks\" class=\"ranks\">\n<thead><tr><th>rank</th>"
      "<th>device</th><th>host</th><th>tokens/s</th><th>peak reserved</th><th>bits</th>"
      "<th>checks</th></tr></thead>\n<tbody>\n";
  for (const RankView& r : v.ranks) {
    std::string checks = std::to_string(r.passed) + " passed";
    for (const std::string& n : r.not_passed) checks += "; " + n;
    if (!r.error.empty()) checks = "error: " + r.error;
    char tokens[48] = "";
    if (r.tokens_per_s) std::snprintf(tokens, sizeof tokens, "%.0f", *r.tokens_per_s);
    out += "<tr" + std::string(r.error.empty() && r.not_passed.empty() ? "" : " class=\"fail\"") +
           "><td>" + E(r.rank) + "</td><td>" + E(r.device) + "</td><td>" + E(r.host) + "</td><td>" +
           tokens + "</td><td>" +
           (r.peak_reserved_bytes ? E(FormatBytes(*r.peak_reserved_bytes)) : "") +
           "</td><td><code>" + E(r.digest) + "</code></td><td>" + E(checks) + "</td></tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

std::string ChecksTable(const ReportView& v) {
  // Fixed column widths: a huge string from the report wraps instead of widening the page.
  std::string out =
      "<table class=\"checks\">\n<colgroup><col style=\"width: 78px\"><col style=\"width: 150px\">"
      "<col style=\"width: 84px\"><col><col style=\"width: 28%\"></colgroup>\n"
      "<thead><tr><th>status</th><th>check</th><th>duration</th><th>summary and metrics</th>"
      "<th>remedy</th></tr></thead>\n<tbody>\n";
  for (const CheckView& c : v.checks) {
    out += std::string("<tr class=\"") + StatusClass(c.status) + "\"><td>" + Badge(c.status) +
           "</td><td><code>" + E(c.id) + "</code></td><td class=\"time\">" +
           E(FormatSeconds(c.duration_s)) + "</td><td>" + E(c.summary) + MetricsDetails(c) +
           "</td><td>" + E(c.remedy) + "</td></tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

}  // namespace

std::string RenderReportHtml(const nlohmann::json& report) {
  ReportView v = ViewOfReport(report);
  std::string title = "trainlock report" + (v.project.empty() ? "" : ": " + v.project) + " (" +
                      (v.verdict.empty() ? "?" : v.verdict) + ")";
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing may load or run, even if some text escaped escaping.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>" +
      E(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  out += "<h1>" + E(title) + "</h1>\n" + Failures(v) + Facts(v) + RanksTable(v);
  out += "<h2>Resume round trip (train.roundtrip)</h2>\n" + LossChart(v);
  out += "<h2>Memory (train.step)</h2>\n" + MemoryChart(v);
  out += "<h2>All-reduce bandwidth (comm.allreduce)</h2>\n" + AllReduceChart(v);
  out += "<h2>Time per check</h2>\n" + DurationsChart(v);
  out += "<h2>Checks</h2>\n" + ChecksTable(v);
  out += std::string("<p class=\"no-data\">Rendered by <code>trainlock report</code> from a ") +
         kReportSchema + " report.</p>\n</body>\n</html>\n";
  return out;
}

}  // namespace trainlock
