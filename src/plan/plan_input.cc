// What a plan reads: the measured numbers of a report's train.step, token budgets ("10B") and
// cost overrides ("MI300X=2.5"); see plan.h.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/diagnostic.h"
#include "plan/plan.h"
#include "project/train_shape.h"
#include "report/check_metrics.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

// A number plan reads from train.step's metrics, or `otherwise` when it is absent.
double NumberMember(const nlohmann::json& object, const char* key, double otherwise) {
  return FiniteNumber(object, key).value_or(otherwise);
}

[[noreturn]] void RefusePlanInput(const std::string& source, std::string message,
                                  std::string hint = {}) {
  throw InputError(Diagnostic{source, {}, std::move(message), std::move(hint)});
}

// Bounds that keep ModelConfig::ParameterCount's int64 arithmetic from overflowing (below
// 2^56); real models are orders of magnitude inside them.
void CheckShape(const TrainConfig& config, const std::string& source) {
  const ModelConfig& m = config.model;
  const TrainingConfig& t = config.training;
  ForEachShapeInteger(config, [&](const char* name, int64_t value) {
    const std::string_view field(name);
    const int64_t max = field == "num_layers"   ? (1 << 12)
                        : field == "vocab_size" ? (1 << 24)
                                                : (1 << 20);
    if (value < 1 || value > max) {
      RefusePlanInput(source, std::string("the training shape's \"") + name + "\" is " +
                                  std::to_string(value) + ", outside 1.." + std::to_string(max));
    }
  });
  if (m.num_kv_heads > m.num_heads || m.num_heads > m.hidden_size)
    RefusePlanInput(source, "the training shape's heads do not fit its hidden_size");
  if (t.precision != "fp32" && t.precision != "bf16" && t.precision != "fp16")
    RefusePlanInput(source, "the training shape's precision " + Quoted(t.precision) +
                                " is not fp32, bf16 or fp16");
}

// nlohmann converts a float to an integer with a cast that is undefined out of range: refuse
// floats where the shape has integers before TrainConfigFromShape reads them.
void CheckIntegers(const nlohmann::json& shape, const std::string& source) {
  const TrainConfig names;  // walked for its field names only
  ForEachShapeInteger(names, [&](const char* key, int64_t) {
    if (shape.is_object() && shape.contains(key) && shape[key].is_number_float())
      RefusePlanInput(source,
                      std::string("the training shape's \"") + key + "\" is not an integer");
  });
}

// A crafted or corrupt report can carry any number, and the plan would print arithmetic on it
// as if it were measured ("budget: 0.0 days", 60-digit token rates). Numbers no training step
// can have are refused, naming the field: an MFU above 1, and magnitudes far past any machine
// (a petabyte of device memory, 10^15 parameters, a million TFLOP/s per device).
void CheckMeasured(const PlanInput& in, const std::string& source) {
  auto bound = [&](const char* field, double value, double max) {
    if (value > max) {
      char text[64];
      std::snprintf(text, sizeof text, "%g, above %g", value, max);
      RefusePlanInput(source, std::string("train.step's \"") + field + "\" is " + text +
                                  ": no training step measures that");
    }
  };
  bound("mfu", in.mfu, 1.0);
  bound("parameters", in.parameters, 1e15);
  bound("tokens_per_s", in.tokens_per_s, 1e12);
  bound("peak_tflops", in.device_peak_tflops, 1e6);
  if (in.device_peak_tflops > 0 && in.device_peak_tflops < 1e-3)  // it divides the MFU
    RefusePlanInput(source, "train.step's \"peak_tflops\" is below 0.001: no accelerator's peak");
  bound("step_time_s", in.step_time_s, 1e7);
  constexpr double kPetabyte = 1e15;
  bound("device_total_bytes", in.device_total_bytes, kPetabyte);
  bound("peak_allocated_bytes", in.peak_allocated_bytes, kPetabyte);
  bound("peak_reserved_bytes", in.peak_reserved_bytes, kPetabyte);
  bound("device_used_bytes", in.device_used_bytes, kPetabyte);
}

}  // namespace

