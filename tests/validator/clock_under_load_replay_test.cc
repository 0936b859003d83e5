// The throttle rule (src/report/gpu_throttle.h) against healthy GPUs as they were recorded:
// every series nvidia-smi sampled every 200 ms beside a load at the power cap
// (bench/results/2026-12-07-clock-under-load/<sku>/{gemm,train,pilot}.csv, written by
// bench/clock_under_load.py; a SKU folder added later is replayed too) goes through the
// validator's own summarizer (validators/probes/gpu_telemetry.h) into the telemetry
// train.roundtrip records. A healthy GPU under any of those loads must pass both the validator
// (FindThrottle) and the gate (EvidenceContradictions), and the same series with a fault planted
// must fail both. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "passing_metrics.h"
#include "probes/gpu_telemetry.h"
#include "report/gpu_throttle.h"
#include "report/pass_rules.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxCsvBytes = 8u << 20;  // the recorded series are under 200 KB
constexpr size_t kMaxRows = 100000;
constexpr double kIntervalS = 0.2;  // nvidia-smi's -lms 200, the validator's interval
constexpr uint64_t kHwSlowdownBit = 0x8;

// One nvidia-smi sample (--format=csv,nounits), in NVML's units.
struct SmiRow {
  double t_s = 0;  // seconds of the day
  GpuReading reading;
  std::optional<unsigned> enforced_limit_mw, default_limit_mw, max_sm_clock_mhz;
};

// A recorded series: the GPU as NVML would describe it, and its samples in order.
struct Series {
  std::string name;  // "h100/gemm"
  NvmlGpu gpu;
  std::vector<SmiRow> rows;
};

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) {
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(" \r") + 1);
    out.push_back(cell);
  }
  return out;
}

// A number nvidia-smi printed; nullopt for "[N/A]", "[Not Supported]" and the like.
std::optional<double> Decimal(const std::string& cell) {
  if (cell.empty() || cell.find_first_not_of("0123456789.") != std::string::npos)
    return std::nullopt;
  return std::stod(cell);
}

std::optional<unsigned> Scaled(const std::string& cell, double scale) {
  const std::optional<double> v = Decimal(cell);
  if (!v) return std::nullopt;
  return static_cast<unsigned>(*v * scale + 0.5);
}

// "2026/12/07 03:24:01.510" -> seconds of the day.
double TimeOfDay(const std::string& stamp) {
  const size_t space = stamp.find(' ');
  if (space == std::string::npos || stamp.size() < space + 9) return -1;
  const std::string hms = stamp.substr(space + 1);
  return std::stoi(hms.substr(0, 2)) * 3600.0 + std::stoi(hms.substr(3, 2)) * 60.0 +
         std::stod(hms.substr(6));
}

SmiRow RowOf(const std::vector<std::string>& cells, const std::vector<std::string>& header) {
  auto cell = [&](const char* field) -> std::string {
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i)
      if (header[i] == field) return cells[i];
    return "";
  };
  SmiRow row;
  row.t_s = TimeOfDay(cell("timestamp"));
  row.reading.power_mw = Scaled(cell("power.draw"), 1000);
  row.reading.sm_clock_mhz = Scaled(cell("clocks.sm"), 1);
  row.reading.temperature_c = Scaled(cell("temperature.gpu"), 1);
  row.reading.utilization_pct = Scaled(cell("utilization.gpu"), 1);
  const std::string reasons = cell("clocks_event_reasons.active");
  if (reasons.rfind("0x", 0) == 0 && reasons.size() <= 18 &&
      reasons.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos)
    row.reading.clocks_event_reasons = std::stoull(reasons.substr(2), nullptr, 16);
  row.enforced_limit_mw = Scaled(cell("enforced.power.limit"), 1000);
  row.default_limit_mw = Scaled(cell("power.default_limit"), 1000);
  row.max_sm_clock_mhz = Scaled(cell("clocks.max.sm"), 1);
  return row;
}

