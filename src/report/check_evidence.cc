// The evidence rules; see check_evidence.h.
#include "report/check_evidence.h"
#include "base/version.h"

#include "report/check_metrics.h"
#include "report/gpu_throttle.h"
#include "report/measured_shape.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

namespace trainlock {
namespace {

using Json = nlohmann::json;

bool IsTrue(const Flag& flag) {
  return flag.value_or(false);
}

// The round trip's own numbers: as many losses in each run as it trained steps, and the
// resumed process restored the step the preempted one checkpointed at. "" when they agree.
std::string RoundtripCounts(const RoundtripMetrics& m) {
  if (!m.steps || *m.steps <= 0) return "it states no steps";
  // `run` is "losses_uninterrupted has ", "losses_resumed has ".
  const auto count = [&](const Numbers& losses, const char* run) -> std::string {
    const size_t have = losses ? losses->size() : 0;
    if (have == static_cast<size_t>(*m.steps)) return "";
    return std::string(run) + std::to_string(have) + " losses for " + std::to_string(*m.steps) +
           " steps";
  };
  if (std::string why = count(m.losses_uninterrupted, "losses_uninterrupted has "); !why.empty())
    return why;
  if (std::string why = count(m.losses_resumed, "losses_resumed has "); !why.empty()) return why;
  if (!m.checkpoint_at) return "it states no checkpoint_at";
  if (!m.restored_step || !*m.restored_step)
    return "it states no restored_step (the step the resumed process restored)";
  if (**m.restored_step != *m.checkpoint_at) {
    return "the resumed process restored step " + std::to_string(**m.restored_step) +
           ", not the checkpoint at step " + std::to_string(*m.checkpoint_at);
  }
  return "";
}

// The first step (1-based) whose losses differ between the two runs, 0 when every one is
// equal; `max_diff` is the largest difference. A loss that is not a finite number differs.
int64_t FirstDivergentLoss(const std::vector<double>& a, const std::vector<double>& b,
                           double* max_diff) {
  int64_t first = 0;
  *max_diff = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(a[i] - b[i]);
    if (a[i] == b[i]) continue;
    if (first == 0) first = static_cast<int64_t>(i) + 1;
    *max_diff = std::isfinite(d) ? std::max(*max_diff, d) : INFINITY;
  }
  return first;
}

// train.roundtrip: bitwise equal, or within a loss tolerance with the final state equal; and
// the resumed process restored its RNG and data-loader state either way. The flags and the
// stated difference are what the report claims: each is recomputed from the report's own
// losses, and a claim they contradict is refused.
std::string Roundtrip(const Json& metrics) {
  const auto m = ReadMetrics<RoundtripMetrics>(metrics);
  if (!IsTrue(m.rng_restored)) return "rng_restored is not true";
  if (!IsTrue(m.data_restored)) return "data_restored is not true";
  if (std::string why = RoundtripCounts(m); !why.empty()) return why;
  if (!IsTrue(m.final_state_equal))
    return "the final state differs (final_state_equal is not true)";
  double max_diff = 0;
  const int64_t first = FirstDivergentLoss(*m.losses_uninterrupted, *m.losses_resumed, &max_diff);
  if (IsTrue(m.bitwise_equal) && first != 0) {
    return "bitwise_equal is true, but losses_resumed differs from losses_uninterrupted at "
           "step " +
           std::to_string(first);
  }
  if (m.max_abs_loss_diff && *m.max_abs_loss_diff != max_diff) {
    std::ostringstream why;
    why << "max_abs_loss_diff " << *m.max_abs_loss_diff << " is not the losses' own difference "
        << max_diff;
    return why.str();
  }
  if (IsTrue(m.bitwise_equal)) return "";
  if (!m.loss_tolerance || *m.loss_tolerance <= 0)
    return "bitwise_equal is not true and no loss tolerance was used";
  if (!(max_diff <= *m.loss_tolerance))
    return "the losses differ by more than loss_tolerance (from step " + std::to_string(first) +
           ")";
  return "";
}

// train.step: a step was timed, and what the worker observed (measured_shape) is the shape the
// report states (`shape`, the config's): the validator's own rule (measured_shape.h).
std::string Step(const Json& metrics) {
  const auto m = ReadMetrics<TrainStepMetrics>(metrics);
  if (IsTrue(m.out_of_memory)) return "it ran out of memory";
  if (!m.step_time_s || *m.step_time_s <= 0) return "it has no step_time_s";
  const Json shape = m.shape.value_or(Json());
  const auto precision = shape.is_object() ? shape.find("precision") : shape.end();
  const auto recompute = shape.is_object() ? shape.find("activation_checkpointing") : shape.end();
  if (!shape.is_object() || precision == shape.end() || !precision->is_string() ||
      recompute == shape.end() || !recompute->is_boolean())
    return "it states no shape (precision, activation_checkpointing)";
  if (std::string why = MeasuredShapeContradiction(
          m.measured_shape.value_or(Json()), precision->get<std::string>(), recompute->get<bool>());
      !why.empty())
    return "its measured shape contradicts its shape: " + why;
  return "";
}

// perf.*: every device measured against a threshold, none below it.
std::string Perf(const Json& metrics) {
  const auto m = ReadMetrics<PerfMetrics>(metrics);
  if (!m.devices || m.devices->empty()) return "it measured no device";
  for (const PerfDevice& d : *m.devices) {
    const Number threshold = d.threshold.value_or(std::nullopt);
    if (!d.value || !threshold) return "a device has no measurement or no threshold";
    if (*d.value < *threshold) return "a device measured below its threshold";
  }
  return "";
}

// The fields env.health judges a device on (env_health.cc): a pass needs at least one.
constexpr const char* kHealthFields[] = {"ecc_enabled",   "retired_pages_pending", "remap_failed",
                                         "temperature_c", "throttle_reasons",      "pcie_width"};

// One device's stated fields that contradict a healthy GPU (env_health.cc's rules on what NVML
// read), "" when none does; a field that is absent or of another type says nothing here.
std::string UnhealthyDevice(const Json& d) {
  const auto integer = [&](const char* key) -> std::optional<int64_t> {
    auto it = d.find(key);
    if (it == d.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
  };
  const auto flag = [&](const char* key) {
    auto it = d.find(key);
    return it != d.end() && it->is_boolean() && it->get<bool>();
  };
  if (auto it = d.find("ecc_enabled"); it != d.end() && it->is_boolean() && !it->get<bool>())
    return "ECC disabled";
  if (integer("ecc_uncorrected_volatile").value_or(0) > 0) return "uncorrectable ECC errors";
  if (flag("retired_pages_pending") || flag("remap_failed") || flag("remap_pending"))
    return "pending retirements or remaps, or a failed remap";
  const auto below = [&](const char* value, const char* limit) {
    auto v = integer(value), l = integer(limit);
    return v && l && *v < *l;
  };
  if (auto t = integer("temperature_c"), slow = integer("temperature_slowdown_c");
      t && slow && *t >= *slow)
    return "at its slowdown temperature";
  if (below("pcie_width", "pcie_width_max") || below("pcie_gen_max", "pcie_gen_gpu_max"))
    return "a PCIe link below its maximum";
  return "";
}

// env.health: NVML read every field of at least one device and none of them contradicts it.
std::string Health(const Json& metrics) {
  const auto m = ReadMetrics<HealthMetrics>(metrics);
  if (m.unknown && (!m.unknown->is_array() || !m.unknown->empty()))
    return "NVML fields are unknown";
  if (!m.devices || !m.devices->is_array() || m.devices->empty()) return "it judged no device";
  for (const Json& device : *m.devices) {
    if (!device.is_object()) return "a device has no fields";
    const bool judged = std::any_of(
        std::begin(kHealthFields), std::end(kHealthFields),
        [&](const char* key) { return device.contains(key) && !device[key].is_null(); });
    if (!judged) return "a device has none of the fields health is judged on";
    if (std::string why = UnhealthyDevice(device); !why.empty())
      return "a device's own fields say " + why;
  }
  return "";
}

// train.eval: the loss difference within the stated tolerance, from the two losses themselves;
// a stated abs_diff other than theirs is a contradiction (it could be edited to 0).
std::string WithinTolerance(const Json& metrics) {
  const auto m = ReadMetrics<EvalMetrics>(metrics);
  if (!m.eval_loss_before_save || !m.eval_loss_after_restore)
    return "it has no eval_loss_before_save and eval_loss_after_restore";
  const double diff = std::fabs(*m.eval_loss_before_save - *m.eval_loss_after_restore);
  if (!m.abs_diff) return "it has no abs_diff";
  if (*m.abs_diff != diff) {
    std::ostringstream why;
    why << "abs_diff " << *m.abs_diff << " is not the eval losses' own difference " << diff;
    return why.str();
  }
  if (diff > m.tolerance.value_or(0.0)) return "abs_diff is above its tolerance";
  return "";
}

// ckpt.portable: the fresh process's eval loss within the tolerance of the run's own, from the
// two losses themselves (an abs_diff alone could be edited to 0).
std::string Portable(const Json& metrics) {
  const auto m = ReadMetrics<PortableMetrics>(metrics);
  if (!m.eval_loss || !m.eval_loss_reference) return "it has no eval_loss and reference";
  if (!m.tolerance) return "it states no tolerance";
  if (std::fabs(*m.eval_loss - *m.eval_loss_reference) > *m.tolerance)
    return "eval_loss differs from eval_loss_reference by more than its tolerance";
  return "";
}

bool Said(const Text& text) {
  return text && !text->empty();
}

// env.driver: a driver version was read, at or above the driver_min it states.
std::string Driver(const Json& metrics) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  if (!Said(m.driver_version)) return "it has no driver_version";
  if (!Said(m.driver_min)) return "";
  const auto have = ParseVersion(*m.driver_version), want = ParseVersion(*m.driver_min);
  if (!have || !want) return "its driver_version or driver_min is not a version";
  if (*have < *want)
    return "driver " + *m.driver_version + " is below its driver_min " + *m.driver_min;
  return "";
}

// env.runtime: both the image's CUDA runtime and the driver's CUDA were read, and the driver's
// is at least the runtime's.
std::string Runtime(const Json& metrics) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  if (!Said(m.cuda_runtime) || !Said(m.cuda_driver_supports))
    return "it read no cuda_runtime and cuda_driver_supports";
  const auto runtime = ParseVersion(*m.cuda_runtime);
  const auto driver = ParseVersion(*m.cuda_driver_supports);
  if (!runtime || !driver) return "its CUDA versions are not versions";
  if (*driver < *runtime)
    return "the driver's CUDA " + *m.cuda_driver_supports + " is below the runtime's " +
           *m.cuda_runtime;
  return "";
}

