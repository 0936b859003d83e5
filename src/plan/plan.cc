// The hardware plan's arithmetic: memory with DDP, the fixes, the accelerators, the
// recommendation and the wall-clock; see plan.h. Every number a person reads is built here as
// a line, so that the tests can compare the lines a person would read.
#include "plan/plan.h"

#include <algorithm>
#include <cmath>

#include "base/text_format.h"
#include "plan/memory_model.h"

namespace trainlock {
namespace {

// The reference trainer keeps fp32 master weights and gradients and AdamW's two fp32 moments
// (memory_model.h); DDP's gradient buckets are one more fp32 copy of the gradients.
constexpr double kWeightBytesPerParam = 4;
constexpr double kGradBytesPerParam = 4;
constexpr double kAdamBytesPerParam = 8;
constexpr double kDdpBucketBytesPerParam = 4;
// Checkpointing recomputes the forward (a third of forward + backward) in the backward.
constexpr double kCheckpointingStepFactor = 4.0 / 3.0;
constexpr int64_t kMaxFsdpGpus = 64;

// Devices name themselves "NVIDIA H200" or "AMD Instinct MI300X"; the catalog may lack the
// vendor's prefix as an alias.
const GpuModel* FindMeasuredGpu(const Catalog& catalog, const std::string& name) {
  if (name.empty()) return nullptr;
  if (const GpuModel* gpu = catalog.FindGpu(name)) return gpu;
  for (std::string_view prefix : {"NVIDIA ", "AMD Instinct ", "AMD "}) {
    if (name.rfind(prefix, 0) == 0) {
      if (const GpuModel* gpu = catalog.FindGpu(name.substr(prefix.size()))) return gpu;
    }
  }
  return nullptr;
}

// The catalog has dense bf16 and fp16 figures only: an fp32 run cannot be scaled.
double DensePeakTflops(const GpuModel& gpu, const std::string& precision) {
  if (precision == "bf16") return gpu.bf16_dense_tflops;
  if (precision == "fp16") return gpu.fp16_dense_tflops;
  return 0;
}

std::string TargetOf(const std::string& vendor) {
  return vendor == "amd" ? "rocm" : "cuda";
}
std::string VendorName(const std::string& vendor) {
  return vendor == "amd" ? "AMD" : "NVIDIA";
}

// What every computation below shares.
struct Context {
  Context(const PlanInput& i, const PlanOptions& o, const Catalog& c)
      : input(i), options(o), catalog(c) {}
  const PlanInput& input;
  const PlanOptions& options;
  const Catalog& catalog;
  double parameters = 0;
  double activation_bytes = 0;  // at the measured shape: measured, else estimated
  bool activations_measured = false;
  std::string estimate_reason;  // why the activations are estimated
  const GpuModel* measured_gpu = nullptr;
  double measured_peak_tflops = 0;
  int64_t gpus = 1;