// The GPU's NVML name from the series' summary beside it (NAME.json's gpu.name), "" when absent.
std::string GpuNameBeside(const fs::path& csv) {
  fs::path json_path = csv;
  json_path.replace_extension(".json");
  std::error_code ec;
  if (!fs::is_regular_file(json_path, ec) || fs::file_size(json_path, ec) > kMaxCsvBytes) return "";
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("gpu") || !j["gpu"].is_object()) return "";
  return j["gpu"].value("name", "");
}

Series ReadSeries(const fs::path& csv) {
  Series s;
  s.name = csv.parent_path().filename().string() + "/" + csv.stem().string();
  std::error_code ec;
  if (fs::file_size(csv, ec) > kMaxCsvBytes || ec) return s;
  std::ifstream in(csv);
  std::string line;
  if (!std::getline(in, line)) return s;
  const std::vector<std::string> header = SplitCsv(line);
  while (s.rows.size() < kMaxRows && std::getline(in, line))
    if (!line.empty()) s.rows.push_back(RowOf(SplitCsv(line), header));
  s.gpu.uuid = "GPU-replayed";
  s.gpu.name = GpuNameBeside(csv);
  if (!s.rows.empty()) {
    s.gpu.power_limit_mw = s.rows.front().enforced_limit_mw;
    s.gpu.default_power_limit_mw = s.rows.front().default_limit_mw;
    s.gpu.max_sm_clock_mhz = s.rows.front().max_sm_clock_mhz;
  }
  return s;
}

// Every recorded series, of every SKU's folder.
std::vector<Series> RecordedSeries() {
  const fs::path root =
      fs::path(TRAINLOCK_SOURCE_DIR) / "bench/results/2026-12-07-clock-under-load";
  std::vector<fs::path> csvs;
  for (const fs::directory_entry& sku : fs::directory_iterator(root)) {
    if (!sku.is_directory()) continue;
    for (const char* load : {"gemm", "train", "pilot"})
      if (fs::is_regular_file(sku.path() / (std::string(load) + ".csv")))
        csvs.push_back(sku.path() / (std::string(load) + ".csv"));
  }
  std::sort(csvs.begin(), csvs.end());
  std::vector<Series> series;
  for (const fs::path& csv : csvs) series.push_back(ReadSeries(csv));
  return series;
}

// The telemetry the validator records from `s`: its samples, in order, through GpuTelemetry.
TelemetryMetrics TelemetryOfSeries(const Series& s) {
  GpuTelemetry gpu(s.gpu);
  const double start = s.rows.empty() ? 0 : s.rows.front().t_s - kIntervalS;
  double day = 0, last = start;
  for (const SmiRow& row : s.rows) {
    if (row.t_s + day < last) day += 86400;  // past midnight
    last = row.t_s + day;
    gpu.Add(last - start, row.reading);
  }
  return TelemetryOf({gpu}, kIntervalS);
}

// What the gate refuses in a report whose train.step passed beside telemetry `t`.
std::vector<std::string> GateRefusals(const TelemetryMetrics& t) {
  ReportView view;
  CheckView step;
  step.id = "train.step";
  step.status = "pass";
  step.metrics = testing_metrics::Passing().at("train.step");
  view.checks.push_back(step);
  CheckView roundtrip;
  roundtrip.id = "train.roundtrip";
  roundtrip.status = "skip";  // its own rule is not the question here
  roundtrip.metrics = {{"telemetry", ToJson(t)}};
  view.checks.push_back(roundtrip);
  return EvidenceContradictions(view);
}

// The indices of `s`'s samples busy at the power cap.
std::vector<size_t> BusyAtTheCap(const Series& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.rows.size(); ++i) {
    const GpuReading& r = s.rows[i].reading;
    if ((r.clocks_event_reasons.value_or(0) & kSwPowerCapBit) != 0 &&
        r.utilization_pct.value_or(0) >= kBusyUtilizationPct)
      out.push_back(i);
  }
  return out;
}

