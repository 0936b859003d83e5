// GPU telemetry while the round trip trains, the way a seasoned user watches nvidia-smi: NVML's
// power, temperature, SM clock, utilization and clocks-event (throttle) reasons, sampled on a
// thread of their own every interval for the GPU the training processes use. The samples are
// summarised as they come (min, mean, max and a capped series), so memory stays bounded however
// long the window. train.roundtrip carries the summary as metrics.telemetry; a slowdown in it
// (hardware, thermal, a lowered power limit, clocks held by clock policy) fails
// train.step (report/gpu_throttle.h decides), since a step timed on a slowed-down GPU is not the
// node's speed; the power cap alone is said in train.step's summary.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "probes/nvml_probe.h"
#include "report/check_metrics.h"
#include "report/report.h"

namespace trainlock::validate {

inline constexpr std::chrono::milliseconds kTelemetryInterval{200};
inline constexpr size_t kTelemetrySeriesCap = 128;

// One GPU's samples, summarised on the fly. Each sample stands for the time since the one
// before it (the first for the time since the window opened), so seconds add up to the window.
class GpuTelemetry {
 public:
  // `gpu`'s index, uuid, name, power limits and highest SM clock go into the summary.
  explicit GpuTelemetry(const NvmlGpu& gpu, size_t series_cap = kTelemetrySeriesCap);
  // A sample taken `t_s` seconds after the window opened (t_s never decreases).
  void Add(double t_s, const GpuReading& reading);
  int64_t samples() const { return samples_; }
  double last_t_s() const { return last_t_s_; }
  TelemetryDevice Summary() const;

 private:
  struct Range {
    int64_t n = 0;
    double min = 0, max = 0, sum = 0;
    void Add(double v);
    TelemetryRange Of(bool min, bool mean, bool max) const;
  };
  struct Held {
    int64_t samples = 0;
    double seconds = 0;
  };
  // Sorts a busy sample by why its clock is what it is: the power cap or clock policy.
  void AddBusyClock(double held, const GpuReading& r);

  NvmlGpu gpu_;  // its handle unused
  size_t series_cap_;
  int64_t samples_ = 0, reason_samples_ = 0;
  double last_t_s_ = 0, throttled_s_ = 0, busy_at_power_cap_s_ = 0, busy_clock_policy_s_ = 0;
  Range power_w_, temperature_c_, sm_clock_mhz_, utilization_pct_, sm_clock_at_power_cap_mhz_,
      sm_clock_at_clock_policy_mhz_;
  std::vector<std::pair<std::string, Held>> reasons_;  // in the order first seen
  std::vector<TelemetrySample> series_;
  int64_t stride_ = 1;  // every stride-th sample goes into the series
};

// The telemetry of `gpus`, sampled every `interval_s`: the window is up to the last sample; with
// no sample at all it is `unavailable`, saying so.
TelemetryMetrics TelemetryOf(const std::vector<GpuTelemetry>& gpus, double interval_s);

// The NVML GPU (an index into `gpus`) that CUDA ordinal `ordinal` is when CUDA_VISIBLE_DEVICES
// is `visible` (nullptr: unset): its entries are NVML indices (CUDA orders GPUs of one model as
// NVML does, by PCI bus) or UUIDs, whole or a prefix, as CUDA accepts them. nullopt, with `why`,
// when it cannot be told (a MIG instance, an entry no GPU matches).
std::optional<size_t> NvmlGpuForCudaOrdinal(const std::vector<NvmlGpu>& gpus, int ordinal,
                                            const char* visible, std::string* why);

// Judges a passing train.step again by its rule (pass_rules.h) beside the telemetry `t` sampled
// while it trained: a throttle finding fails it; a step that still passes gets what the throttle
// rule recorded without failing on it (the power cap held, tests not judged, why nothing was
// sampled: ThrottleNotes) after its summary. A step that failed or was not measured is left.
void JudgeStepBesideTelemetry(const TelemetryMetrics& t, CheckResult* step);

// The CUDA ordinals a run's training processes use: one process trains on the ordinal `device`
// (the validator's --device: "auto" and "cuda" are cuda:0) names; `processes` > 1 ranks of a
// Python engine each pick cuda:<local rank> whatever ordinal --device named (runtime.py's
// pick_device). nullopt for a device that is not a CUDA GPU ("cpu").
std::optional<std::vector<int>> TrainedCudaOrdinals(const std::string& device, int processes);

// Samples every GPU the run's training processes use (TrainedCudaOrdinals) from construction
// until Finish or destruction: a GPU held back under a rank other than 0 slows every step as
// much as one under rank 0, so each is judged.
class TelemetryWindow {
 public:
  explicit TelemetryWindow(const std::string& device, int processes = 1,
                           std::chrono::milliseconds interval = kTelemetryInterval);
  ~TelemetryWindow();
  TelemetryWindow(const TelemetryWindow&) = delete;
  TelemetryWindow& operator=(const TelemetryWindow&) = delete;

  // Stops sampling; the telemetry of the GPUs sampled, given the device the training worker (rank
  // 0) reported it trained on (train.step's `device`: "cuda:0", "cpu"). Unavailable, with why,
  // on a CPU run, without NVML, when one of the run's GPUs cannot be told (every one or none is
  // judged), or when rank 0's is not the GPU sampled first.
  TelemetryMetrics Finish(const std::string& trained_on);

 private:
  void Loop();
  void Stop();

  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point start_;
  std::optional<NvmlSession> nvml_;      // none on a CPU run
  std::string unavailable_;              // why nothing is sampled
  std::vector<int> ordinals_;            // the CUDA ordinals sampled, rank 0's first
  std::vector<NvmlGpu> gpus_;            // NVML's GPU for each ordinal
  std::vector<GpuTelemetry> telemetry_;  // one per GPU sampled, or none
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace trainlock::validate