  double Scaling(int64_t n) const { return n > 1 ? options.ddp_scaling : 1.0; }
  double Usable(double capacity) const { return capacity * (1 - options.headroom); }
};

// The memory of one way of running the step; `ratio` scales the activations at the measured
// shape, `usable_note` explains the usable memory.
MemoryArithmetic Arithmetic(const Context& ctx, int64_t shards, double ratio, double usable,
                            const std::string& usable_note) {
  MemoryArithmetic m;
  m.weights_bytes = kWeightBytesPerParam * ctx.parameters;
  m.grads_bytes = kGradBytesPerParam * ctx.parameters;
  m.optimizer_bytes = kAdamBytesPerParam * ctx.parameters;
  m.shards = shards;
  m.ddp_bucket_bytes = shards == 1 ? kDdpBucketBytesPerParam * ctx.parameters : 0;
  m.activation_bytes = ctx.activation_bytes * ratio;
  m.usable_bytes = usable;
  std::string states = "weights " + GiB(m.weights_bytes) + " + grads " + GiB(m.grads_bytes) +
                       " + AdamW " + GiB(m.optimizer_bytes);
  m.line = shards > 1 ? "(" + states + ") / " + std::to_string(shards) : states;
  if (m.ddp_bucket_bytes > 0) m.line += " + DDP buckets " + GiB(m.ddp_bucket_bytes);
  std::string source = ctx.activations_measured ? "measured" : "estimated";
  if (ratio != 1) source += " " + GiB(ctx.activation_bytes) + " x " + Fixed(ratio, 3);
  m.line +=
      " + activations " + GiB(m.activation_bytes) + " (" + source + ") = " + GiB(m.total_bytes());
  if (usable > 0) {
    m.line +=
        " of " + GiB(usable) + " usable" + usable_note + (m.fits() ? ": fits" : ": does not fit");
  } else {
    m.line += " per GPU";
  }
  return m;
}

// Activations + logits of the estimate at a changed shape over those at the measured shape:
// what the measured activations are scaled by.
double ActivationRatio(const TrainConfig& config, int64_t micro_batch, bool checkpointing) {
  MemoryEstimate base = EstimateTrainingMemory(config);
  MemoryEstimate changed = EstimateTrainingMemory(config, {micro_batch, checkpointing, 1});
  return (changed.activation_bytes + changed.logits_bytes) /
         (base.activation_bytes + base.logits_bytes);
}

void MeasureActivations(Context& ctx) {
  const PlanInput& in = ctx.input;
  const double states =
      (kWeightBytesPerParam + kGradBytesPerParam + kAdamBytesPerParam) * ctx.parameters;
  const double measured = in.peak_allocated_bytes - states;
  if (in.device_total_bytes <= 0) {
    ctx.estimate_reason = "the report is from a CPU run, which measures no device memory";
  } else if (in.out_of_memory) {
    ctx.estimate_reason = "train.step ran out of memory, so its peak is not what the step needs";
  } else if (in.peak_allocated_bytes < 0) {
    ctx.estimate_reason = "the report has no measured peak allocated memory";
  } else if (measured <= 0) {
    ctx.estimate_reason = "the measured peak allocated (" + GiB(in.peak_allocated_bytes) +
                          ") is not above the model states (" + GiB(states) + ")";
  } else {
    ctx.activations_measured = true;
    ctx.activation_bytes = measured;
    return;
  }
  MemoryEstimate e = EstimateTrainingMemory(in.config);
  ctx.activation_bytes = e.activation_bytes + e.logits_bytes;
}

// The settings `trainlock validate` runs a fix at: the engine that honours it (the native
// engine keeps a whole replica per process, so sharding needs fsdp2), the config's
// parallelism and activation_checkpointing, and one process per GPU: validator ranks for the
// native engine (--nproc), the engine's own world size for a Python engine (--engine-nproc;
// --nproc would start ranks that each train alone).
std::string ValidatedBy(const PlanFix& fix) {
  const int64_t n = fix.processes_per_node;
  const std::string option = fix.engine == "native" ? "--nproc " : "--engine-nproc ";
  return "[validate] engine = \"" + fix.engine +
         "\", training.parallelism: " + (fix.engine == "fsdp2" ? "fsdp" : "ddp") +
         ", training.activation_checkpointing: " + (fix.checkpointing ? "true" : "false") + ", " +
         std::to_string(n) + (n == 1 ? " process" : " processes") + " per node (" + option +
         std::to_string(n) + ", one per GPU)";
}

PlanFix BuildFix(const Context& ctx, bool checkpointing, int64_t micro_batch, int64_t fsdp_gpus,
                 double usable) {
  const TrainingConfig& t = ctx.input.config.training;
  PlanFix fix;
  fix.checkpointing = checkpointing;
  fix.micro_batch = micro_batch;
  fix.grad_accum = t.grad_accum * t.micro_batch / micro_batch;
  fix.fsdp_gpus = fsdp_gpus;
  fix.step_time_factor = checkpointing ? kCheckpointingStepFactor : 1;
  fix.engine = fsdp_gpus > 1 ? "fsdp2" : "native";
  fix.processes_per_node = fsdp_gpus > 1 ? fsdp_gpus : ctx.gpus;
  fix.validated_by = ValidatedBy(fix);
  std::vector<std::string> parts;
  if (checkpointing) parts.push_back("activation checkpointing");
  if (micro_batch != t.micro_batch) {
    parts.push_back("micro_batch " + std::to_string(micro_batch) + " with grad_accum " +
                    std::to_string(fix.grad_accum));
  }
  if (fsdp_gpus > 1) parts.push_back("FSDP over " + std::to_string(fsdp_gpus) + " GPUs");
  for (size_t i = 0; i < parts.size(); ++i) fix.name += (i ? " + " : "") + parts[i];
  const double ratio = ActivationRatio(
      ctx.input.config, micro_batch == t.micro_batch ? 0 : micro_batch, checkpointing);
  fix.memory = Arithmetic(ctx, fsdp_gpus, ratio, usable, "");
  fix.line = fix.name + ": " + fix.memory.line;
  if (checkpointing) fix.line += "; step time about x" + Fixed(fix.step_time_factor, 2);
  return fix;
}

// Micro-batches that divide the measured one (so grad_accum keeps the global batch exactly),
// largest first.
std::vector<int64_t> SmallerMicroBatches(int64_t micro_batch) {
  std::vector<int64_t> out;
  for (int64_t d = micro_batch - 1; d >= 1; --d) {
    if (micro_batch % d == 0) out.push_back(d);
  }
  return out;
}

std::vector<int64_t> FsdpSizes(const Context& ctx) {
  if (ctx.options.gpus > 1) return {ctx.options.gpus};
  std::vector<int64_t> out;
  for (int64_t n = 2; n <= kMaxFsdpGpus; n *= 2) out.push_back(n);
  return out;
}

// The least drastic fix of one kind: the fewest FSDP GPUs, then the largest micro-batch, that
// fits; the most drastic one (which does not fit) when none does.
PlanFix SearchFix(const Context& ctx, bool checkpointing, bool micro_batch, bool fsdp,
                  double usable) {
  const int64_t measured = ctx.input.config.training.micro_batch;
  std::vector<int64_t> batches =
      micro_batch ? SmallerMicroBatches(measured) : std::vector<int64_t>{measured};
  std::vector<int64_t> sizes = fsdp ? FsdpSizes(ctx) : std::vector<int64_t>{1};
  for (int64_t n : sizes) {
    for (int64_t b : batches) {
      PlanFix fix = BuildFix(ctx, checkpointing, b, n, usable);
      if (fix.memory.fits()) return fix;
    }
  }
  return BuildFix(ctx, checkpointing, batches.back(), sizes.back(), usable);
}

// The one place that decides and ranks memory remedies (plan.h): single changes first, pairs
// when no single one fits, all three when no pair does. Ranked: those that fit first, by the
// fewest GPUs, then the least slowdown, then the order tried; those that do not fit after them,
// in the order tried.
void RankMemoryFixes(const Context& ctx, double usable, Plan& plan) {
  const TrainingConfig& t = ctx.input.config.training;
  const bool checkpointing = !t.activation_checkpointing;
  const bool micro_batch = t.micro_batch > 1;
  if (checkpointing) plan.fixes.push_back(SearchFix(ctx, true, false, false, usable));
  if (micro_batch) plan.fixes.push_back(SearchFix(ctx, false, true, false, usable));
  plan.fixes.push_back(SearchFix(ctx, false, false, true, usable));
  bool single_fits = std::any_of(plan.fixes.begin(), plan.fixes.end(),
                                 [](const PlanFix& f) { return f.memory.fits(); });
  if (!single_fits) {
    if (checkpointing && micro_batch)
      plan.fixes.push_back(SearchFix(ctx, true, true, false, usable));
    if (checkpointing) plan.fixes.push_back(SearchFix(ctx, true, false, true, usable));
    if (micro_batch) plan.fixes.push_back(SearchFix(ctx, false, true, true, usable));
    bool pair_fits = std::any_of(plan.fixes.begin(), plan.fixes.end(),
                                 [](const PlanFix& f) { return f.memory.fits(); });
    if (checkpointing && micro_batch && !pair_fits)
      plan.fixes.push_back(SearchFix(ctx, true, true, true, usable));
  }
  std::vector<size_t> fitting, rest;
  for (size_t i = 0; i < plan.fixes.size(); ++i)
    (plan.fixes[i].memory.fits() ? fitting : rest).push_back(i);
  std::stable_sort(fitting.begin(), fitting.end(), [&](size_t x, size_t y) {
    const PlanFix &a = plan.fixes[x], &b = plan.fixes[y];
    return std::make_pair(a.fsdp_gpus, a.step_time_factor) <
           std::make_pair(b.fsdp_gpus, b.step_time_factor);
  });
  if (!fitting.empty()) plan.best_fix = fitting.front();
  plan.fix_ranking = std::move(fitting);
  plan.fix_ranking.insert(plan.fix_ranking.end(), rest.begin(), rest.end());
}

double RelativeCost(const Context& ctx, const GpuModel& gpu) {
  auto it = ctx.options.costs.find(gpu.name);
  return it != ctx.options.costs.end() ? it->second : gpu.relative_cost;
}

void EstimateBudget(const Context& ctx, AcceleratorOption& a) {
  if (ctx.options.tokens <= 0 || a.tokens_per_s <= 0) return;
  const double seconds =
      ctx.options.tokens / (a.tokens_per_s * static_cast<double>(ctx.gpus) * ctx.Scaling(ctx.gpus));
  a.budget_days = seconds / 86400;
  a.budget_gpu_hours = seconds * static_cast<double>(ctx.gpus) / 3600;
  a.budget_cost = a.budget_gpu_hours * a.relative_cost;
}

AcceleratorOption Accelerator(const Context& ctx, const GpuModel& gpu) {
  const PlanInput& in = ctx.input;
  AcceleratorOption a;
  a.name = gpu.name;
  a.vendor = gpu.vendor;
  a.measured = &gpu == ctx.measured_gpu;
  a.capacity_bytes = a.measured ? in.device_total_bytes : gpu.memory_gb * 1e9;
  const std::string factor = " x " + Fixed(1 - ctx.options.headroom, 2) + ")";
  const std::string note =
      a.measured ? " (" + GiB(a.capacity_bytes) + " measured" + factor
                 : " (" + ShortNumber(gpu.memory_gb) + " GB = " + GiB(a.capacity_bytes) + factor;
  a.memory = Arithmetic(ctx, 1, 1, ctx.Usable(a.capacity_bytes), note);
  a.line = a.name + ": " + GiB(a.memory.total_bytes()) + " of " + GiB(a.memory.usable_bytes) +
           " usable" + note + (a.memory.fits() ? ": fits" : ": does not fit");
  a.relative_cost = RelativeCost(ctx, gpu);
  const double peak = DensePeakTflops(gpu, in.config.training.precision);
  if (a.measured && in.step_time_s > 0) {
    a.step_time_s = in.step_time_s;
    a.tokens_per_s = in.tokens_per_s;
  } else if (in.step_time_s > 0 && ctx.measured_peak_tflops > 0 && peak > 0) {
    a.step_time_s = in.step_time_s * ctx.measured_peak_tflops / peak;
    a.tokens_per_s = in.tokens_per_s * peak / ctx.measured_peak_tflops;
  }
  EstimateBudget(ctx, a);
  return a;
}

std::string Names(const std::vector<const AcceleratorOption*>& accelerators) {
  std::string out;
  for (size_t i = 0; i < accelerators.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == accelerators.size() ? " and " : ", ") + accelerators[i]->name;
  }
  return out;
}

// The cheapest fitting accelerator among `options` (by the whole budget's cost when every one
// of them has it, else by the price per GPU-hour); nullptr when none fits.
const AcceleratorOption* Cheapest(const std::vector<const AcceleratorOption*>& options,
                                  bool by_budget) {
  const AcceleratorOption* best = nullptr;
  for (const AcceleratorOption* a : options) {
    double cost = by_budget ? a->budget_cost : a->relative_cost;
    if (!best || cost < (by_budget ? best->budget_cost : best->relative_cost)) best = a;
  }
  return best;
}

// What the recommendation says when no accelerator of the measured vendor (or none at all)
// fits: the fix on the measured device.
void RecommendFix(const Context& ctx, const std::vector<const AcceleratorOption*>& considered,
                  const std::string& vendor, Plan& plan) {
  plan.recommendation = vendor.empty() ? "none of " + Names(considered)
                                       : "none of the " + VendorName(vendor) + " accelerators (" +
                                             Names(considered) + ")";
  plan.recommendation += " fits this shape with DDP";
  if (plan.memory.fits()) {
    plan.recommendation += "; the measured " + ctx.input.device_name + " does";
  } else if (plan.best_fix) {
    const PlanFix& fix = plan.fixes[*plan.best_fix];
    plan.recommendation += "; on the " + ctx.input.device_name + ": " + fix.name + " (" +
                           GiB(fix.memory.total_bytes()) + " of " + GiB(fix.memory.usable_bytes) +
                           " usable)";
  } else {
    plan.recommendation += ", and no fix within " + std::to_string(kMaxFsdpGpus) +
                           " GPUs fits the " + ctx.input.device_name;
  }
}

// The measured vendor's image, custom ops and step are what the report validated: another
// vendor's accelerator is a different project (another image target, the ops ported, the
// validator re-run), so it is recommended only when the measured vendor is unknown, and else
// named as an option beside the recommendation when it fits at a lower cost.
void Recommend(const Context& ctx, Plan& plan) {
  const std::string vendor = ctx.measured_gpu ? ctx.measured_gpu->vendor : std::string();
  plan.measured_vendor = vendor;
  std::vector<const AcceleratorOption*> fitting, same_vendor, same_fitting, other_fitting;
  for (const AcceleratorOption& a : plan.accelerators) {
    const bool same = vendor.empty() || a.vendor == vendor;
    if (same) same_vendor.push_back(&a);
    if (!a.memory.fits() || a.relative_cost <= 0) continue;
    fitting.push_back(&a);
    (same ? same_fitting : other_fitting).push_back(&a);
  }
  const bool by_budget =
      ctx.options.tokens > 0 && !fitting.empty() &&
      std::all_of(fitting.begin(), fitting.end(), [](auto* a) { return a->budget_cost > 0; });
  auto cost = [&](const AcceleratorOption* a) {
    return by_budget ? a->budget_cost : a->relative_cost;
  };
  auto cost_text = [&](const AcceleratorOption* a) {
    return Fixed(cost(a), 1) + (by_budget ? "" : " per GPU-hour");
  };
  auto other_vendor = [&](const AcceleratorOption* a, const std::string& what) {
    return "; " + a->name + " (" + VendorName(a->vendor) + ") " + what + " but needs the " +
           TargetOf(a->vendor) + " target built and validated on one first";
  };
  const AcceleratorOption* cheapest_other = Cheapest(other_fitting, by_budget);

  if (same_fitting.empty()) {
    if (vendor.empty() || !cheapest_other || same_vendor.empty()) {
      std::vector<const AcceleratorOption*> all;
      for (const AcceleratorOption& a : plan.accelerators) all.push_back(&a);
      RecommendFix(ctx, all, "", plan);
    } else {
      RecommendFix(ctx, same_vendor, vendor, plan);
    }
    if (cheapest_other) {
      plan.alternative = cheapest_other->name;
      plan.recommendation += other_vendor(
          cheapest_other, by_budget ? "fits it with DDP and would cost " + cost_text(cheapest_other)
                                    : "fits it with DDP at " + cost_text(cheapest_other));
    }
    return;
  }

  const AcceleratorOption& best = *Cheapest(same_fitting, by_budget);
  plan.recommended = best.name;
  const std::string scope = vendor.empty() ? "" : VendorName(vendor) + " ";
  if (by_budget) {
    plan.recommendation = best.name + ": the lowest cost for " +
                          TokenCountText(ctx.options.tokens) + " tokens among the " + scope +
                          "accelerators that fit (" + Fixed(best.budget_gpu_hours, 1) +
                          " GPU-hours x " + Fixed(best.relative_cost, 1) + " = " +
                          Fixed(best.budget_cost, 1) + " A100-80GB GPU-hours)";
  } else {
    plan.recommendation =
        best.name + ": the cheapest " + scope + "accelerator that fits (" +
        Fixed(best.relative_cost, 1) + " per GPU-hour, A100-80GB = 1.0; " +
        (ctx.options.tokens > 0 ? "not every one has a step time" : "no --tokens") +
        ", so by the price per GPU-hour alone)";
  }
  const AcceleratorOption* alternative =
      cheapest_other && cost(cheapest_other) < cost(&best) ? cheapest_other : nullptr;
  if (alternative) {
    plan.alternative = alternative->name;
    plan.recommendation += other_vendor(alternative, "would cost " + cost_text(alternative));
  }
  std::vector<const AcceleratorOption*> ranked = fitting;
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](auto* x, auto* y) { return cost(x) < cost(y); });
  std::string others;
  for (const AcceleratorOption* a : ranked) {
    if (a == &best || a == alternative) continue;
    others += (others.empty() ? "" : ", ") + a->name + " " + Fixed(cost(a), 1);
  }
  if (!others.empty()) plan.recommendation += "; the others that fit: " + others;
  if (vendor.empty()) {
    plan.recommendation += "; " + best.name + " is unmeasured: the report's " +
                           ctx.input.device_name +
                           " is not in the GPU catalog, so the measured vendor is unknown; "
                           "validate the " +
                           TargetOf(best.vendor) + " target on one before booking";
  }
}

