// The GPU telemetry sampler and its summary; see gpu_telemetry.h.
#include "probes/gpu_telemetry.h"
#include "report/pass_rules.h"

#include <algorithm>
#include <cstdlib>

#include "report/gpu_throttle.h"

namespace trainlock::validate {

void GpuTelemetry::Range::Add(double v) {
  min = n == 0 ? v : std::min(min, v);
  max = n == 0 ? v : std::max(max, v);
  sum += v;
  ++n;
}

TelemetryRange GpuTelemetry::Range::Of(bool with_min, bool with_mean, bool with_max) const {
  TelemetryRange r;
  if (n == 0) return r;
  if (with_min) r.min = min;
  if (with_mean) r.mean = sum / static_cast<double>(n);
  if (with_max) r.max = max;
  return r;
}

GpuTelemetry::GpuTelemetry(const NvmlGpu& gpu, size_t series_cap)
    : gpu_(gpu), series_cap_((std::max<size_t>(series_cap, 2) + 1) / 2 * 2) {}  // even: see Add

void GpuTelemetry::AddBusyClock(double held, const GpuReading& r) {
  if (!r.sm_clock_mhz || r.utilization_pct.value_or(0) < kBusyUtilizationPct) return;
  const uint64_t bits = r.clocks_event_reasons.value_or(0);
  // Busy at the power cap: recorded for the summary (the clock there depends on the load).
  if (bits & kSwPowerCapBit) {
    busy_at_power_cap_s_ += held;
    sm_clock_at_power_cap_mhz_.Add(*r.sm_clock_mhz);
    return;
  }
  // Busy, held by application or locked clocks below the GPU's highest clock, with no power cap
  // to explain it: the policy held the clock, and the throttle rule judges it.
  const bool below_highest = !gpu_.max_sm_clock_mhz || *r.sm_clock_mhz < *gpu_.max_sm_clock_mhz;
  if ((bits & kApplicationsClocksSettingBit) && below_highest) {
    busy_clock_policy_s_ += held;
    sm_clock_at_clock_policy_mhz_.Add(*r.sm_clock_mhz);
  }
}

void GpuTelemetry::Add(double t_s, const GpuReading& r) {
  const double held = std::max(0.0, t_s - last_t_s_);
  last_t_s_ = std::max(last_t_s_, t_s);
  TelemetrySample sample;
  sample.t_s = t_s;
  auto read = [&](const std::optional<unsigned>& value, double scale, Range& range, Number& out) {
    if (!value) return;
    out = *value * scale;
    range.Add(*out);
  };
  read(r.power_mw, 1e-3, power_w_, sample.power_w);
  read(r.temperature_c, 1, temperature_c_, sample.temperature_c);
  read(r.sm_clock_mhz, 1, sm_clock_mhz_, sample.sm_clock_mhz);
  read(r.utilization_pct, 1, utilization_pct_, sample.utilization_pct);
  if (r.clocks_event_reasons) {
    ++reason_samples_;
    sample.clocks_event_reasons = static_cast<int64_t>(*r.clocks_event_reasons);
    bool throttled = false;
    for (const std::string& name : ClocksEventReasonNames(*r.clocks_event_reasons)) {
      auto it = std::find_if(reasons_.begin(), reasons_.end(),
                             [&](const auto& seen) { return seen.first == name; });
      if (it == reasons_.end()) it = reasons_.insert(reasons_.end(), {name, Held{}});
      it->second.samples += 1;
      it->second.seconds += held;
      throttled = throttled || IsSlowdownReason(name);
    }
    if (throttled) throttled_s_ += held;
    AddBusyClock(held, r);
  }
  // The series keeps every stride-th sample; when full it drops every other one and doubles the
  // stride, so it always spans the whole window evenly.
  if (samples_ % stride_ == 0) series_.push_back(sample);
  ++samples_;
  if (series_.size() >= series_cap_) {
    size_t kept = 0;
    for (size_t i = 0; i < series_.size(); i += 2) series_[kept++] = series_[i];
    series_.resize(kept);
    stride_ *= 2;
  }
}

TelemetryDevice GpuTelemetry::Summary() const {
  TelemetryDevice d;
  d.index = gpu_.index;
  if (!gpu_.uuid.empty()) d.uuid = gpu_.uuid;
  if (!gpu_.name.empty()) d.name = gpu_.name;
  d.samples = samples_;
  if (power_w_.n) d.power_w = ToJson(power_w_.Of(true, true, true));
  if (gpu_.power_limit_mw) d.power_limit_w = *gpu_.power_limit_mw / 1000.0;
  if (gpu_.default_power_limit_mw) d.default_power_limit_w = *gpu_.default_power_limit_mw / 1000.0;
  if (gpu_.max_sm_clock_mhz) d.max_sm_clock_mhz = *gpu_.max_sm_clock_mhz;
  if (temperature_c_.n) d.temperature_c = ToJson(temperature_c_.Of(false, false, true));
  if (sm_clock_mhz_.n) d.sm_clock_mhz = ToJson(sm_clock_mhz_.Of(true, false, true));
  if (utilization_pct_.n) d.utilization_pct = ToJson(utilization_pct_.Of(false, true, false));
  d.busy_at_power_cap_s = busy_at_power_cap_s_;
  if (sm_clock_at_power_cap_mhz_.n)
    d.sm_clock_at_power_cap_mhz = ToJson(sm_clock_at_power_cap_mhz_.Of(true, true, true));
  d.busy_clock_policy_s = busy_clock_policy_s_;
  if (sm_clock_at_clock_policy_mhz_.n)
    d.sm_clock_at_clock_policy_mhz = ToJson(sm_clock_at_clock_policy_mhz_.Of(true, true, true));
  std::vector<TelemetryReason> reasons;
  for (const auto& [name, held] : reasons_) reasons.push_back({name, held.samples, held.seconds});
  d.throttle_reasons_seen = reasons;
  d.throttled_s = throttled_s_;
  d.reason_samples = reason_samples_;
  if (std::string why = NotJudged(d); !why.empty()) d.not_judged = why;
  d.series = series_;
  return d;
}

TelemetryMetrics TelemetryOf(const std::vector<GpuTelemetry>& gpus, double interval_s) {
  TelemetryMetrics t;
  int64_t samples = 0;
  double window = 0;
  for (const GpuTelemetry& g : gpus) {
    samples += g.samples();
    window = std::max(window, g.last_t_s());
  }
  if (samples == 0) {
    t.unavailable = gpus.empty() ? "no GPU was sampled" : "no sample was taken";
    return t;
  }
  t.interval_s = interval_s;
  t.window_s = window;
  std::vector<TelemetryDevice> devices;
  for (const GpuTelemetry& g : gpus) devices.push_back(g.Summary());
  t.devices = devices;
  return t;
}

std::optional<size_t> NvmlGpuForCudaOrdinal(const std::vector<NvmlGpu>& gpus, int ordinal,
                                            const char* visible, std::string* why) {
  std::vector<std::string> entries;
  if (visible == nullptr) {
    for (const NvmlGpu& g : gpus) entries.push_back(std::to_string(g.index));
  } else {
    std::string list = visible;
    for (size_t start = 0; start <= list.size();) {
      size_t end = std::min(list.find(',', start), list.size());
      std::string entry = list.substr(start, end - start);
      entry.erase(0, entry.find_first_not_of(' '));
      entry.erase(entry.find_last_not_of(' ') + 1);
      if (!entry.empty()) entries.push_back(entry);
      start = end + 1;
    }
  }
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= entries.size()) {
    *why = "cuda:" + std::to_string(ordinal) + " is not among the " +
           std::to_string(entries.size()) + " GPUs this process sees";
    return std::nullopt;
  }
  const std::string& entry = entries[static_cast<size_t>(ordinal)];
  const bool number = entry.find_first_not_of("0123456789") == std::string::npos;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (number ? std::to_string(gpus[i].index) == entry
               : entry.rfind("GPU-", 0) == 0 && gpus[i].uuid.rfind(entry, 0) == 0)
      return i;
  }
  *why = "CUDA_VISIBLE_DEVICES entry '" + entry + "' names no GPU NVML lists" +
         (entry.rfind("MIG-", 0) == 0 ? " (a MIG instance: NVML's GPU readings are the whole GPU's)"
                                      : "");
  return std::nullopt;
}

