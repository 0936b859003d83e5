// `trainlock plan`: known answers for given measured numbers. Every expected number and line
// here was worked out by hand (a Python one-liner per case) from the rules plan.h states:
// 16 bytes/param of model states, 4 of DDP buckets, activations = measured peak - states,
// usable = capacity x 0.90, step time scaled by dense TFLOP/s, 0.90 DDP scaling, x1.2 margin.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "compat/catalog.h"
#include "plan/plan.h"
#include "test_support.h"

namespace trainlock {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kH200Total = 150109880320;  // what the pilot's H200 reports (cudaMemGetInfo)

// Llama-3.2-1B's shape (1,235,814,400 parameters) at seq_len 4096.
TrainConfig Pilot(int64_t micro_batch, int64_t grad_accum) {
  TrainConfig c;
  c.model.architecture = "llama";
  c.model.hidden_size = 2048;
  c.model.num_layers = 16;
  c.model.num_heads = 32;
  c.model.num_kv_heads = 8;
  c.model.intermediate_size = 8192;
  c.model.vocab_size = 128256;
  c.model.tie_embeddings = true;
  c.training.seq_len = 4096;
  c.training.micro_batch = micro_batch;
  c.training.grad_accum = grad_accum;
  c.training.precision = "bf16";
  return c;
}

// Llama-3.1-8B's shape (8,030,261,248 parameters) at seq_len 8192 x micro_batch 4.
TrainConfig Llama8b() {
  TrainConfig c = Pilot(4, 1);
  c.model.hidden_size = 4096;
  c.model.num_layers = 32;
  c.model.intermediate_size = 14336;
  c.model.tie_embeddings = false;
  c.training.seq_len = 8192;
  return c;
}

PlanInput Measured(TrainConfig config, const std::string& device, double capacity,
                   double peak_allocated, double step_time_s) {
  PlanInput in;
  in.source = "report.json";
  in.config = config;
  in.device_name = device;
  in.device_total_bytes = capacity;
  in.peak_allocated_bytes = peak_allocated;
  in.step_time_s = step_time_s;
  const TrainingConfig& t = config.training;
  in.tokens_per_step = static_cast<double>(t.seq_len * t.micro_batch * t.grad_accum);
  in.tokens_per_s = in.tokens_per_step / step_time_s;
  in.mfu = 0.3;
  return in;
}

// 45 GiB peak at micro_batch 2 x grad_accum 2: fits every one of the four.
PlanInput SmallOnH200() {
  return Measured(Pilot(2, 2), "NVIDIA H200", kH200Total, 45 * kGiB, 0.4);
}
// 100 GiB peak at micro_batch 8: too large for the 80 GB accelerators.
PlanInput LargeOnH200() {
  return Measured(Pilot(8, 1), "NVIDIA H200", kH200Total, 100 * kGiB, 0.8);
}
// 130 GiB peak at micro_batch 8: too large for the H200 too, not for the MI300X (192 GB).
PlanInput OverH200OnH200() {
  return Measured(Pilot(8, 1), "NVIDIA H200", kH200Total, 130 * kGiB, 0.8);
}
// The small shape measured on an MI300X (a round 192 GiB capacity for the test).
PlanInput SmallOnMI300X() {
  return Measured(Pilot(2, 2), "AMD Instinct MI300X", 192 * kGiB, 45 * kGiB, 0.4);
}
// The 8B shape ran out of memory on an H200: no step time, activations from the estimate.
PlanInput OutOfMemoryOnH200() {
  PlanInput in = Measured(Llama8b(), "NVIDIA H200", kH200Total, 139 * kGiB, 1);
  in.out_of_memory = true;
  in.step_time_s = 0;
  in.tokens_per_s = 0;
  return in;
}

Plan MakeTestPlan(const PlanInput& in, PlanOptions options = {}) {
  return MakePlan(in, options, Catalog::Embedded());
}

PlanOptions Budget(double tokens, int64_t gpus, std::map<std::string, double> costs = {}) {
  PlanOptions o;
  o.tokens = tokens;
  o.gpus = gpus;
  o.costs = std::move(costs);
  return o;
}

std::vector<bool> Fits(const Plan& plan) {
  std::vector<bool> fits;
  for (const AcceleratorOption& a : plan.accelerators) fits.push_back(a.memory.fits());
  return fits;
}

std::vector<std::string> FixLines(const Plan& plan) {
  std::vector<std::string> lines;
  for (const PlanFix& f : plan.fixes) lines.push_back(f.line);
  return lines;
}

bool Contains(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(PlanCatalog, TheFourAcceleratorsCarryARelativeCostPerGpuHour) {
  Catalog catalog = Catalog::Embedded();
  EXPECT_EQ(catalog.FindGpu("A100-80GB")->relative_cost, 1.0);
  EXPECT_EQ(catalog.FindGpu("H100-80GB")->relative_cost, 1.7);
  EXPECT_EQ(catalog.FindGpu("H200")->relative_cost, 2.1);
  EXPECT_EQ(catalog.FindGpu("MI300X")->relative_cost, 1.5);
  EXPECT_EQ(catalog.FindGpu("B200")->relative_cost, 0.0);  // unknown
}

TEST(PlanMemory, MeasuredPeakSplitsIntoStatesAndActivationsPlusDdpBuckets) {
  // The h200 fixture's numbers: 78392698368 bytes peak - 16 x 1235814400 = 54.6 GiB.
  Plan plan = MakeTestPlan(Measured(Pilot(4, 1), "NVIDIA H200", kH200Total, 78392698368, 0.428));
  EXPECT_TRUE(plan.activations_measured);
  EXPECT_EQ(plan.memory.line,
            "weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP buckets 4.6 GiB + activations "
            "54.6 GiB (measured) = 77.6 GiB of 125.8 GiB usable (139.8 GiB x 0.90): fits");
  EXPECT_TRUE(plan.fixes.empty());
}

TEST(PlanMemory, CpuReportPrintsTheEstimateAndSaysItNeedsAGpuReport) {
  PlanInput in = Measured(Pilot(4, 1), "", -1, -1, 10);
  Plan plan = MakeTestPlan(in, Budget(1e10, 1));
  EXPECT_FALSE(plan.gpu_report);
  // activations 4 x 4096 x (16 x 98304 + 128256 x 12) bytes = 47.5 GiB
  EXPECT_EQ(plan.memory.line,
            "weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP buckets 4.6 GiB + activations "
            "47.5 GiB (estimated) = 70.5 GiB per GPU");
  EXPECT_TRUE(plan.accelerators.empty());
  EXPECT_FALSE(plan.wall_clock.estimated);
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes[0].find("need train.step measured on a GPU"), std::string::npos);
}

TEST(PlanMemory, PeakBelowTheModelStatesFallsBackToTheEstimateAndSaysWhy) {
  Plan plan = MakeTestPlan(Measured(Pilot(4, 1), "NVIDIA H200", kH200Total, 10 * kGiB, 0.4));
  EXPECT_FALSE(plan.activations_measured);
  EXPECT_TRUE(Contains(plan.notes,
                       "activations are estimated: the measured peak allocated (10.0 GiB) is not "
                       "above the model states (18.4 GiB)"));
}

TEST(PlanRecommend, ShapeThatFitsAnA100IsRecommendedOnTheCheaperA100Baseline) {
  Plan plan = MakeTestPlan(SmallOnH200());
  EXPECT_EQ(Fits(plan), std::vector<bool>({true, true, true, true}));
  EXPECT_EQ(plan.accelerators[0].line,
            "A100-80GB: 49.6 GiB of 67.1 GiB usable (80 GB = 74.5 GiB x 0.90): fits");
  EXPECT_EQ(plan.recommended, "A100-80GB");
  EXPECT_EQ(plan.recommendation,
            "A100-80GB: the cheapest NVIDIA accelerator that fits (1.0 per GPU-hour, A100-80GB = "
            "1.0; no --tokens, so by the price per GPU-hour alone); the others that fit: MI300X "
            "1.5, H100-80GB 1.7, H200 2.1");
}

TEST(PlanRecommend, A100VsH200ShapeThatFitsA100GetsA100AndShapeOver80GbGetsH200) {
  // 45 GiB peak: 18.4 GiB states + 4.6 GiB buckets + 26.6 GiB activations = 49.6 GiB.
  Plan small = MakeTestPlan(SmallOnH200());
  EXPECT_EQ(small.accelerators[0].line,
            "A100-80GB: 49.6 GiB of 67.1 GiB usable (80 GB = 74.5 GiB x 0.90): fits");
  EXPECT_EQ(small.accelerators[2].line,
            "H200: 49.6 GiB of 125.8 GiB usable (139.8 GiB measured x 0.90): fits");
  EXPECT_EQ(small.recommended, "A100-80GB");
  EXPECT_EQ(small.alternative, "");
  // 100 GiB peak: 104.6 GiB does not fit 80 GB x 0.90 = 67.1 GiB, fits 139.8 GiB x 0.90.
  Plan large = MakeTestPlan(LargeOnH200());
  EXPECT_EQ(large.accelerators[0].line,
            "A100-80GB: 104.6 GiB of 67.1 GiB usable (80 GB = 74.5 GiB x 0.90): does not fit");
  EXPECT_EQ(large.accelerators[2].line,
            "H200: 104.6 GiB of 125.8 GiB usable (139.8 GiB measured x 0.90): fits");
  EXPECT_EQ(large.recommended, "H200");
  EXPECT_EQ(large.recommendation,
            "H200: the cheapest NVIDIA accelerator that fits (2.1 per GPU-hour, A100-80GB = 1.0; "
            "no --tokens, so by the price per GPU-hour alone); MI300X (AMD) would cost 1.5 per "
            "GPU-hour but needs the rocm target built and validated on one first");
}

TEST(PlanRecommend, WithATokenBudgetTheCostOfTheWholeBudgetDecidesNotTheHourlyPrice) {
  // A100-80GB runs at 312/989 of the H200's 40960 tokens/s: 238.9 GPU-hours for 10B tokens,
  // H100-80GB at the H200's: 75.4 GPU-hours x 1.7. MI300X (1307/989 faster, 1.5) is cheaper
  // still, but AMD: named, not recommended.
  Plan plan = MakeTestPlan(SmallOnH200(), Budget(1e10, 8));
  EXPECT_EQ(plan.accelerators[0].step_time_s, 0.4 * 989 / 312);
  EXPECT_EQ(plan.recommended, "H100-80GB");
  EXPECT_EQ(plan.alternative, "MI300X");
  EXPECT_EQ(plan.recommendation,
            "H100-80GB: the lowest cost for 10B tokens among the NVIDIA accelerators that fit "
            "(75.4 GPU-hours x 1.7 = 128.1 A100-80GB GPU-hours); MI300X (AMD) would cost 85.5 "
            "but needs the rocm target built and validated on one first; the others that fit: "
            "H200 158.2, A100-80GB 238.9");
  EXPECT_EQ(plan.wall_clock.accelerator, "H100-80GB");
}

TEST(PlanRecommend, PeakOver80GbIsRecommendedOnTheMeasuredNvidiaH200AndMI300XNamedAsCheaperAmd) {
  Plan plan = MakeTestPlan(LargeOnH200());
  EXPECT_EQ(Fits(plan), std::vector<bool>({false, false, true, true}));
  EXPECT_EQ(plan.accelerators[1].line,
            "H100-80GB: 104.6 GiB of 67.1 GiB usable (80 GB = 74.5 GiB x 0.90): does not fit");
  EXPECT_EQ(plan.accelerators[2].line,
            "H200: 104.6 GiB of 125.8 GiB usable (139.8 GiB measured x 0.90): fits");
  EXPECT_EQ(plan.accelerators[3].line,
            "MI300X: 104.6 GiB of 160.9 GiB usable (192 GB = 178.8 GiB x 0.90): fits");
  // MI300X (192 GB) fits too and costs less (1.5 vs 2.1 per GPU-hour), but the report was
  // measured on NVIDIA: H200 is recommended, MI300X named as the other vendor's option.
  EXPECT_EQ(plan.measured_vendor, "nvidia");
  EXPECT_EQ(plan.recommended, "H200");
  EXPECT_EQ(plan.alternative, "MI300X");
  EXPECT_EQ(plan.recommendation,
            "H200: the cheapest NVIDIA accelerator that fits (2.1 per GPU-hour, A100-80GB = 1.0; "
            "no --tokens, so by the price per GPU-hour alone); MI300X (AMD) would cost 1.5 per "
            "GPU-hour but needs the rocm target built and validated on one first");
}

TEST(PlanRecommend, PeakOver80GbIsRecommendedOnH200WhenMI300XCostsMorePerGpuHour) {
  PlanOptions options;
  options.costs = {{"MI300X", 2.5}};
  Plan plan = MakeTestPlan(LargeOnH200(), options);
  EXPECT_EQ(plan.recommended, "H200");
  EXPECT_EQ(plan.alternative, "");
  EXPECT_EQ(plan.recommendation,
            "H200: the cheapest NVIDIA accelerator that fits (2.1 per GPU-hour, A100-80GB = 1.0; "
            "no --tokens, so by the price per GPU-hour alone); the others that fit: MI300X 2.5");
}

TEST(PlanRecommend, ShapeMeasuredOnAnMI300XIsRecommendedOnTheMI300XNotOnACheaperNvidiaPart) {
  Plan plan = MakeTestPlan(SmallOnMI300X());
  EXPECT_EQ(Fits(plan), std::vector<bool>({true, true, true, true}));
  EXPECT_EQ(plan.accelerators[3].line,
            "MI300X: 49.6 GiB of 172.8 GiB usable (192.0 GiB measured x 0.90): fits");
  EXPECT_EQ(plan.measured_vendor, "amd");
  EXPECT_EQ(plan.recommended, "MI300X");
  EXPECT_EQ(plan.alternative, "A100-80GB");
  EXPECT_EQ(plan.recommendation,
            "MI300X: the cheapest AMD accelerator that fits (1.5 per GPU-hour, A100-80GB = 1.0; "
            "no --tokens, so by the price per GPU-hour alone); A100-80GB (NVIDIA) would cost 1.0 "
            "per GPU-hour but needs the cuda target built and validated on one first; the others "
            "that fit: H100-80GB 1.7, H200 2.1");
}

TEST(PlanRecommend, NothingOfTheMeasuredVendorFitsSoTheFixIsRecommendedAndMI300XNamed) {
  // 130 GiB peak: 111.6 GiB activations; 134.6 GiB > 125.8 usable on the H200.
  Plan plan = MakeTestPlan(OverH200OnH200());
  EXPECT_EQ(plan.memory.line,
            "weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP buckets 4.6 GiB + activations "
            "111.6 GiB (measured) = 134.6 GiB of 125.8 GiB usable (139.8 GiB x 0.90): does not "
            "fit");
  EXPECT_EQ(Fits(plan), std::vector<bool>({false, false, false, true}));
  EXPECT_EQ(plan.accelerators[3].line,
            "MI300X: 134.6 GiB of 160.9 GiB usable (192 GB = 178.8 GiB x 0.90): fits");
  // micro_batch 4 halves the activations: 18.4 + 4.6 + 55.8 = 78.8 GiB, no FSDP, no recompute.
  ASSERT_TRUE(plan.best_fix.has_value());
  EXPECT_EQ(plan.fixes[*plan.best_fix].name, "micro_batch 4 with grad_accum 2");
  EXPECT_EQ(plan.recommended, "");
  EXPECT_EQ(plan.alternative, "MI300X");
  EXPECT_EQ(plan.recommendation,
            "none of the NVIDIA accelerators (A100-80GB, H100-80GB and H200) fits this shape with "
            "DDP; on the NVIDIA H200: micro_batch 4 with grad_accum 2 (78.8 GiB of 125.8 GiB "
            "usable); MI300X (AMD) fits it with DDP at 1.5 per GPU-hour but needs the rocm "
            "target built and validated on one first");
  // With a budget: MI300X at 40960 x 1307/989 tokens/s, 57.0 GPU-hours x 1.5; the wall-clock
  // is the fix's, on the measured H200.
  Plan budget = MakeTestPlan(OverH200OnH200(), Budget(1e10, 8));
  EXPECT_EQ(budget.recommendation,
            "none of the NVIDIA accelerators (A100-80GB, H100-80GB and H200) fits this shape with "
            "DDP; on the NVIDIA H200: micro_batch 4 with grad_accum 2 (78.8 GiB of 125.8 GiB "
            "usable); MI300X (AMD) fits it with DDP and would cost 85.5 but needs the rocm target "
            "built and validated on one first");
  EXPECT_EQ(budget.wall_clock.line,
            "10B tokens / (40960 tokens/s per GPU x 8 GPUs x 0.90) = 9.4 hours = 0.4 days on 8 x "
            "NVIDIA H200 with micro_batch 4 with grad_accum 2, 75.4 GPU-hours");
}

TEST(PlanRecommend, DeviceNotInTheCatalogHasNoMeasuredVendorSoAllAreConsideredAndSaidUnmeasured) {
  Plan plan = MakeTestPlan(
      Measured(Pilot(2, 2), "NVIDIA RTX PRO 6000 Blackwell", 96 * kGiB, 45 * kGiB, 0.4));
  EXPECT_EQ(plan.measured_vendor, "");
  EXPECT_EQ(plan.recommended, "A100-80GB");
  EXPECT_EQ(plan.recommendation,
            "A100-80GB: the cheapest accelerator that fits (1.0 per GPU-hour, A100-80GB = 1.0; no "
            "--tokens, so by the price per GPU-hour alone); the others that fit: MI300X 1.5, "
            "H100-80GB 1.7, H200 2.1; A100-80GB is unmeasured: the report's NVIDIA RTX PRO 6000 "
            "Blackwell is not in the GPU catalog, so the measured vendor is unknown; validate the "
            "cuda target on one before booking");
}

TEST(PlanFixes, ShapeThatFitsNothingGetsEachFixWithItsArithmetic) {
  Plan plan = MakeTestPlan(OutOfMemoryOnH200());
  // 16 x 8030261248 bytes of states; activations 32768 x (32 x 184320) + logits 32768 x
  // 128256 x 12 = 227.0 GiB, estimated because the step ran out of memory.
  EXPECT_EQ(plan.memory.line,
            "weights 29.9 GiB + grads 29.9 GiB + AdamW 59.8 GiB + DDP buckets 29.9 GiB + "
            "activations 227.0 GiB (estimated) = 376.5 GiB of 125.8 GiB usable (139.8 GiB x "
            "0.90): does not fit");
  EXPECT_EQ(Fits(plan), std::vector<bool>({false, false, false, false}));
  EXPECT_EQ(
      FixLines(plan),
      std::vector<std::string>({
          "activation checkpointing: weights 29.9 GiB + grads 29.9 GiB + AdamW 59.8 GiB + DDP "
          "buckets 29.9 GiB + activations 68.6 GiB (estimated 227.0 GiB x 0.302) = 218.2 GiB of "
          "125.8 GiB usable: does not fit; step time about x1.33",
          "micro_batch 1 with grad_accum 4: weights 29.9 GiB + grads 29.9 GiB + AdamW 59.8 GiB + "
          "DDP buckets 29.9 GiB + activations 56.7 GiB (estimated 227.0 GiB x 0.250) = 206.3 GiB "
          "of 125.8 GiB usable: does not fit",
          "FSDP over 64 GPUs: (weights 29.9 GiB + grads 29.9 GiB + AdamW 59.8 GiB) / 64 + "
          "activations 227.0 GiB (estimated) = 228.8 GiB of 125.8 GiB usable: does not fit",
          "activation checkpointing + micro_batch 1 with grad_accum 4: weights 29.9 GiB + grads "
          "29.9 GiB + AdamW 59.8 GiB + DDP buckets 29.9 GiB + activations 17.1 GiB (estimated "
          "227.0 GiB x 0.076) = 166.7 GiB of 125.8 GiB usable: does not fit; step time about "
          "x1.33",
          "activation checkpointing + FSDP over 4 GPUs: (weights 29.9 GiB + grads 29.9 GiB + "
          "AdamW 59.8 GiB) / 4 + activations 68.6 GiB (estimated 227.0 GiB x 0.302) = 98.5 GiB "
          "of 125.8 GiB usable: fits; step time about x1.33",
          "micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs: (weights 29.9 GiB + grads 29.9 "
          "GiB + AdamW 59.8 GiB) / 2 + activations 56.7 GiB (estimated 227.0 GiB x 0.250) = "
          "116.6 GiB of 125.8 GiB usable: fits",
      }));
  ASSERT_TRUE(plan.best_fix.has_value());  // 2 GPUs and no recompute beat 4 GPUs
  EXPECT_EQ(plan.fixes[*plan.best_fix].name, "micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs");
  EXPECT_EQ(plan.recommended, "");
  EXPECT_EQ(plan.recommendation,
            "none of A100-80GB, H100-80GB, H200 and MI300X fits this shape with DDP; on the "
            "NVIDIA H200: micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs (116.6 GiB of "
            "125.8 GiB usable)");
}

TEST(PlanFixes, GpusOptionSetsTheFsdpSize) {
  Plan plan = MakeTestPlan(OutOfMemoryOnH200(), Budget(0, 8));
  EXPECT_EQ(plan.fixes[2].line,
            "FSDP over 8 GPUs: (weights 29.9 GiB + grads 29.9 GiB + AdamW 59.8 GiB) / 8 + "
            "activations 227.0 GiB (estimated) = 241.9 GiB of 125.8 GiB usable: does not fit");
  EXPECT_EQ(plan.fixes[*plan.best_fix].name, "micro_batch 1 with grad_accum 4 + FSDP over 8 GPUs");
}

TEST(PlanFixes, FixesScaleTheMeasuredActivationsByTheEstimatesRatio) {
  // The pilot's 78392698368-byte peak measured on an 80 GiB A100: 77.6 GiB > 72.0 usable.
  Plan plan =
      MakeTestPlan(Measured(Pilot(4, 1), "NVIDIA A100-SXM4-80GB", 80 * kGiB, 78392698368, 0.6));
  EXPECT_EQ(plan.memory.line,
            "weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP buckets 4.6 GiB + activations "
            "54.6 GiB (measured) = 77.6 GiB of 72.0 GiB usable (80.0 GiB x 0.90): does not fit");
  // Checkpointing keeps (3.5 + 23.5) of the estimate's (24.0 + 23.5) GiB: x0.568.
  EXPECT_EQ(
      FixLines(plan),
      std::vector<std::string>({
          "activation checkpointing: weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP "
          "buckets 4.6 GiB + activations 31.0 GiB (measured 54.6 GiB x 0.568) = 54.0 GiB of "
          "72.0 GiB usable: fits; step time about x1.33",
          "micro_batch 2 with grad_accum 2: weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + "
          "DDP buckets 4.6 GiB + activations 27.3 GiB (measured 54.6 GiB x 0.500) = 50.3 GiB of "
          "72.0 GiB usable: fits",
          "FSDP over 2 GPUs: (weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB) / 2 + activations "
          "54.6 GiB (measured) = 63.8 GiB of 72.0 GiB usable: fits",
      }));
  EXPECT_EQ(plan.fixes[*plan.best_fix].name, "micro_batch 2 with grad_accum 2");
  EXPECT_EQ(plan.accelerators[0].line,
            "A100-80GB: 77.6 GiB of 72.0 GiB usable (80.0 GiB measured x 0.90): does not fit");
  EXPECT_EQ(plan.accelerators[2].line,
            "H200: 77.6 GiB of 118.2 GiB usable (141 GB = 131.3 GiB x 0.90): fits");
  EXPECT_EQ(plan.accelerators[2].step_time_s, 0.6 * 312 / 989);
}

// Each fix names the settings that validate it: sharding needs the fsdp2 engine, the rest is
// the native engine's; the 8B out-of-memory report's first choice shards over 2 GPUs.
TEST(PlanFixes, The8bFirstChoiceIsValidatedByFsdp2WithoutRecomputationOnTwoProcessesPerNode) {
  Plan plan = MakeTestPlan(OutOfMemoryOnH200());
  ASSERT_TRUE(plan.best_fix.has_value());
  const PlanFix& first = plan.fixes[*plan.best_fix];
  EXPECT_EQ(first.engine, "fsdp2");
  EXPECT_FALSE(first.checkpointing);
  EXPECT_EQ(first.processes_per_node, 2);
  EXPECT_EQ(first.validated_by,
            "[validate] engine = \"fsdp2\", training.parallelism: fsdp, "
            "training.activation_checkpointing: false, 2 processes per node (--engine-nproc 2, "
            "one per GPU)");
  const PlanFix& sharded_recompute = plan.fixes[4];  // activation checkpointing + FSDP over 4
  EXPECT_EQ(sharded_recompute.engine, "fsdp2");
  EXPECT_NE(sharded_recompute.validated_by.find("training.activation_checkpointing: true"),
            std::string::npos);
  EXPECT_EQ(sharded_recompute.processes_per_node, 4);
}

// A fix that does not shard keeps one whole replica per process: the native engine, on every
// GPU of the run (--gpus), with recomputation when the fix is activation checkpointing.
TEST(PlanFixes, AFixThatDoesNotShardIsValidatedByTheNativeEngineOnEveryGpuOfTheRun) {
  Plan plan = MakeTestPlan(
      Measured(Pilot(4, 1), "NVIDIA A100-SXM4-80GB", 80 * kGiB, 78392698368, 0.6), Budget(0, 8));
  ASSERT_EQ(plan.fixes[0].name, "activation checkpointing");
  EXPECT_EQ(plan.fixes[0].engine, "native");
  EXPECT_EQ(plan.fixes[0].processes_per_node, 8);
  EXPECT_EQ(plan.fixes[0].validated_by,
            "[validate] engine = \"native\", training.parallelism: ddp, "
            "training.activation_checkpointing: true, 8 processes per node (--nproc 8, one per "
            "GPU)");
  ASSERT_EQ(plan.fixes[1].name, "micro_batch 2 with grad_accum 2");
  EXPECT_EQ(plan.fixes[1].engine, "native");
  EXPECT_FALSE(plan.fixes[1].checkpointing);
}

// Case B with MI300X priced at 3.0 per GPU-hour, so that H200 has the lowest budget cost.
Plan LargeOnH200WithBudget(double tokens, int64_t gpus) {
  return MakeTestPlan(LargeOnH200(), Budget(tokens, gpus, {{"MI300X", 3.0}}));
}

TEST(PlanWallClock, BudgetUnderSevenDaysFitsTheSevenDayPilotWindow) {
  Plan plan = LargeOnH200WithBudget(1e10, 8);
  EXPECT_EQ(plan.recommendation,
            "H200: the lowest cost for 10B tokens among the NVIDIA accelerators that fit (75.4 "
            "GPU-hours x 2.1 = 158.2 A100-80GB GPU-hours); the others that fit: MI300X 171.1");
  const WallClock& w = plan.wall_clock;
  ASSERT_TRUE(w.estimated) << w.reason;
  EXPECT_EQ(w.line,
            "10B tokens / (40960 tokens/s per GPU x 8 GPUs x 0.90) = 9.4 hours = 0.4 days on 8 x "
            "H200, 75.4 GPU-hours");
  EXPECT_TRUE(w.pilot_window_enough);
  EXPECT_EQ(w.advice,
            "a 7-day pilot window is enough (0.4 days estimated, 0.5 days with the x1.2 margin = "
            "7% of the window)");
}

TEST(PlanWallClock, BudgetOverSevenDaysJustifiesALongerReservationInWholeWeeks) {
  const WallClock& w = LargeOnH200WithBudget(2e11, 8).wall_clock;
  EXPECT_EQ(w.line,
            "200B tokens / (40960 tokens/s per GPU x 8 GPUs x 0.90) = 188.4 hours = 7.8 days on 8 "
            "x H200, 1507.0 GPU-hours");
  EXPECT_FALSE(w.pilot_window_enough);
  EXPECT_EQ(w.reservation_days, 14);
  EXPECT_EQ(w.advice,
            "the estimate (7.8 days) justifies a longer reservation of about 14 days (9.4 days "
            "with the x1.2 margin, rounded up to whole weeks)");
}

TEST(PlanWallClock, MarginPushesAnEstimateJustUnderSevenDaysPastTheWindow) {
  // 23B / 40960 tokens/s on one GPU (no scaling loss) = 6.5 days; x1.2 = 7.8.
  const WallClock& w = LargeOnH200WithBudget(23e9, 1).wall_clock;
  EXPECT_EQ(w.line,
            "23B tokens / (40960 tokens/s per GPU x 1 GPU x 1.00) = 156.0 hours = 6.5 days on 1 x "
            "H200, 156.0 GPU-hours");
  EXPECT_EQ(w.advice,
            "the estimate (6.5 days) justifies a longer reservation of about 14 days (7.8 days "
            "with the x1.2 margin, rounded up to whole weeks)");
}

TEST(PlanWallClock, OutOfMemoryReportHasNoStepTimeToEstimateFrom) {
  const WallClock& w = MakeTestPlan(OutOfMemoryOnH200(), Budget(1e10, 8)).wall_clock;
  EXPECT_FALSE(w.estimated);
  EXPECT_EQ(w.reason,
            "train.step ran out of memory, so there is no step time: validate again with a fix "
            "that fits, then plan");
}

TEST(PlanTokens, SuffixesScaleTheCount) {
  EXPECT_EQ(ParseTokenCount("2B"), 2e9);
  EXPECT_EQ(ParseTokenCount("500M"), 5e8);
  EXPECT_EQ(ParseTokenCount("1.5T"), 1.5e12);
  EXPECT_EQ(ParseTokenCount("10k"), 1e4);
  EXPECT_EQ(ParseTokenCount("2b"), 2e9);
  EXPECT_EQ(ParseTokenCount("123456"), 123456.0);
}

TEST(PlanTokens, MalformedOrNonPositiveCountsAreRefused) {
  for (const char* bad : {"", "B", "-5", "0", "0.5", "2X", "1.5.3B", "1e9", "inf", "nan", " 2B",
                          "2B ", "10BB", "+3M"}) {
    EXPECT_EQ(ParseTokenCount(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(PlanTokens, CountsPrintWithTheirSuffix) {
  EXPECT_EQ(TokenCountText(1e10), "10B");
  EXPECT_EQ(TokenCountText(1.5e12), "1.5T");
  EXPECT_EQ(TokenCountText(5e8), "500M");
  EXPECT_EQ(TokenCountText(999), "999");
}

TEST(PlanCost, OverrideTakesTheCatalogsSpellingOfTheName) {
  std::string error;
  auto cost = ParseCostOverride("mi300x=2.5", Catalog::Embedded(), &error);
  ASSERT_TRUE(cost) << error;
  EXPECT_EQ(cost->first, "MI300X");
  EXPECT_EQ(cost->second, 2.5);
}

TEST(PlanCost, UnknownAcceleratorOrNonPositiveCostIsRefused) {
  Catalog catalog = Catalog::Embedded();
  std::string error;
  EXPECT_FALSE(ParseCostOverride("H300=2", catalog, &error));
  EXPECT_EQ(error, "'H300' is not an accelerator in the GPU catalog");
  EXPECT_FALSE(ParseCostOverride("H200=-1", catalog, &error));
  EXPECT_FALSE(ParseCostOverride("H200=cheap", catalog, &error));
  EXPECT_FALSE(ParseCostOverride("H200", catalog, &error));
}

std::string Fixture(const char* name) {
  return (testing::SourceDir() / "tests/fixtures/reports" / name).string();
}

TEST(PlanReport, InputCarriesTheMeasuredNumbersOfTrainStep) {
  PlanInput in = PlanInputFromReport(
      nlohmann::json::parse(testing::ReadFile(Fixture("h200-pilot-report.json"))), "r.json");
  EXPECT_EQ(in.device_name, "NVIDIA H200");
  EXPECT_EQ(in.device_count, 1);
  EXPECT_EQ(in.device_total_bytes, 150109880320.0);
  EXPECT_EQ(in.peak_allocated_bytes, 78392698368.0);
  EXPECT_EQ(in.peak_reserved_bytes, 82789269504.0);
  EXPECT_EQ(in.device_used_bytes, 83509444608.0);
  EXPECT_EQ(in.step_time_s, 0.427896974);
  EXPECT_EQ(in.tokens_per_step, 16384.0);
  EXPECT_EQ(in.tokens_per_s, 38289.59070881394);
  EXPECT_EQ(in.mfu, 0.31824855069188307);
  EXPECT_EQ(in.device_peak_tflops, 989.0);
  EXPECT_EQ(in.parameters, 1235814400.0);
  EXPECT_EQ(in.config.training.micro_batch, 4);
  EXPECT_EQ(in.config.training.precision, "bf16");
  EXPECT_FALSE(in.out_of_memory);
}

// The pilot's report with one train.step metric set to `value`; what planning it throws.
std::string RefusalWith(const char* metric, const nlohmann::json& value) {
  nlohmann::json report =
      nlohmann::json::parse(testing::ReadFile(Fixture("h200-pilot-report.json")));
  for (auto& check : report["checks"]) {
    if (check["id"] != "train.step") continue;
    if (std::string(metric) == "parameters")
      check["metrics"]["shape"][metric] = value;
    else
      check["metrics"][metric] = value;
  }
  try {
    PlanInputFromReport(report, "r.json");
  } catch (const InputError& e) {
    return e.diagnostics().items()[0].Format();
  }
  return "accepted";
}

TEST(PlanReport, NumbersNoTrainingStepHasAreRefusedNamingTheField) {
  EXPECT_EQ(RefusalWith("mfu", 50),
            "r.json: error: train.step's \"mfu\" is 50, above 1: no training step measures that");
  EXPECT_NE(RefusalWith("tokens_per_s", 1e300).find("\"tokens_per_s\" is 1e+300"),
            std::string::npos);
  EXPECT_NE(RefusalWith("parameters", 1e300).find("\"parameters\""), std::string::npos);
  EXPECT_NE(RefusalWith("peak_reserved_bytes", int64_t{1} << 60).find("\"peak_reserved_bytes\""),
            std::string::npos);
  EXPECT_NE(RefusalWith("peak_tflops", 1e-300).find("\"peak_tflops\" is below 0.001"),
            std::string::npos);
  EXPECT_EQ(RefusalWith("mfu", 0.45), "accepted");  // a real MFU
}

TEST(PlanReport, TrainStepWithoutAShapeIsRefusedNamingTheFile) {
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(Fixture("tiny-report.json")));
  for (auto& check : report["checks"]) {
    if (check["id"] == "train.step") check["metrics"].erase("shape");
  }
  try {
    PlanInputFromReport(report, "r.json");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().items()[0].Format().rfind("r.json: error: train.step carries no "
                                                        "training shape (pass: step 0.0712 s",
                                                        0),
              0u)
        << e.diagnostics().items()[0].Format();
  }
}

TEST(PlanCli, H200FixtureWithTenBillionTokensOnEightGpusPrintsThePlan) {
  auto r = testing::RunTrainlock(
      {"plan", Fixture("h200-pilot-report.json"), "--tokens", "10B", "--gpus", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {
           "weights 4.6 GiB + grads 4.6 GiB + AdamW 9.2 GiB + DDP buckets 4.6 GiB + activations "
           "54.6 GiB (measured) = 77.6 GiB of 125.8 GiB usable (139.8 GiB x 0.90): fits\n",
           "A100-80GB: 77.6 GiB of 67.1 GiB usable (80 GB = 74.5 GiB x 0.90): does not fit\n",
           "Recommendation: H200: the lowest cost for 10B tokens among the NVIDIA accelerators "
           "that fit (80.6 GPU-hours x 2.1 = 169.3 A100-80GB GPU-hours); MI300X (AMD) would cost "
           "91.5 but needs the rocm target built and validated on one first\n",
           "Wall-clock: 10B tokens / (38290 tokens/s per GPU x 8 GPUs x 0.90) = 10.1 hours = 0.4 "
           "days on 8 x H200, 80.6 GPU-hours\n",
           "a 7-day pilot window is enough (0.4 days estimated, 0.5 days with the x1.2 margin = 7% "
           "of the window)\n",
           "(measured here: peak reserved - peak allocated = 4.1 GiB, device used - peak "
           "allocated = 4.8 GiB = 3.4% of capacity)",
       }) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n---\n" << r.out;
  }
}

TEST(PlanCli, JsonIsTheSamePlanAsData) {
  auto r = testing::RunTrainlock(
      {"plan", Fixture("h200-pilot-report.json"), "--tokens", "10B", "--gpus", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["recommended"], "H200");
  EXPECT_EQ(j["measured_vendor"], "nvidia");
  EXPECT_EQ(j["alternative"], "MI300X");
  EXPECT_EQ(j["memory"]["fits"], true);
  EXPECT_EQ(j["accelerators"].size(), 4u);
  EXPECT_EQ(j["wall_clock"]["gpus"], 8);
  EXPECT_EQ(j["wall_clock"]["pilot_window_enough"], true);
}

TEST(PlanCli, CostOverrideDecidesWhetherTheOtherVendorIsNamedAsCheaper) {
  auto r = testing::RunTrainlock(
      {"plan", Fixture("h200-pilot-report.json"), "--cost", "MI300X=4", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["recommended"], "H200");
  EXPECT_EQ(j["alternative"], nullptr);
  EXPECT_EQ(j["recommendation"],
            "H200: the cheapest NVIDIA accelerator that fits (2.1 per GPU-hour, A100-80GB = 1.0; "
            "no --tokens, so by the price per GPU-hour alone); the others that fit: MI300X 4.0");
}

TEST(PlanCli, CpuFixtureSaysItNeedsAGpuReport) {
  auto r = testing::RunTrainlock({"plan", Fixture("tiny-report.json"), "--tokens", "1M"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("need train.step measured on a GPU"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\(estimated\) = \d+\.\d MiB per GPU)")))
      << r.out;
}

// The report plan is needed most for: train.step ran out of memory at the intended shape.
TEST(PlanCli, CpuFixtureSaysTheMemoryIsEstimatedAndNeverPrintsAZeroSize) {
  auto r = testing::RunTrainlock({"plan", Fixture("tiny-report.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Memory per GPU with DDP (estimated from the shape: the report trained on "
                       "the CPU, which measures no device memory):"),
            std::string::npos)
      << r.out;
  // 119.1K parameters: their weights are 0.5 MiB, not "0.0 GiB".
  EXPECT_EQ(r.out.find(" 0.0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("weights 0.5 MiB"), std::string::npos) << r.out;
}

TEST(PlanCli, AnOutOfMemoryReportGetsALayoutThatFitsWithTheArithmetic) {
  auto r = testing::RunTrainlock({"plan", Fixture("h200-8b-oom-report.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured on NVIDIA H200: out of memory at this shape"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("= 376.5 GiB of 125.8 GiB usable (139.8 GiB x 0.90): does not fit"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("first choice: micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("first choice: micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs\n"
                       "  validate it with: [validate] engine = \"fsdp2\", training.parallelism: "
                       "fsdp, training.activation_checkpointing: false, 2 processes per node "
                       "(--engine-nproc 2, one per GPU)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("activation checkpointing + FSDP over 4 GPUs"), std::string::npos);
}

// rank 0's merged report of a 2-GPU run: planned for both GPUs.
TEST(PlanCli, AMergedReportIsPlannedForEveryGpuOfTheRun) {
  auto r = testing::RunTrainlock(
      {"plan", Fixture("h200-x2-merged-report.json"), "--tokens", "10B", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu_report"], true);
  EXPECT_EQ(j["wall_clock"]["gpus"], 2);
  EXPECT_EQ(j["memory"]["fits"], true);
}

// Another rank's own report (--out per rank): the node checks are rank 0's, so skipped, and
// train.step is its own measurement; plan reads it like any other.
TEST(PlanCli, ANonZeroRanksReportIsPlannedFromItsOwnTrainStep) {
  nlohmann::json report =
      nlohmann::json::parse(testing::ReadFile(Fixture("h200-x2-merged-report.json")));
  report.erase("ranks");
  report["rank"] = {{"rank", 1}, {"world_size", 2}, {"local_rank", 1}, {"launcher", "torchrun"}};
  report["devices"] = nlohmann::json::array({report["devices"][1]});
  const std::set<std::string> own = {"comm.allreduce",  "comm.ddp",   "train.step",
                                     "train.roundtrip", "train.eval", "ckpt.portable"};
  for (auto& c : report["checks"]) {
    if (own.count(c["id"].get<std::string>())) continue;
    c["status"] = "skip";
    c["summary"] = "run by the node's local rank 0; rank 1 joins the collectives";
    c["metrics"] = nlohmann::json::object();
  }
  testing::TempDir dir;
  const std::string file = (dir.path() / "rank-1.json").string();
  testing::WriteFile(file, report.dump());
  auto r = testing::RunTrainlock({"plan", file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpu_report"], true);
  EXPECT_EQ(j["device"], "NVIDIA H200");
  EXPECT_EQ(j["memory"]["fits"], true);
}

TEST(PlanCli, AHostileDeviceNameIsShownEscaped) {
  nlohmann::json report =
      nlohmann::json::parse(testing::ReadFile(Fixture("h200-pilot-report.json")));
  for (auto& c : report["checks"]) {
    if (c["id"] == "train.step") c["metrics"]["device_name"] = "NVIDIA H200\x1b]0;pwned\x07";
  }
  testing::TempDir dir;
  const std::string file = (dir.path() / "r.json").string();
  testing::WriteFile(file, report.dump());
  auto r = testing::RunTrainlock({"plan", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b]0;pwned\\x07"), std::string::npos) << r.out;
}

TEST(PlanCli, BadInputExitsTwoWithOneLineNamingTheFile) {
  testing::TempDir dir;
  const std::string not_json = (dir.path() / "not-json.json").string();
  testing::WriteFile(not_json, "{\n  \"schema\": oops\n}\n");
  const std::string not_report = (dir.path() / "not-report.json").string();
  testing::WriteFile(not_report, "{\"schema\": \"something/v2\"}\n");
  const std::string missing = (dir.path() / "missing.json").string();
  struct Case {
    std::vector<std::string> args;
    std::string err_prefix;
  };
  for (const Case& c : std::vector<Case>{
           {{"plan", missing}, missing + ": error: cannot read: no such file"},
           {{"plan", not_json}, not_json + ":2:13: error: not valid JSON: "},
           {{"plan", not_report}, not_report + ": error: not a trainlock.report/v2 report: "},
           {{"plan", Fixture("tiny-report.json"), "--tokens", "ten"},
            "--tokens: error: 'ten' is not a token count; a positive number with an optional K, "
            "M, B or T suffix, e.g. 10B or 1.5T"},
           {{"plan", Fixture("tiny-report.json"), "--cost", "H300=2"},
            "--cost: error: 'H300' is not an accelerator in the GPU catalog"},
       }) {
    auto r = testing::RunTrainlock(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[1];
    EXPECT_EQ(r.err.rfind(c.err_prefix, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace trainlock