void AdviseReservation(const PlanOptions& o, WallClock& w) {
  w.days_with_margin = w.days * o.margin;
  const std::string window = ShortNumber(o.pilot_window_days) + "-day pilot window";
  const std::string margin = " days with the x" + Fixed(o.margin, 1) + " margin";
  if (w.days_with_margin <= o.pilot_window_days) {
    w.pilot_window_enough = true;
    w.reservation_days = static_cast<int64_t>(std::ceil(o.pilot_window_days));
    w.advice = "a " + window + " is enough (" + Fixed(w.days, 1) + " days estimated, " +
               Fixed(w.days_with_margin, 1) + margin + " = " +
               Fixed(100 * w.days_with_margin / o.pilot_window_days, 0) + "% of the window)";
  } else {
    // Reservations are booked by the week.
    w.reservation_days = 7 * static_cast<int64_t>(std::ceil(w.days_with_margin / 7));
    w.advice = "the estimate (" + Fixed(w.days, 1) +
               " days) justifies a longer reservation of about " +
               std::to_string(w.reservation_days) + " days (" + Fixed(w.days_with_margin, 1) +
               margin + ", rounded up to whole weeks)";
  }
}

void EstimateWallClock(const Context& ctx, Plan& plan) {
  const PlanInput& in = ctx.input;
  WallClock& w = plan.wall_clock;
  if (ctx.options.tokens <= 0) {
    w.reason = "no --tokens: give the token budget (e.g. --tokens 10B) for a wall-clock estimate";
    return;
  }
  if (!plan.gpu_report) {
    w.reason = "a CPU report: the wall-clock needs train.step measured on a GPU";
    return;
  }
  if (in.step_time_s <= 0 || in.tokens_per_s <= 0) {
    w.reason = in.out_of_memory ? "train.step ran out of memory, so there is no step time: "
                                  "validate again with a fix that fits, then plan"
                                : "the report has no step time";
    return;
  }
  const AcceleratorOption* chosen = nullptr;
  for (const AcceleratorOption& a : plan.accelerators) {
    if (a.name == plan.recommended && a.tokens_per_s > 0) chosen = &a;
  }
  w.gpus = ctx.gpus;
  std::string on;
  if (chosen) {
    w.accelerator = chosen->name;
    w.tokens_per_s = chosen->tokens_per_s;
  } else if (plan.memory.fits()) {
    w.accelerator = in.device_name;
    w.tokens_per_s = in.tokens_per_s;
    if (!plan.recommended.empty()) on = " (" + plan.recommended + " has no step time estimate)";
  } else if (plan.best_fix) {
    const PlanFix& fix = plan.fixes[*plan.best_fix];
    w.accelerator = in.device_name;
    w.tokens_per_s = in.tokens_per_s / fix.step_time_factor;
    w.gpus = std::max(w.gpus, fix.fsdp_gpus);
    on = " with " + fix.name;
  } else {
    w.reason = "nothing in this plan fits: there is no configuration to estimate";
    return;
  }
  w.scaling = ctx.Scaling(w.gpus);
  const double gpus = static_cast<double>(w.gpus);
  w.seconds = ctx.options.tokens / (w.tokens_per_s * gpus * w.scaling);
  if (!(w.seconds < 86400 * 1e9)) {  // a report's absurd tokens/s must not overflow the advice
    w.reason = "the estimate is beyond a billion days: check the report's tokens/s";
    return;
  }
  w.estimated = true;
  w.days = w.seconds / 86400;
  w.gpu_hours = w.seconds * gpus / 3600;
  w.line = TokenCountText(ctx.options.tokens) + " tokens / (" + Fixed(w.tokens_per_s, 0) +
           " tokens/s per GPU x " + std::to_string(w.gpus) +
           (w.gpus == 1 ? " GPU x " : " GPUs x ") + Fixed(w.scaling, 2) +
           ") = " + Fixed(w.seconds / 3600, 1) + " hours = " + Fixed(w.days, 1) + " days on " +
           std::to_string(w.gpus) + " x " + w.accelerator + on + ", " + Fixed(w.gpu_hours, 1) +
           " GPU-hours";
  AdviseReservation(ctx.options, w);
}