// The major.minor of a CUDA version text ("13.0", "13.0.1"); nullopt when it is not one.
std::optional<std::pair<int64_t, int64_t>> MajorMinor(const std::string& text) {
  const auto v = ParseVersion(text);
  if (!v) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(v->major()), static_cast<int64_t>(v->minor()));
}

// env.versions: the torch that ran is the locked one: the same text, or its release with the
// lock's local build tag ("2.11.0" of "2.11.0+cu130"; never "2.1", a prefix of other text).
std::string Versions(const Json& metrics) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  if (!Said(m.torch)) return "it has no torch version";
  if (Said(m.torch_locked) && *m.torch_locked != *m.torch &&
      !m.torch_locked->starts_with(*m.torch + "+"))
    return "torch " + *m.torch + " is not the locked " + *m.torch_locked;
  if (Said(m.cuda_locked)) {
    const auto have = MajorMinor(m.cuda_runtime.value_or("")), pin = MajorMinor(*m.cuda_locked);
    if (!have || !pin || *have != *pin)
      return "CUDA runtime " + m.cuda_runtime.value_or("(none)") + " is not the locked " +
             *m.cuda_locked;
  }
  if (Said(m.nccl_locked) && m.nccl.value_or("") != *m.nccl_locked)
    return "NCCL " + m.nccl.value_or("(none)") + " is not the locked " + *m.nccl_locked;
  if (Said(m.cudnn_locked)) {
    if (!Said(m.cudnn)) return "it names no cuDNN beside the locked " + *m.cudnn_locked;
    const auto have = ParseVersion(*m.cudnn), pin = ParseVersion(*m.cudnn_locked);
    if (!have || !pin || !have->MatchesPin(*pin))
      return "cuDNN " + *m.cudnn + " is not the locked " + *m.cudnn_locked;
  }
  return "";
}

