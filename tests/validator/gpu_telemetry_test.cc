// The GPU telemetry of the round trip (validators/probes/gpu_telemetry.h) and the throttle
// finding it feeds (src/report/gpu_throttle.h): planted NVML sample sequences go in, the
// summary and train.step's verdict come out. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probes/gpu_telemetry.h"
#include "report/gpu_throttle.h"

namespace trainlock::validate {
namespace {

constexpr uint64_t kGpuIdle = 0x1, kApplicationsClocks = 0x2, kSwPowerCap = 0x4,
                   kHwThermalSlowdown = 0x40;

GpuReading Busy(uint64_t reasons) {
  GpuReading r;
  r.power_mw = 650000;
  r.temperature_c = 70;
  r.sm_clock_mhz = 1980;
  r.utilization_pct = 100;
  r.clocks_event_reasons = reasons;
  return r;
}

// 205 samples every 0.2 s (a 41 s window); samples [from, from + count) carry `reasons`.
TelemetryMetrics Window(uint64_t reasons, int from, int count) {
  GpuTelemetry gpu(0, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 700000);
  for (int i = 1; i <= 205; ++i) {
    const bool in = i > from && i <= from + count;
    gpu.Add(i * 0.2, Busy(in ? reasons : 0));
  }
  return TelemetryOf({gpu}, 0.2);
}

CheckResult PassingStep() {
  return {"train.step", CheckStatus::kPass, 0.4, "step 0.4 s", "", nlohmann::json::object()};
}

TEST(ThrottleFinding, AThermalSlowdownFailsTheStepNamingTheReasonAndItsDuration) {
  CheckResult step = PassingStep();
  ApplyThrottleFinding(Window(kHwThermalSlowdown, 50, 16), &step);
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("throttled during the round trip (GPU 0: hw_thermal_slowdown for "
                              "3.2 s of 41 s): the step time measured is not the node's"),
            std::string::npos)
      << step.summary;
  EXPECT_NE(step.summary.find("step 0.4 s"), std::string::npos) << "the measurement is kept";
  EXPECT_NE(step.remedy.find("cooling"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, IdleAndApplicationClockReasonsAreNotThrottles) {
  const TelemetryMetrics t = Window(kGpuIdle | kApplicationsClocks, 0, 205);
  CheckResult step = PassingStep();
  ApplyThrottleFinding(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  const TelemetryDevice& d = t.devices->at(0);
  ASSERT_EQ(d.throttle_reasons_seen->size(), 2u);  // reported, not judged
  EXPECT_EQ(d.throttle_reasons_seen->at(0).name, "gpu_idle");
  EXPECT_EQ(d.throttled_s, 0.0);
}

TEST(ThrottleFinding, AShortPowerCapBlipUnderTheShareDoesNotFail) {
  const TelemetryMetrics t = Window(kSwPowerCap, 100, 20);  // 4 s of 41 s: under 10%
  CheckResult step = PassingStep();
  ApplyThrottleFinding(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_NEAR(t.devices->at(0).throttled_s.value_or(0), 4.0, 1e-9);  // measured all the same
}

TEST(ThrottleFinding, APowerCapHeldForTheShareOfTheWindowFails) {
  CheckResult step = PassingStep();
  ApplyThrottleFinding(Window(kSwPowerCap, 100, 21), &step);  // 4.2 s of 41 s: over 10%
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("sw_power_cap for 4.2 s of 41 s"), std::string::npos) << step.summary;
  EXPECT_NE(step.remedy.find("power limit"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, AStepThatAlreadyFailedKeepsItsOwnFinding) {
  CheckResult step = PassingStep();
  step.status = CheckStatus::kFail;
  step.summary = "out of memory";
  ApplyThrottleFinding(Window(kHwThermalSlowdown, 0, 205), &step);
  EXPECT_EQ(step.summary, "out of memory");
}

TEST(ThrottleFinding, NoSamplesIsAbsentWithAReasonAndDecidesNothing) {
  const TelemetryMetrics none = TelemetryOf({GpuTelemetry(0, "", std::nullopt)}, 0.2);
  EXPECT_EQ(none.unavailable, "no sample was taken");
  EXPECT_FALSE(none.devices);
  EXPECT_FALSE(FindThrottle(none));
  EXPECT_EQ(TelemetryOf({}, 0.2).unavailable, "no GPU was sampled");
}

TEST(GpuTelemetry, SummarisesPowerTemperatureClocksAndUtilization) {
  GpuTelemetry gpu(3, "GPU-x", 700000);
  GpuReading a = Busy(0), b = Busy(0);
  b.power_mw = 450000;
  b.temperature_c = 81;
  b.sm_clock_mhz = 1500;
  b.utilization_pct = 50;
  gpu.Add(0.2, a);
  gpu.Add(0.4, b);
  const nlohmann::json j = ToJson(gpu.Summary());
  const TelemetryDevice d = ReadMetrics<TelemetryDevice>(j);
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.samples, 2);
  EXPECT_EQ(d.power_limit_w, 700.0);
  const auto power = ReadMetrics<TelemetryRange>(*d.power_w);
  EXPECT_EQ(power.min, 450.0);
  EXPECT_EQ(power.mean, 550.0);
  EXPECT_EQ(power.max, 650.0);
  EXPECT_EQ(ReadMetrics<TelemetryRange>(*d.temperature_c).max, 81.0);
  EXPECT_EQ(ReadMetrics<TelemetryRange>(*d.sm_clock_mhz).min, 1500.0);
  EXPECT_EQ(ReadMetrics<TelemetryRange>(*d.utilization_pct).mean, 75.0);
}

TEST(GpuTelemetry, TheSeriesStaysCappedAndSpansTheWholeWindow) {
  GpuTelemetry gpu(0, "", std::nullopt, 8);
  for (int i = 1; i <= 1000; ++i) gpu.Add(i * 0.2, Busy(0));
  const TelemetryDevice d = gpu.Summary();
  EXPECT_EQ(d.samples, 1000);
  ASSERT_LT(d.series->size(), 8u);
  ASSERT_GE(d.series->size(), 4u);
  EXPECT_DOUBLE_EQ(d.series->front().t_s.value_or(0), 0.2);
  EXPECT_GT(d.series->back().t_s.value_or(0), 150.0);  // the last stretch is in it
}

TEST(GpuTelemetry, AReadingNvmlCouldNotGiveIsAbsentNotZero) {
  GpuTelemetry gpu(0, "", std::nullopt);
  gpu.Add(0.2, GpuReading{});
  const TelemetryDevice d = gpu.Summary();
  EXPECT_FALSE(d.power_w);
  EXPECT_FALSE(d.temperature_c);
  EXPECT_FALSE(d.power_limit_w);
}

TEST(TelemetryWindow, OnACpuRunTelemetryIsAbsentSayingSo) {
  TelemetryWindow window("cpu");
  const TelemetryMetrics t = window.Finish("cpu");
  EXPECT_EQ(t.unavailable, "CPU run");
  EXPECT_FALSE(t.devices);
}

TEST(TelemetryWindow, WithoutNvmlTelemetryIsAbsentSayingSo) {
  if (NvmlSession().unavailable_reason().empty()) GTEST_SKIP() << "NVML is here";
  TelemetryWindow window("cuda:0");
  const TelemetryMetrics t = window.Finish("cuda:0");
  ASSERT_TRUE(t.unavailable);
  EXPECT_EQ(t.unavailable->rfind("no NVML: ", 0), 0u) << *t.unavailable;
  EXPECT_FALSE(t.devices);
}

TEST(TelemetryWindow, ClocksEventReasonsAreNamedAndUnknownBitsKept) {
  EXPECT_EQ(ClocksEventReasonNames(0x1 | 0x40 | 0x1000),
            (std::vector<std::string>{"gpu_idle", "hw_thermal_slowdown", "0x1000"}));
  EXPECT_TRUE(IsThrottleReason("hw_power_brake"));
  EXPECT_FALSE(IsThrottleReason("gpu_idle"));
}

std::vector<NvmlGpu> FourGpus() {
  std::vector<NvmlGpu> gpus;
  for (unsigned i = 0; i < 4; ++i)
    gpus.push_back({i, "GPU-" + std::to_string(i) + "aaaaaaa-0000", nullptr, std::nullopt});
  return gpus;
}

TEST(VisibleGpu, TheCudaOrdinalIsTheNvmlGpuCudaVisibleDevicesNames) {
  std::string why;
  EXPECT_EQ(NvmlGpuForCudaOrdinal(FourGpus(), 1, nullptr, &why), 1u);
  EXPECT_EQ(NvmlGpuForCudaOrdinal(FourGpus(), 0, "2,3", &why), 2u);
  EXPECT_EQ(NvmlGpuForCudaOrdinal(FourGpus(), 1, "3, GPU-1aa", &why), 1u);  // a UUID prefix
}

TEST(VisibleGpu, AnOrdinalNoNvmlGpuMatchesIsRefusedWithWhy) {
  std::string why;
  EXPECT_FALSE(NvmlGpuForCudaOrdinal(FourGpus(), 2, "0,1", &why));
  EXPECT_NE(why.find("not among the 2 GPUs"), std::string::npos) << why;
  EXPECT_FALSE(NvmlGpuForCudaOrdinal(FourGpus(), 0, "MIG-abc", &why));
  EXPECT_NE(why.find("MIG instance"), std::string::npos) << why;
  EXPECT_FALSE(NvmlGpuForCudaOrdinal(FourGpus(), 0, "", &why));
}

}  // namespace
}  // namespace trainlock::validate