std::string ShapeLine(const Context& ctx) {
  const PlanInput& in = ctx.input;
  const TrainingConfig& t = in.config.training;
  const double tokens = in.tokens_per_step > 0
                            ? in.tokens_per_step
                            : static_cast<double>(t.seq_len) * static_cast<double>(t.micro_batch) *
                                  static_cast<double>(t.grad_accum);
  std::string line = TokenCountText(ctx.parameters) + " parameters, seq_len " +
                     std::to_string(t.seq_len) + " x micro_batch " + std::to_string(t.micro_batch) +
                     " x grad_accum " + std::to_string(t.grad_accum) + " = " + Fixed(tokens, 0) +
                     " tokens per step per GPU, " + t.precision + ", activation checkpointing " +
                     (t.activation_checkpointing ? "on" : "off");
  if (in.device_total_bytes <= 0) return line + "; measured on a CPU";
  line += "; measured on " + in.device_name + ": ";
  if (in.out_of_memory) return line + "out of memory at this shape";
  line +=
      "step " + Fixed(in.step_time_s, 3) + " s, " + Fixed(in.tokens_per_s, 0) + " tokens/s per GPU";
  if (in.mfu > 0) line += ", MFU " + Fixed(100 * in.mfu, 1) + "%";
  if (in.peak_allocated_bytes >= 0) line += ", peak allocated " + GiB(in.peak_allocated_bytes);
  if (in.peak_reserved_bytes >= 0) line += ", peak reserved " + GiB(in.peak_reserved_bytes);
  if (in.device_used_bytes >= 0) line += ", device used " + GiB(in.device_used_bytes);
  return line + " of " + GiB(in.device_total_bytes);
}