// env.arch: a known-answer kernel launched on the devices, and gave its known answer on each.
std::string Arch(const Json& metrics) {
  const auto m = ReadMetrics<EnvDeviceMetrics>(metrics);
  if (!m.launches || !m.launches->is_array() || m.launches->empty())
    return "it launched no kernel (launches)";
  for (const Json& launch : *m.launches) {
    auto ok = launch.is_object() ? launch.find("launch_ok") : launch.end();
    if (!launch.is_object() || ok == launch.end() || !ok->is_boolean() || !ok->get<bool>())
      return "a launch did not give the known answer (launch_ok)";
  }
  return "";
}

std::string Devices(const Json& metrics) {
  const auto m = ReadMetrics<EnvDeviceMetrics>(metrics);
  return m.count && *m.count >= 1 ? "" : "it counted no device";
}

std::string Data(const Json& metrics) {
  const auto m = ReadMetrics<DataMetrics>(metrics);
  return m.bytes && *m.bytes >= 0 ? "" : "it verified no bytes";
}

std::string Ops(const Json& metrics) {
  const auto m = ReadMetrics<OpsMetrics>(metrics);
  if (!m.failures || !m.failures->is_array()) return "it has no failures list";
  return m.failures->empty() ? "" : "it lists failures";
}

// env.packages: the closure was compared (some wheels locked, the installed ones counted) and
// nothing is missing, changed, added or unreadable; pinned Debian packages were compared too
// and none is missing or changed.
std::string Packages(const Json& metrics) {
  const auto m = ReadMetrics<PackagesMetrics>(metrics);
  if (!m.packages_locked || *m.packages_locked <= 0) return "it compared no locked wheel";
  if (!m.packages_installed) return "it counted no installed distribution";
  if (m.debs_locked && *m.debs_locked > 0 && (!m.debs_missing || !m.debs_changed))
    return "it pins Debian packages it did not compare";
  for (const Free* list : {&m.packages_missing, &m.packages_changed, &m.packages_added,
                           &m.packages_malformed, &m.debs_missing, &m.debs_changed}) {
    if (*list && (!(*list)->is_array() || !(*list)->empty()))
      return "it lists packages that are not the lock's";
  }
  return "";
}