void JudgeStepBesideTelemetry(const TelemetryMetrics& t, CheckResult* step) {
  if (step->status != CheckStatus::kPass) return;  // a step already failed or not measured
  RuleContext context;
  context.telemetry = ToJson(t);
  const double duration_s = step->duration_s;
  *step = Judged(step->id, std::move(step->metrics), step->summary, {}, context);
  step->duration_s = duration_s;
  if (step->status != CheckStatus::kPass) return;
  if (const std::string notes = ThrottleNotes(t); !notes.empty()) step->summary += "; " + notes;
}

namespace {

// The CUDA ordinal --device names: "auto" and "cuda" train on cuda:0; nullopt for anything
// that is not a CUDA device.
std::optional<int> CudaOrdinalOf(const std::string& device) {
  if (device == "auto" || device == "cuda") return 0;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return std::nullopt;
  const std::string digits = device.substr(5);
  if (digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoi(digits);
}

}  // namespace

std::optional<std::vector<int>> TrainedCudaOrdinals(const std::string& device, int processes) {
  const std::optional<int> ordinal = CudaOrdinalOf(device);
  if (!ordinal) return std::nullopt;
  if (processes <= 1) return std::vector<int>{*ordinal};
  std::vector<int> ordinals;
  for (int rank = 0; rank < processes; ++rank) ordinals.push_back(rank);
  return ordinals;
}

TelemetryWindow::TelemetryWindow(const std::string& device, int processes,
                                 std::chrono::milliseconds interval)
    : interval_(interval), start_(std::chrono::steady_clock::now()) {
  const std::optional<std::vector<int>> ordinals = TrainedCudaOrdinals(device, processes);
  if (!ordinals) {
    unavailable_ = device == "cpu" ? "CPU run" : "--device " + device + " is not a CUDA GPU";
    return;
  }
  ordinals_ = *ordinals;
  nvml_.emplace();
  if (!nvml_->unavailable_reason().empty()) {
    unavailable_ = "no NVML: " + nvml_->unavailable_reason();
    return;
  }
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  for (const int ordinal : ordinals_) {
    std::string why;
    const std::optional<size_t> i = NvmlGpuForCudaOrdinal(nvml_->gpus(), ordinal, visible, &why);
    if (!i) {
      unavailable_ = why;
      return;
    }
    gpus_.push_back(nvml_->gpus()[*i]);
  }
  for (const NvmlGpu& gpu : gpus_) telemetry_.emplace_back(gpu);
  thread_ = std::thread([this] { Loop(); });
}

TelemetryWindow::~TelemetryWindow() {
  Stop();
}

void TelemetryWindow::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    for (size_t i = 0; i < gpus_.size(); ++i) telemetry_[i].Add(t, nvml_->Read(gpus_[i]));
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

void TelemetryWindow::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

TelemetryMetrics TelemetryWindow::Finish(const std::string& trained_on) {
  Stop();
  TelemetryMetrics t;
  const std::optional<int> trained = CudaOrdinalOf(trained_on == "auto" ? "" : trained_on);
  if (!trained) {
    t.unavailable = trained_on == "cpu"  ? "CPU run"
                    : trained_on.empty() ? "the training worker reported no device"
                                         : "trained on " + trained_on + ", not a CUDA GPU";
  } else if (!unavailable_.empty()) {
    t.unavailable = unavailable_;
  } else if (*trained != ordinals_.front()) {
    t.unavailable = "trained on " + trained_on + ", but cuda:" + std::to_string(ordinals_.front()) +
                    " was sampled";
  } else {
    t = TelemetryOf(telemetry_, std::chrono::duration<double>(interval_).count());
  }
  return t;
}

}  // namespace trainlock::validate
