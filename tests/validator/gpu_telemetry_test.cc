// The GPU telemetry of the round trip (validators/probes/gpu_telemetry.h) and the throttle
// finding it feeds (src/report/gpu_throttle.h): planted NVML sample sequences go in, the
// summary and train.step's verdict come out. No GPU needed.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "probes/gpu_telemetry.h"
#include "report/gpu_throttle.h"
#include "report/pass_rules.h"

namespace trainlock::validate {
namespace {

constexpr uint64_t kGpuIdle = 0x1, kApplicationsClocks = 0x2, kSwPowerCap = 0x4, kHwSlowdown = 0x8,
                   kHwThermalSlowdown = 0x40;
static_assert(kApplicationsClocks == kApplicationsClocksSettingBit &&
              kSwPowerCap == kSwPowerCapBit);

GpuReading Busy(uint64_t reasons) {
  GpuReading r;
  r.power_mw = 650000;
  r.temperature_c = 70;
  r.sm_clock_mhz = 1980;
  r.utilization_pct = 100;
  r.clocks_event_reasons = reasons;
  return r;
}

// An H200 as NVML names it, its enforced power limit `limit_mw` (its default is 700 W), its
// highest SM clock 1980 MHz.
NvmlGpu H200(unsigned limit_mw = 700000) {
  NvmlGpu gpu;
  gpu.uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  gpu.name = "NVIDIA H200";
  gpu.power_limit_mw = limit_mw;
  gpu.default_power_limit_mw = 700000;
  gpu.max_sm_clock_mhz = 1980;
  return gpu;
}

// 205 samples every 0.2 s (a 41 s window) of an H200 at its default limit; samples
// [from, from + count) carry `reasons`.
TelemetryMetrics Window(uint64_t reasons, int from, int count) {
  GpuTelemetry gpu(H200());
  for (int i = 1; i <= 205; ++i) {
    const bool in = i > from && i <= from + count;
    gpu.Add(i * 0.2, Busy(in ? reasons : 0));
  }
  return TelemetryOf({gpu}, 0.2);
}

// The H200 pilot's train.roundtrip window (bench/results/2026-12-02-h200-engines): 249 samples
// every 0.1 s (24.9 s), 132 of them (13.2 s) busy at the power cap at 690 W with the SM clock
// at `capped_clock_mhz` and 45 MHz above it in turn (1920-1965 MHz on the healthy GPU), nothing
// else set.
TelemetryMetrics H200Pilot(const NvmlGpu& gpu, unsigned capped_clock_mhz = 1920) {
  GpuTelemetry telemetry(gpu);
  for (int i = 1; i <= 249; ++i) {
    const bool capped = i > 50 && i <= 182;
    GpuReading r = Busy(capped ? kSwPowerCap : 0);
    if (capped) {
      r.power_mw = 690000;
      r.sm_clock_mhz = capped_clock_mhz + (i % 2) * 45;
    }
    telemetry.Add(i * 0.1, r);
  }
  return TelemetryOf({telemetry}, 0.1);
}

// A train.step its rule passes: timed, at the shape it states.
CheckResult PassingStep() {
  TrainStepMetrics m;
  m.step_time_s = 0.4;
  m.shape = nlohmann::json{{"precision", "bf16"}, {"activation_checkpointing", false}};
  MeasuredShapeMetrics seen;
  seen.activation_dtype = "bf16";
  seen.activation_checkpointing = false;
  m.measured_shape = ToJson(seen);
  CheckResult step = Judged("train.step", ToJson(m), "step 0.4 s");
  step.duration_s = 0.4;
  return step;
}

TEST(ThrottleFinding, AHealthyH200HeldAtItsDefaultPowerLimitPassesSayingSo) {
  const TelemetryMetrics t = H200Pilot(H200());
  EXPECT_FALSE(FindThrottle(t));  // the gate's evidence rule reads the same
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_EQ(step.summary,
            "step 0.4 s; GPU 0 at its 700 W power limit for 13.2 s of 24.9 s (normal under load)");
  const TelemetryDevice& d = t.devices->at(0);
  EXPECT_EQ(d.default_power_limit_w, 700.0);
  EXPECT_NEAR(d.busy_at_power_cap_s.value_or(0), 13.2, 1e-9);
  EXPECT_EQ(ReadMetrics<TelemetryRange>(*d.sm_clock_at_power_cap_mhz).min, 1920.0);
  EXPECT_EQ(d.throttled_s, 0.0) << "the power cap is no slowdown";
  EXPECT_FALSE(d.not_judged) << *d.not_judged;
}

TEST(ThrottleFinding, ReasonsNvmlNeverGaveAreNotJudgedAndTheStepSaysSo) {
  GpuTelemetry gpu(H200());
  for (int i = 1; i <= 20; ++i) {
    GpuReading r = Busy(0);
    r.clocks_event_reasons.reset();  // NOT_SUPPORTED or NO_PERMISSION on every sample
    gpu.Add(i * 0.2, r);
  }
  const TelemetryMetrics t = TelemetryOf({gpu}, 0.2);
  const TelemetryDevice& d = t.devices->at(0);
  EXPECT_EQ(d.reason_samples, 0);
  ASSERT_TRUE(d.not_judged);
  EXPECT_NE(d.not_judged->find("throttle reasons not judged (NVML gave no clocks-event reasons)"),
            std::string::npos)
      << *d.not_judged;
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_NE(step.summary.find("throttle reasons not judged"), std::string::npos) << step.summary;
}

TEST(ThrottleFinding, AThermalSlowdownFailsTheStepNamingTheReasonAndItsDuration) {
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(Window(kHwThermalSlowdown, 50, 16), &step);
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("throttled during the round trip (GPU 0: hw_thermal_slowdown for "
                              "3.2 s of 41 s): the step time measured is not the node's"),
            std::string::npos)
      << step.summary;
  EXPECT_NE(step.summary.find("step 0.4 s"), std::string::npos) << "the measurement is kept";
  EXPECT_NE(step.remedy.find("cooling"), std::string::npos) << step.remedy;
  EXPECT_EQ(step.remedy.find("power"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, AHardwareSlowdownFailsTheStepPointingAtThePowerSupplies) {
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(Window(kHwSlowdown, 100, 5), &step);  // 1 s of 41 s
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("(GPU 0: hw_slowdown for 1 s of 41 s)"), std::string::npos)
      << step.summary;
  EXPECT_NE(step.remedy.find("power supplies"), std::string::npos) << step.remedy;
  EXPECT_EQ(step.remedy.find("cooling"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, APowerLimitLoweredBelowTheDefaultFailsTheStepWithTheCommandToRestoreIt) {
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(H200Pilot(H200(500000), 1500), &step);
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("(GPU 0: power limit 500 W, below its default 700 W, reached for "
                              "13.2 s of 24.9 s)"),
            std::string::npos)
      << step.summary;
  EXPECT_EQ(step.summary.find("SM clock"), std::string::npos) << "the limit explains the clocks";
  EXPECT_NE(step.remedy.find("`nvidia-smi -i 0 -pl 700`"), std::string::npos) << step.remedy;
  EXPECT_EQ(step.remedy.find("cooling"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, ALoweredPowerLimitNeverReachedIsSaidNotFailed) {
  GpuTelemetry gpu(H200(500000));
  for (int i = 1; i <= 20; ++i) gpu.Add(i * 0.2, Busy(0));
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(TelemetryOf({gpu}, 0.2), &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_EQ(step.summary,
            "step 0.4 s; GPU 0's power limit 500 W is below its default 700 W (never reached)");
}

// A healthy H100 under a dense GEMM holds about 1384 MHz at its 700 W cap (1140 at the least,
// bench/results/2026-12-07-clock-under-load/h100): no clock at the cap is a finding.
TEST(ThrottleFinding, ClocksAtTheDefaultPowerLimitAreNotJudgedHoweverLow) {
  const TelemetryMetrics t = H200Pilot(H200(), 1140);  // 1140-1185 MHz
  EXPECT_FALSE(FindThrottle(t));
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_FALSE(t.devices->at(0).not_judged) << "nothing left unjudged at the cap";
}

// 62 samples every 0.2 s (12.4 s) busy at `clock_mhz` with `reasons`, in a 41 s window.
TelemetryMetrics HeldBusy(uint64_t reasons, unsigned clock_mhz, int count = 62) {
  GpuTelemetry gpu(H200());
  for (int i = 1; i <= 205; ++i) {
    GpuReading r = Busy(0);
    if (i > 100 && i <= 100 + count) {
      r = Busy(reasons);
      r.sm_clock_mhz = clock_mhz;
    }
    gpu.Add(i * 0.2, r);
  }
  return TelemetryOf({gpu}, 0.2);
}

TEST(ThrottleFinding, ClocksHeldByTheClockPolicyWhileBusyFailTheStepWithTheCommandsToResetThem) {
  const TelemetryMetrics t = HeldBusy(kApplicationsClocks, 1395);
  const TelemetryDevice& d = t.devices->at(0);
  EXPECT_NEAR(d.busy_clock_policy_s.value_or(0), 12.4, 1e-9);
  EXPECT_EQ(ReadMetrics<TelemetryRange>(*d.sm_clock_at_clock_policy_mhz).mean, 1395.0);
  EXPECT_EQ(d.max_sm_clock_mhz, 1980.0);
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("(GPU 0: SM clock held by the clock policy "
                              "(applications_clocks_setting) at 1395 MHz mean (its highest 1980 "
                              "MHz) for 12.4 s busy of 41 s)"),
            std::string::npos)
      << step.summary;
  EXPECT_NE(step.remedy.find("`nvidia-smi -i 0 -rgc` and `nvidia-smi -i 0 -rac`"),
            std::string::npos)
      << step.remedy;
  EXPECT_NE(step.remedy.find("DCGM"), std::string::npos) << step.remedy;
}

TEST(ThrottleFinding, TheClockPolicyBesideThePowerCapIsThePowerCapAndPasses) {
  const TelemetryMetrics t = HeldBusy(kApplicationsClocks | kSwPowerCap, 1395);
  EXPECT_EQ(t.devices->at(0).busy_clock_policy_s, 0.0);
  EXPECT_FALSE(FindThrottle(t));
}

TEST(ThrottleFinding, TheClockPolicyForLessThanASecondBusyIsNotJudged) {
  EXPECT_FALSE(FindThrottle(HeldBusy(kApplicationsClocks, 1395, 4)));  // 0.8 s
  EXPECT_TRUE(FindThrottle(HeldBusy(kApplicationsClocks, 1395, 5)));   // 1 s
}

TEST(ThrottleFinding, TheClockPolicyOnAnIdleGpuIsNotJudged) {
  GpuTelemetry gpu(H200());
  for (int i = 1; i <= 205; ++i) {
    GpuReading r = Busy(kGpuIdle | kApplicationsClocks);
    r.utilization_pct = 0;
    r.sm_clock_mhz = 345;
    gpu.Add(i * 0.2, r);
  }
  EXPECT_FALSE(FindThrottle(TelemetryOf({gpu}, 0.2)));
}

TEST(ThrottleFinding, WithoutUtilizationTheClockPolicyIsNotJudgedAndTheStepSaysSo) {
  GpuTelemetry gpu(H200());
  for (int i = 1; i <= 20; ++i) {
    GpuReading r = Busy(kApplicationsClocks);
    r.utilization_pct.reset();
    r.sm_clock_mhz = 1395;
    gpu.Add(i * 0.2, r);
  }
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(TelemetryOf({gpu}, 0.2), &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_NE(step.summary.find(
                "GPU 0 clock policy not judged (NVML gave no utilization to tell busy samples by)"),
            std::string::npos)
      << step.summary;
}

TEST(ThrottleFinding, WithoutADefaultPowerLimitTheLimitIsNotJudgedAndTheStepSaysSo) {
  NvmlGpu gpu = H200(500000);
  gpu.default_power_limit_mw.reset();
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(H200Pilot(gpu), &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  EXPECT_NE(step.summary.find("GPU 0 power limit not judged (NVML gave no default power limit)"),
            std::string::npos)
      << step.summary;
}

TEST(ThrottleFinding, WithoutTelemetryTheStepSaysThrottlingWasNotJudgedAndWhy) {
  TelemetryMetrics t;
  t.unavailable = "no NVML: NVML not found";
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass);
  EXPECT_EQ(step.summary, "step 0.4 s; GPU throttling not judged (no NVML: NVML not found)");
}

// Busy at 1980 MHz, the H200's highest: application clocks at the top hold nothing down.
TEST(ThrottleFinding, IdleAndApplicationClocksAtTheHighestClockAreNotThrottles) {
  const TelemetryMetrics t = Window(kGpuIdle | kApplicationsClocks, 0, 205);
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(t, &step);
  EXPECT_EQ(step.status, CheckStatus::kPass) << step.summary;
  const TelemetryDevice& d = t.devices->at(0);
  ASSERT_EQ(d.throttle_reasons_seen->size(), 2u);  // reported, not judged
  EXPECT_EQ(d.throttle_reasons_seen->at(0).name, "gpu_idle");
  EXPECT_EQ(d.throttled_s, 0.0);
}

TEST(ThrottleFinding, AStepThatAlreadyFailedKeepsItsOwnFinding) {
  CheckResult step = PassingStep();
  step.status = CheckStatus::kFail;
  step.summary = "out of memory";
  JudgeStepBesideTelemetry(Window(kHwThermalSlowdown, 0, 205), &step);
  EXPECT_EQ(step.summary, "out of memory");
}

TEST(ThrottleFinding, NoSamplesIsAbsentWithAReasonAndDecidesNothing) {
  const TelemetryMetrics none = TelemetryOf({GpuTelemetry(NvmlGpu{})}, 0.2);
  EXPECT_EQ(none.unavailable, "no sample was taken");
  EXPECT_FALSE(none.devices);
  EXPECT_FALSE(FindThrottle(none));
  EXPECT_EQ(TelemetryOf({}, 0.2).unavailable, "no GPU was sampled");
}

TEST(GpuTelemetry, SummarisesPowerTemperatureClocksAndUtilization) {
  NvmlGpu three = H200();
  three.index = 3;
  GpuTelemetry gpu(three);
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
  GpuTelemetry gpu(NvmlGpu{}, 8);
  for (int i = 1; i <= 1000; ++i) gpu.Add(i * 0.2, Busy(0));
  const TelemetryDevice d = gpu.Summary();
  EXPECT_EQ(d.samples, 1000);
  ASSERT_LT(d.series->size(), 8u);
  ASSERT_GE(d.series->size(), 4u);
  EXPECT_DOUBLE_EQ(d.series->front().t_s.value_or(0), 0.2);
  EXPECT_GT(d.series->back().t_s.value_or(0), 150.0);  // the last stretch is in it
}

TEST(GpuTelemetry, AReadingNvmlCouldNotGiveIsAbsentNotZero) {
  GpuTelemetry gpu(NvmlGpu{});
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
  EXPECT_TRUE(IsSlowdownReason("hw_power_brake"));
  EXPECT_FALSE(IsSlowdownReason("gpu_idle"));
  EXPECT_FALSE(IsSlowdownReason("sw_power_cap"));
}

std::vector<NvmlGpu> FourGpus() {
  std::vector<NvmlGpu> gpus;
  for (unsigned i = 0; i < 4; ++i) {
    NvmlGpu gpu;
    gpu.index = i;
    gpu.uuid = "GPU-" + std::to_string(i) + "aaaaaaa-0000";
    gpus.push_back(gpu);
  }
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

TEST(TrainedOrdinals, OneProcessTrainsOnTheOrdinalItsDeviceNames) {
  EXPECT_EQ(TrainedCudaOrdinals("cuda:3", 1), (std::vector<int>{3}));
  EXPECT_EQ(TrainedCudaOrdinals("auto", 1), (std::vector<int>{0}));
  EXPECT_EQ(TrainedCudaOrdinals("cpu", 2), std::nullopt);
}

TEST(TrainedOrdinals, EveryRankOfAnEngineRunIsSampledOnTheGpuItPicks) {
  EXPECT_EQ(TrainedCudaOrdinals("cuda", 4), (std::vector<int>{0, 1, 2, 3}));
  // Ranks pick cuda:<local rank> whatever --device named (runtime.py's pick_device).
  EXPECT_EQ(TrainedCudaOrdinals("cuda:3", 2), (std::vector<int>{0, 1}));
}

TEST(ThrottleFinding, ASlowdownOnTheSecondRanksGpuFailsTheStepNamingThatGpu) {
  NvmlGpu second = H200();
  second.index = 1;
  GpuTelemetry healthy(H200()), throttled(second);
  for (int i = 1; i <= 205; ++i) {
    healthy.Add(i * 0.2, Busy(0));
    throttled.Add(i * 0.2, Busy(i > 50 && i <= 66 ? kHwThermalSlowdown : 0));
  }
  CheckResult step = PassingStep();
  JudgeStepBesideTelemetry(TelemetryOf({healthy, throttled}, 0.2), &step);
  EXPECT_EQ(step.status, CheckStatus::kFail);
  EXPECT_NE(step.summary.find("GPU 1: hw_thermal_slowdown for 3.2 s of 41 s"), std::string::npos)
      << step.summary;
}

}  // namespace
}  // namespace trainlock::validate
