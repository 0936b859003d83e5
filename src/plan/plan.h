// `trainlock plan`: from the memory and step time a validator report measured, the hardware
// plan a person reads before booking a GPU reservation: does the run fit with DDP, what fixes
// it when it does not (activation checkpointing, a smaller micro-batch, FSDP), which catalog
// accelerator of the measured vendor fits at the lowest cost (a cheaper one of the other vendor
// is named beside it, not recommended), and how long a token budget takes. MakePlan is a pure
// function of measured numbers, options and the catalog; reading the report and printing are
// separate (plan_input.cc, plan_render.cc) so that tests can state exact known answers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/catalog.h"
#include "project/train_config.h"

namespace trainlock {

// The accelerators a plan compares, cheapest baseline first.
inline constexpr const char* kPlanAccelerators[] = {"A100-80GB", "H100-80GB", "H200", "MI300X"};

// What train.step measured (docs/DESIGN.md, "Measuring memory the way the pilot needs it").
// Negative or zero means "not measured" where the comment says so.
struct PlanInput {
  std::string source;                // the report's path, for headings and messages
  TrainConfig config;                // the training shape the step ran at
  double parameters = 0;             // 0: config.model.ParameterCount()
  std::string device_name;           // "NVIDIA H200"; "" on a CPU report
  int64_t device_count = 1;          // GPUs in the report: the default --gpus
  double device_total_bytes = -1;    // the device's capacity as it reports it; < 0: no GPU
  double peak_allocated_bytes = -1;  // < 0: not measured
  double peak_reserved_bytes = -1;
  double device_used_bytes = -1;
  bool out_of_memory = false;     // the step ran out of memory: no step time, no usable peak
  double step_time_s = 0;         // one optimizer step, grad accumulation included; 0: not measured
  double tokens_per_step = 0;     // per GPU
  double tokens_per_s = 0;        // per GPU
  double mfu = 0;                 // 0: unknown (CPU, fp32, a device the catalog lacks)
  double device_peak_tflops = 0;  // dense peak the MFU is against; 0: from the catalog
};

struct PlanOptions {
  double tokens = 0;                    // the token budget; 0: none given
  int64_t gpus = 0;                     // 0: the report's device count
  std::map<std::string, double> costs;  // catalog name -> relative cost, over the catalog's
  double headroom = 0.10;               // share of capacity kept free (fragmentation, CUDA context)
  double ddp_scaling = 0.90;            // throughput per GPU with more than one GPU in a node
  double margin = 1.2;  // on the wall-clock estimate, for restarts, evals and checkpoints
  double pilot_window_days = 7;
};

// Per-GPU memory of one way of running the step, with the arithmetic as printed.
struct MemoryArithmetic {
  double weights_bytes = 0;  // whole model, before sharding
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  int64_t shards = 1;           // FSDP ranks the three above are divided over
  double ddp_bucket_bytes = 0;  // 0 under FSDP
  double activation_bytes = 0;
  double usable_bytes = 0;  // 0: no device to compare with (CPU report)
  std::string line;