std::string Allreduce(const Json& metrics) {
  return IsTrue(ReadMetrics<AllreduceMetrics>(metrics).sums_exact) ? "" : "sums_exact is not true";
}

std::string Ddp(const Json& metrics) {
  return IsTrue(ReadMetrics<DdpMetrics>(metrics).gradients_equal_within_tolerance)
             ? ""
             : "gradients_equal_within_tolerance is not true";
}

std::string Command(const Json& metrics) {
  const auto m = ReadMetrics<CommandMetrics>(metrics);
  if (IsTrue(m.timed_out)) return "it timed out";
  if (!m.exit_code || *m.exit_code != 0) return "its exit_code is not 0";
  return "";
}

// train.step's time is the node's only when nothing slowed a GPU down while the round trip
// trained: a step pass beside a finding of the throttle rule in train.roundtrip's telemetry
// contradicts it (gpu_throttle.h; a GPU at its default power limit is no such finding).
std::string StepThrottled(const ReportView& report) {
  for (const CheckView& c : report.checks) {
    if (c.id != "train.roundtrip") continue;
    const auto telemetry = ReadMetrics<TelemetryMetrics>(
        ReadMetrics<RoundtripMetrics>(c.metrics).telemetry.value_or(Json::object()));
    if (std::optional<ThrottleFinding> f = FindThrottle(telemetry)) return f->summary;
  }
  return "";
}

// One rule per check id of check_ids.h (tests/check_evidence_test.cc enumerates them).
const std::map<std::string, std::function<std::string(const Json&)>, std::less<>>& Rules() {
  static const std::map<std::string, std::function<std::string(const Json&)>, std::less<>> rules = {
      {"env.driver", Driver},
      {"env.runtime", Runtime},
      {"env.arch", Arch},
      {"env.versions", Versions},
      {"env.health", Health},
      {"env.devices", Devices},
      {"env.packages", Packages},
      {"data.model", Data},
      {"data.dataset", Data},
      {"ops.custom", Ops},
      {"train.step", Step},
      {"train.roundtrip", Roundtrip},
      {"train.eval", WithinTolerance},
      {"ckpt.portable", Portable},
      {"comm.allreduce", Allreduce},
      {"comm.ddp", Ddp},
      {"perf.matmul", Perf},
      {"perf.hbm", Perf},
      {"ext.command", Command},
  };
  return rules;
}

}  // namespace

bool HasEvidenceRule(std::string_view id) {
  return Rules().find(id) != Rules().end();
}

std::vector<std::string> EvidenceContradictions(const ReportView& report) {
  std::vector<std::string> out;
  for (const CheckView& c : report.checks) {
    if (c.status != "pass") continue;
    auto rule = Rules().find(c.id);
    if (rule == Rules().end()) continue;  // an unknown id: the schema refuses it
    std::string why = rule->second(c.metrics);
    if (why.empty() && c.id == "train.step") why = StepThrottled(report);
    if (!why.empty()) out.push_back(c.id + ": pass, but " + why);
  }
  return out;
}

}  // namespace trainlock