std::string HeadroomAssumption(const Context& ctx) {
  const PlanInput& in = ctx.input;
  std::string line = "usable memory: capacity x " + Fixed(1 - ctx.options.headroom, 2) +
                     ", keeping " + Fixed(100 * ctx.options.headroom, 0) +
                     "% for allocator fragmentation and the CUDA context";
  if (ctx.activations_measured && in.peak_reserved_bytes >= 0 && in.device_used_bytes >= 0) {
    const double gap = in.device_used_bytes - in.peak_allocated_bytes;
    line += " (measured here: peak reserved - peak allocated = " +
            GiB(in.peak_reserved_bytes - in.peak_allocated_bytes) +
            ", device used - peak allocated = " + GiB(gap) + " = " +
            Fixed(100 * gap / in.device_total_bytes, 1) + "% of capacity)";
  }
  return line;
}

void AddAssumptions(const Context& ctx, Plan& plan) {
  const PlanInput& in = ctx.input;
  auto& a = plan.assumptions;
  a.push_back(
      "model states: 16 bytes per parameter: fp32 master weights 4 + fp32 gradients 4 + AdamW "
      "exp_avg and exp_avg_sq 8 (the reference trainer keeps fp32 weights and autocasts)");
  if (ctx.activations_measured) {
    a.push_back("activations and temporaries: the measured peak allocated (" +
                GiB(in.peak_allocated_bytes) + ") minus the model states (" +
                GiB(16 * ctx.parameters) + ")");
  } else {
    a.push_back(
        "activations and temporaries: estimated from the shape (activations + logits, "
        "memory_model.h) because " +
        ctx.estimate_reason);
  }
  a.push_back(
      "DDP: gradient buckets add a copy of the gradients, 4 bytes per parameter "
      "(PyTorch's default gradient_as_bucket_view=False), counted at any GPU count");
  if (!plan.gpu_report) return;
  a.push_back(HeadroomAssumption(ctx));
  a.push_back(
      "catalog capacities: the datasheet's GB (10^9 bytes), a little below what a "
      "device reports; the measured device's own total is used for it");
  const std::string& precision = in.config.training.precision;
  if (ctx.measured_peak_tflops <= 0) {
    a.push_back("step time on other accelerators: not estimated (" +
                (precision == "fp32" ? std::string("the catalog has no fp32 throughput")
                                     : "the measured device's dense peak is unknown") +
                ")");
  } else {
    a.push_back(
        "step time on other accelerators: the measured one x the measured device's "
        "dense " +
        precision + " TFLOP/s (" + ShortNumber(ctx.measured_peak_tflops) +
        ") / theirs, i.e. the same MFU" +
        (in.mfu > 0 ? " as measured (" + Fixed(100 * in.mfu, 1) + "%)" : ""));
  }
  if (!plan.fixes.empty()) {
    a.push_back(
        "activation checkpointing: the activations x the estimate's ratio "
        "with/without it; the forward is recomputed, step time about x1.33");
    a.push_back(
        "smaller micro-batch: activations scale linearly with it, grad_accum keeps the "
        "global batch; tokens/s per GPU assumed unchanged");
    a.push_back(
        "FSDP: weights, gradients and AdamW state divided over N GPUs, no DDP buckets; "
        "the gathered layer and communication buffers are left to the headroom; step "
        "time assumed unchanged (communication overlapped)");
  }
  a.push_back("throughput: tokens/s per GPU x GPUs x " + Fixed(ctx.options.ddp_scaling, 2) +
              " DDP scaling efficiency for more than one GPU in a node (1.00 for one GPU)");
  std::string costs;
  for (const AcceleratorOption& o : plan.accelerators) {
    costs += (costs.empty() ? "" : ", ") + o.name + " " +
             (o.relative_cost > 0 ? Fixed(o.relative_cost, 1) : std::string("unknown")) +
             (ctx.options.costs.count(o.name) ? " (--cost)" : "");
  }
  a.push_back("relative cost per GPU-hour (A100-80GB = 1.0): " + costs +
              "; typical 2025 on-demand cloud list prices (lockfiles/compat/gpus.toml); "
              "override with --cost NAME=X");
  a.push_back("reservation: the estimate x" + Fixed(ctx.options.margin, 1) +
              " for restarts, evaluations and checkpoints; beyond the " +
              ShortNumber(ctx.options.pilot_window_days) +
              "-day pilot window, rounded up to whole weeks");
}

}  // namespace