PlanInput PlanInputFromReport(const nlohmann::json& report, const std::string& source) {
  const ReportView view = ViewOfReport(report);
  const CheckView* step = view.FindCheck("train.step");
  if (!step) RefusePlanInput(source, "the report has no train.step check");
  const auto metrics = ReadMetrics<TrainStepMetrics>(step->metrics);
  if (!metrics.shape) {
    RefusePlanInput(
        source,
        "train.step carries no training shape (" + step->status + ": " + step->summary + ")",
        "validate with a trainlock-validate that reports it, at the intended shape");
  }
  const nlohmann::json& shape = *metrics.shape;
  PlanInput in;
  in.source = source;
  CheckIntegers(shape, source);
  in.config = TrainConfigFromShape(shape, source);
  CheckShape(in.config, source);
  in.parameters = std::max(0.0, NumberMember(shape, "parameters", 0));
  auto bytes = [](const Integer& value) { return value ? static_cast<double>(*value) : -1.0; };
  auto positive = [](const Number& value) { return std::max(0.0, value.value_or(0)); };
  in.out_of_memory = metrics.out_of_memory.value_or(false);
  in.device_total_bytes = bytes(metrics.device_total_bytes);
  in.peak_allocated_bytes = bytes(metrics.peak_allocated_bytes);
  in.peak_reserved_bytes = bytes(metrics.peak_reserved_bytes);
  in.device_used_bytes = bytes(metrics.device_used_bytes);
  in.step_time_s = positive(metrics.step_time_s);
  in.tokens_per_step = std::max(0.0, metrics.tokens ? static_cast<double>(*metrics.tokens) : 0.0);
  in.tokens_per_s = positive(metrics.tokens_per_s);
  if (in.tokens_per_s == 0 && in.step_time_s > 0)
    in.tokens_per_s = in.tokens_per_step / in.step_time_s;
  in.mfu = positive(metrics.mfu.value_or(std::nullopt));
  in.device_peak_tflops = positive(metrics.peak_tflops);
  in.device_name = metrics.device_name.value_or("");
  if (!view.devices.empty()) {
    const DeviceView& first = view.devices.front();
    in.device_count = static_cast<int64_t>(view.devices.size());
    if (in.device_name.empty()) in.device_name = first.name;
    if (in.device_total_bytes <= 0 && metrics.device.value_or("") != "cpu")
      in.device_total_bytes = first.memory_bytes.value_or(-1);
  }
  if (in.device_total_bytes > 0 && in.device_name.empty()) in.device_name = "GPU";
  CheckMeasured(in, source);
  return in;
}

std::optional<double> ParseTokenCount(std::string_view text) {
  double scale = 1;
  if (!text.empty()) {
    switch (std::tolower(static_cast<unsigned char>(text.back()))) {
      case 'k':
        scale = 1e3;
        break;
      case 'm':
        scale = 1e6;
        break;
      case 'b':
        scale = 1e9;
        break;
      case 't':
        scale = 1e12;
        break;
      default:
        scale = 0;
        break;
    }
    if (scale != 0) {
      text.remove_suffix(1);
    } else {
      scale = 1;
    }
  }
  // Digits with at most one decimal point: no sign, exponent, spaces, "inf" or "nan".
  int digits = 0, points = 0;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      ++digits;
    } else if (c == '.') {
      ++points;
    } else {
      return std::nullopt;
    }
  }
  if (digits == 0 || points > 1 || text.size() > 30) return std::nullopt;
  const double tokens = std::strtod(std::string(text).c_str(), nullptr) * scale;
  if (!(tokens >= 1) || tokens > 1e18) return std::nullopt;
  return tokens;
}

std::string TokenCountText(double tokens) {
  struct Unit {
    double scale;
    const char* suffix;
  };
  for (Unit u : {Unit{1e12, "T"}, Unit{1e9, "B"}, Unit{1e6, "M"}, Unit{1e3, "K"}}) {
    if (tokens >= u.scale) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.4g%s", tokens / u.scale, u.suffix);
      return buf;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", tokens);
  return buf;
}

std::optional<std::pair<std::string, double>> ParseCostOverride(std::string_view text,
                                                                const Catalog& catalog,
                                                                std::string* error) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    *error = Quoted(text) + " is not NAME=COST (e.g. MI300X=2.5)";
    return std::nullopt;
  }
  const std::string name(text.substr(0, eq)), number(text.substr(eq + 1));
  const GpuModel* gpu = catalog.FindGpu(name);
  if (!gpu) {
    *error = Quoted(name) + " is not an accelerator in the GPU catalog";
    return std::nullopt;
  }
  char* end = nullptr;
  const double cost = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(cost > 0) || cost > 1e3) {
    *error = "the cost " + Quoted(number) + " of " + gpu->name +
             " is not a positive number (its price per GPU-hour, A100-80GB = 1.0)";
    return std::nullopt;
  }
  return std::make_pair(gpu->name, cost);
}

}  // namespace trainlock
