// A plan as the text a person reads and as JSON for tools; see plan.h. The lines themselves
// are built by MakePlan; this only lays them out.
#include <sstream>

#include "base/text_format.h"
#include "plan/plan.h"

namespace trainlock {
namespace {

std::string AcceleratorDetail(const AcceleratorOption& a) {
  std::string detail;
  if (a.step_time_s > 0) {
    detail = "step " + Fixed(a.step_time_s, 3) + " s " + (a.measured ? "(measured)" : "(scaled)") +
             ", " + Fixed(a.tokens_per_s, 0) + " tokens/s per GPU";
  } else {
    detail = "no step time";
  }
  detail += ", cost " + (a.relative_cost > 0 ? Fixed(a.relative_cost, 1) : std::string("unknown")) +
            " per GPU-hour";
  if (a.budget_gpu_hours > 0) {
    detail += "; budget: " + Fixed(a.budget_days, 1) + " days, " + Fixed(a.budget_gpu_hours, 1) +
              " GPU-hours";
    if (a.budget_cost > 0) detail += ", cost " + Fixed(a.budget_cost, 1);
  }
  return detail;
}

nlohmann::json MemoryJson(const MemoryArithmetic& m) {
  return {{"weights_bytes", m.weights_bytes},
          {"grads_bytes", m.grads_bytes},
          {"optimizer_bytes", m.optimizer_bytes},
          {"shards", m.shards},
          {"ddp_bucket_bytes", m.ddp_bucket_bytes},
          {"activation_bytes", m.activation_bytes},
          {"total_bytes", m.total_bytes()},
          {"usable_bytes", m.usable_bytes > 0 ? nlohmann::json(m.usable_bytes) : nullptr},
          {"fits", m.usable_bytes > 0 ? nlohmann::json(m.fits()) : nullptr},
          {"line", m.line}};
}

nlohmann::json TextOrNull(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

nlohmann::json WallClockJson(const WallClock& w) {
  if (!w.estimated) return {{"estimated", false}, {"reason", w.reason}};
  return {{"estimated", true},
          {"accelerator", w.accelerator},
          {"gpus", w.gpus},
          {"scaling", w.scaling},
          {"tokens_per_s_per_gpu", w.tokens_per_s},
          {"seconds", w.seconds},
          {"days", w.days},
          {"gpu_hours", w.gpu_hours},
          {"days_with_margin", w.days_with_margin},
          {"pilot_window_enough", w.pilot_window_enough},
          {"reservation_days", w.reservation_days},
          {"line", w.line},
          {"advice", w.advice}};
}

}  // namespace

std::string RenderPlanText(const Plan& plan) {
  std::ostringstream out;
  out << "Plan for " << plan.source << "\n  " << plan.shape << "\n\n";
  out << "Memory per GPU with DDP"
      << (plan.gpu_report ? " on " + plan.device
                          : std::string(" (estimated from the shape: the report trained on the "
                                        "CPU, which measures no device memory)"))
      << ":\n  " << plan.memory.line << "\n";
  if (!plan.fixes.empty()) {
    out << "\nFixes on the " << plan.device << " (it does not fit as it is):\n";
    for (const PlanFix& f : plan.fixes) out << "  - " << f.line << "\n";
    out << "  first choice: "
        << (plan.best_fix ? plan.fixes[*plan.best_fix].name : std::string("none of these fits"))
        << "\n";
    if (plan.best_fix)
      out << "  validate it with: " << plan.fixes[*plan.best_fix].validated_by << "\n";
  }
  if (!plan.accelerators.empty()) {
    out << "\nAccelerators (the same shape and arithmetic):\n";
    for (const AcceleratorOption& a : plan.accelerators) {
      out << "  " << a.line << "\n      " << AcceleratorDetail(a) << "\n";
    }
    out << "\nRecommendation: " << plan.recommendation << "\n";
  }
  const WallClock& w = plan.wall_clock;
  if (w.estimated) {
    out << "\nWall-clock: " << w.line << "\n  " << w.advice << "\n";
  } else {
    out << "\nWall-clock: not estimated: " << w.reason << "\n";
  }
  if (!plan.notes.empty()) {
    out << "\nNotes:\n";
    for (const std::string& n : plan.notes) out << "  - " << n << "\n";
  }
  out << "\nAssumptions:\n";
  for (const std::string& a : plan.assumptions) out << "  - " << a << "\n";
  return out.str();
}

nlohmann::json PlanJson(const Plan& plan) {
  nlohmann::json j = {{"source", plan.source},
                      {"shape", plan.shape},
                      {"device", plan.gpu_report ? nlohmann::json(plan.device) : nullptr},
                      {"gpu_report", plan.gpu_report},
                      {"activations_measured", plan.activations_measured},
                      {"memory", MemoryJson(plan.memory)},
                      {"fixes", nlohmann::json::array()},
                      {"best_fix", nullptr},
                      {"accelerators", nlohmann::json::array()},
                      {"recommended", TextOrNull(plan.recommended)},
                      {"measured_vendor", TextOrNull(plan.measured_vendor)},
                      {"alternative", TextOrNull(plan.alternative)},
                      {"recommendation", plan.recommendation},
                      {"wall_clock", WallClockJson(plan.wall_clock)},
                      {"notes", plan.notes},
                      {"assumptions", plan.assumptions}};
  for (const PlanFix& f : plan.fixes) {
    j["fixes"].push_back({{"name", f.name},
                          {"activation_checkpointing", f.checkpointing},
                          {"micro_batch", f.micro_batch},
                          {"grad_accum", f.grad_accum},
                          {"fsdp_gpus", f.fsdp_gpus},
                          {"step_time_factor", f.step_time_factor},
                          {"engine", f.engine},
                          {"processes_per_node", f.processes_per_node},
                          {"validated_by", f.validated_by},
                          {"memory", MemoryJson(f.memory)},
                          {"line", f.line}});
  }
  if (plan.best_fix) j["best_fix"] = plan.fixes[*plan.best_fix].name;
  for (const AcceleratorOption& a : plan.accelerators) {
    auto positive = [](double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); };
    j["accelerators"].push_back({{"name", a.name},
                                 {"vendor", a.vendor},
                                 {"measured", a.measured},
                                 {"capacity_bytes", a.capacity_bytes},
                                 {"memory", MemoryJson(a.memory)},
                                 {"fits", a.memory.fits()},
                                 {"relative_cost", positive(a.relative_cost)},
                                 {"step_time_s", positive(a.step_time_s)},
                                 {"tokens_per_s_per_gpu", positive(a.tokens_per_s)},
                                 {"budget_days", positive(a.budget_days)},
                                 {"budget_gpu_hours", positive(a.budget_gpu_hours)},
                                 {"budget_cost", positive(a.budget_cost)},
                                 {"line", a.line}});
  }
  return j;
}

}  // namespace trainlock