// Expects the validator and the gate to fail `t` naming `finding`.
void ExpectFailedNaming(const Series& s, const TelemetryMetrics& t, const std::string& finding) {
  const std::optional<ThrottleFinding> f = FindThrottle(t);
  ASSERT_TRUE(f) << s.name;
  EXPECT_NE(f->summary.find(finding), std::string::npos) << s.name << ": " << f->summary;
  const std::vector<std::string> refused = GateRefusals(t);
  ASSERT_EQ(refused.size(), 1u) << s.name;
  EXPECT_TRUE(refused[0].starts_with("train.step: pass, but throttled during the round trip"))
      << refused[0];
}

TEST(ClockUnderLoadReplay, EveryRecordedSkuFolderHasItsThreeLoads) {
  const std::vector<Series> series = RecordedSeries();
  ASSERT_GE(series.size(), 3u) << "the H100's gemm, train and pilot at the least";
  for (const Series& s : series) {
    EXPECT_GE(s.rows.size(), 100u) << s.name;
    EXPECT_TRUE(s.gpu.power_limit_mw && s.gpu.default_power_limit_mw) << s.name;
    EXPECT_FALSE(BusyAtTheCap(s).empty()) << s.name << ": the load never reached the power cap";
  }
}

TEST(ClockUnderLoadReplay, AHealthyGpuAtItsPowerLimitPassesTheValidatorAndTheGateUnderEveryLoad) {
  for (const Series& s : RecordedSeries()) {
    const TelemetryMetrics t = TelemetryOfSeries(s);
    const std::optional<ThrottleFinding> f = FindThrottle(t);
    EXPECT_FALSE(f) << s.name << ": " << f->summary;
    EXPECT_EQ(GateRefusals(t), std::vector<std::string>{}) << s.name;
    ASSERT_TRUE(t.devices) << s.name;
    EXPECT_GE(t.devices->at(0).busy_at_power_cap_s.value_or(0), 10.0) << s.name;
    EXPECT_FALSE(t.devices->at(0).not_judged) << s.name << ": " << *t.devices->at(0).not_judged;
  }
}

TEST(ClockUnderLoadReplay, HardwareSlowdownPlantedInFiveSecondsOfTheSeriesFails) {
  for (Series s : RecordedSeries()) {
    const std::vector<size_t> capped = BusyAtTheCap(s);
    ASSERT_GE(capped.size(), 25u) << s.name;
    for (size_t k = 0; k < 25; ++k) {  // 25 samples of 200 ms
      GpuReading& r = s.rows[capped[capped.size() / 2 + k - 12]].reading;
      r.clocks_event_reasons = r.clocks_event_reasons.value_or(0) | kHwSlowdownBit;
    }
    ExpectFailedNaming(s, TelemetryOfSeries(s), "hw_slowdown for ");
  }
}

TEST(ClockUnderLoadReplay, TheClockPolicyHoldingBusyClocksWithoutThePowerCapFails) {
  for (Series s : RecordedSeries()) {
    // The busy samples at the cap held instead by locked clocks: same clocks, no power cap.
    for (const size_t i : BusyAtTheCap(s)) {
      GpuReading& r = s.rows[i].reading;
      r.clocks_event_reasons =
          (*r.clocks_event_reasons & ~kSwPowerCapBit) | kApplicationsClocksSettingBit;
    }
    ExpectFailedNaming(s, TelemetryOfSeries(s),
                       "SM clock held by the clock policy (applications_clocks_setting) at ");
  }
}

TEST(ClockUnderLoadReplay, APowerLimitLoweredTo500WattsAndReachedFails) {
  for (Series s : RecordedSeries()) {
    s.gpu.power_limit_mw = 500000;
    ExpectFailedNaming(s, TelemetryOfSeries(s), "power limit 500 W, below its default ");
  }
}

}  // namespace
}  // namespace trainlock::validate