  double states_per_gpu() const {
    return (weights_bytes + grads_bytes + optimizer_bytes) / static_cast<double>(shards);
  }
  double total_bytes() const { return states_per_gpu() + ddp_bucket_bytes + activation_bytes; }
  bool fits() const { return usable_bytes > 0 && total_bytes() <= usable_bytes; }
};

// A change to the run that shrinks its memory, alone or combined with others.
struct PlanFix {
  std::string name;  // "activation checkpointing + FSDP over 4 GPUs"
  bool checkpointing = false;
  int64_t micro_batch = 0;  // the new micro-batch, grad_accum scaled to keep the global batch
  int64_t grad_accum = 0;
  int64_t fsdp_gpus = 1;        // 1: no FSDP
  double step_time_factor = 1;  // on the measured step time
  // The validate settings that run this layout: the [validate] engine ("native" keeps a whole
  // replica per process; "fsdp2" shards), and the processes per node, one per GPU (--nproc).
  std::string engine;
  int64_t processes_per_node = 1;
  std::string validated_by;  // those settings with the config's, as printed
  MemoryArithmetic memory;
  std::string line;  // name: arithmetic
};

struct AcceleratorOption {
  std::string name;
  std::string vendor;
  bool measured = false;  // the report's own device: its measured capacity and step time
  double capacity_bytes = 0;
  MemoryArithmetic memory;
  double relative_cost = 0;  // per GPU-hour, A100-80GB = 1.0; 0: unknown
  double step_time_s = 0;    // 0: cannot be estimated
  double tokens_per_s = 0;   // per GPU
  double budget_days = 0;    // with a token budget and a step time, else 0
  double budget_gpu_hours = 0;
  double budget_cost = 0;  // budget_gpu_hours x relative_cost (A100-80GB GPU-hours)
  std::string line;
};

struct WallClock {
  bool estimated = false;
  std::string reason;  // why there is no estimate
  std::string accelerator;
  int64_t gpus = 1;
  double scaling = 1;
  double tokens_per_s = 0;  // per GPU
  double seconds = 0;
  double days = 0;
  double gpu_hours = 0;
  double days_with_margin = 0;
  bool pilot_window_enough = false;
  int64_t reservation_days = 0;  // what to book
  std::string line;              // the arithmetic
  std::string advice;            // the 7-day-window sentence
};

struct Plan {
  std::string source;
  std::string shape;   // one line describing the shape and what was measured
  std::string device;  // the measured device's name; "" on a CPU report
  bool gpu_report = false;
  MemoryArithmetic memory;  // with DDP on the measured device (estimate only on a CPU report)
  bool activations_measured = false;
  std::vector<PlanFix> fixes;  // when the run does not fit the measured device, in the order tried
  std::vector<size_t> fix_ranking;  // indices into fixes, first choice first (RankMemoryFixes)
  std::optional<size_t> best_fix;   // fix_ranking's first when it fits
  std::vector<AcceleratorOption> accelerators;  // kPlanAccelerators order
  std::string measured_vendor;  // the measured device's vendor in the catalog; "": unknown
  std::string recommended;      // the cheapest fitting one of measured_vendor; "" when none fits
  std::string alternative;      // a fitting one of the other vendor that costs less; "" if none
  std::string recommendation;   // the sentence
  WallClock wall_clock;
  std::vector<std::string> notes;
  std::vector<std::string> assumptions;
};

// The fixes and their ranking come from one function in plan.cc, RankMemoryFixes: the only
// place that decides memory remedies, for `plan` and for train.step's out-of-memory finding
// (plan/memory_remedies.h, which reads them from MakePlan) alike. A fix is tried when the step
// does not fit with DDP, or when it ran out of memory even though the estimate fits.
Plan MakePlan(const PlanInput& input, const PlanOptions& options, const Catalog& catalog);

// The plan input from a trainlock.report/v2 document (already schema-checked); throws
// InputError naming `source` when train.step carries no measurement or shape.
PlanInput PlanInputFromReport(const nlohmann::json& report, const std::string& source);

// "2B", "500M", "1.5T", "10k", "123456": a positive token count; nullopt when malformed.
std::optional<double> ParseTokenCount(std::string_view text);
// The inverse for printing: 1e10 -> "10B", 1.5e12 -> "1.5T".
std::string TokenCountText(double tokens);
// "MI300X=2.5" -> {"MI300X", 2.5} with the catalog's spelling of the name; nullopt with
// `error` set when the name is not in the catalog or the number is not positive.
std::optional<std::pair<std::string, double>> ParseCostOverride(std::string_view text,
                                                                const Catalog& catalog,
                                                                std::string* error);

std::string RenderPlanText(const Plan& plan);
nlohmann::json PlanJson(const Plan& plan);

}  // namespace trainlock