Plan MakePlan(const PlanInput& input, const PlanOptions& options, const Catalog& catalog) {
  Context ctx(input, options, catalog);
  ctx.parameters = input.parameters > 0 ? input.parameters
                                        : static_cast<double>(input.config.model.ParameterCount());
  ctx.gpus = std::max<int64_t>(1, options.gpus > 0 ? options.gpus : input.device_count);
  ctx.measured_gpu = FindMeasuredGpu(catalog, input.device_name);
  ctx.measured_peak_tflops =
      input.device_peak_tflops > 0 ? input.device_peak_tflops
      : ctx.measured_gpu ? DensePeakTflops(*ctx.measured_gpu, input.config.training.precision)
                         : 0;
  MeasureActivations(ctx);

  Plan plan;
  plan.source = input.source;
  plan.gpu_report = input.device_total_bytes > 0;
  if (plan.gpu_report) plan.device = input.device_name;
  plan.activations_measured = ctx.activations_measured;
  plan.shape = ShapeLine(ctx);
  const double usable = plan.gpu_report ? ctx.Usable(input.device_total_bytes) : 0;
  plan.memory = Arithmetic(
      ctx, 1, 1, usable,
      " (" + GiB(input.device_total_bytes) + " x " + Fixed(1 - options.headroom, 2) + ")");
  if (!plan.gpu_report) {
    plan.notes.push_back(
        "a CPU report: whether the run fits, the fixes, the accelerators and the wall-clock "
        "need train.step measured on a GPU (trainlock validate on the GPU the run will use); "
        "the memory above is the estimate from the shape");
  } else {
    // After an out-of-memory the step does not fit whatever the estimate says.
    if (!plan.memory.fits() || input.out_of_memory) RankMemoryFixes(ctx, usable, plan);
    for (const char* name : kPlanAccelerators) {
      if (const GpuModel* gpu = catalog.FindGpu(name))
        plan.accelerators.push_back(Accelerator(ctx, *gpu));
    }
    Recommend(ctx, plan);
  }
  if (!ctx.activations_measured)
    plan.notes.push_back("activations are estimated: " + ctx.estimate_reason);
  EstimateWallClock(ctx, plan);
  AddAssumptions(ctx, plan);
  return plan;
}

}  // namespace trainlock
