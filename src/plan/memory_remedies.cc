// train.step's out-of-memory remedies read from the plan; see memory_remedies.h.
#include "plan/memory_remedies.h"

#include "plan/memory_model.h"
#include "plan/plan.h"

namespace trainlock {
namespace {

// A larger accelerator that holds the step with DDP: the plan's recommendation, else the other
// vendor's one it names; that none of the catalog's does when none fits. None when the
// estimate fits the device that ran out of memory: it cannot say how much larger would do.
std::string LargerAcceleratorRemedy(const Plan& plan, double device_total_bytes) {
  if (plan.memory.fits()) return "";
  std::string names;
  bool any_fits = false;
  for (size_t i = 0; i < plan.accelerators.size(); ++i) {
    const AcceleratorOption& a = plan.accelerators[i];
    names += (i == 0 ? "" : i + 1 == plan.accelerators.size() ? " and " : ", ") + a.name;
    any_fits = any_fits || a.memory.fits();
  }
  for (const std::string& name : {plan.recommended, plan.alternative}) {
    for (const AcceleratorOption& a : plan.accelerators) {
      if (name.empty() || a.name != name || a.measured || a.capacity_bytes <= device_total_bytes)
        continue;
      if (name == plan.recommended) return "a larger accelerator: " + a.line;
      return "a larger accelerator of another vendor: " + a.line + " (it needs the " +
             (a.vendor == "amd" ? "rocm" : "cuda") + " target built and validated on one first)";
    }
  }
  if (any_fits || names.empty()) return "";
  return "none of " + names + " holds the step with DDP (" + GiB(plan.memory.total_bytes()) +
         " per GPU, its gradient buckets included): shard or shrink it as above";
}

}  // namespace

std::vector<std::string> MemoryRemedies(const TrainConfig& config, const std::string& device_name,
                                        double device_total_bytes, const Catalog& catalog) {
  if (!(device_total_bytes > 0)) {
    return {
        "the device did not report its capacity, so no fix can be judged against it: "
        "validate on the GPU the run will use and `trainlock plan` the report"};
  }
  // What PlanInputFromReport reads from the report this finding becomes.
  PlanInput input;
  input.source = "train.step";
  input.config = config;
  input.device_name = device_name.empty() ? "GPU" : device_name;
  input.device_total_bytes = device_total_bytes;
  input.out_of_memory = true;
  const Plan plan = MakePlan(input, PlanOptions{}, catalog);
  std::vector<std::string> remedies;
  for (size_t i : plan.fix_ranking) {
    if (plan.best_fix && !plan.fixes[i].memory.fits()) break;  // one fits: only those that do
    remedies.push_back(plan.fixes[i].line);
  }
  std::string larger = LargerAcceleratorRemedy(plan, device_total_bytes);
  if (!larger.empty()) remedies.push_back(std::move(larger));
  return remedies;
}

}  // namespace trainlock
