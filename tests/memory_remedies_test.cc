// One remedy engine: train.step's out-of-memory remedies (what the validator's coordinator
// writes, plan/memory_remedies.h) and `trainlock plan` on the report give the same ranked
// first choice from the same numbers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "compat/catalog.h"
#include "plan/memory_remedies.h"
#include "plan/plan.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

nlohmann::json Oom8bReport() {
  return nlohmann::json::parse(
      testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-8b-oom-report.json"));
}

const nlohmann::json& TrainStep(const nlohmann::json& report) {
  for (const nlohmann::json& check : report["checks"]) {
    if (check["id"] == "train.step") return check;
  }
  throw std::logic_error("the fixture has no train.step");
}

// What the coordinator has when the worker runs out of memory: the project's config, the
// device's total as the worker measured it, its name.
std::vector<std::string> ValidatorRemedies(const nlohmann::json& report) {
  const Project project =
      LoadProject(testing::SourceDir() / "examples/h200-8b-oom", ManifestRequirement::kOptional);
  const nlohmann::json& metrics = TrainStep(report)["metrics"];
  return MemoryRemedies(project.config, report["devices"][0]["name"].get<std::string>(),
                        metrics["device_total_bytes"].get<double>(), Catalog::Embedded());
}

TEST(MemoryRemedies, TrainStepAndPlanGiveTheSameFirstChoiceForThe8bOutOfMemoryReport) {
  const nlohmann::json report = Oom8bReport();
  const Plan plan =
      MakePlan(PlanInputFromReport(report, "h200-8b-oom-report.json"), {}, Catalog::Embedded());
  const std::vector<std::string> remedies = ValidatorRemedies(report);
  ASSERT_TRUE(plan.best_fix.has_value());
  ASSERT_FALSE(remedies.empty());
  const PlanFix& first = plan.fixes[*plan.best_fix];
  EXPECT_EQ(first.name, "micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs");
  // The settings that validate it: the sharding engine, no recomputation, one process per GPU.
  EXPECT_EQ(first.engine, "fsdp2");
  EXPECT_FALSE(first.checkpointing);
  EXPECT_EQ(first.processes_per_node, 2);
  EXPECT_EQ(remedies.front(), first.line);
  // Every remedy the finding lists that fits is the plan's, in the plan's ranking.
  for (size_t i = 0; i < remedies.size() && i < plan.fix_ranking.size(); ++i) {
    const PlanFix& fix = plan.fixes[plan.fix_ranking[i]];
    if (!fix.memory.fits()) break;
    EXPECT_EQ(remedies[i], fix.line) << i;
  }
}

// The fixture is a recorded validator output: its remedies are what MemoryRemedies gives.
TEST(MemoryRemedies, TheRecordedFixtureCarriesTheEnginesRemedies) {
  const nlohmann::json report = Oom8bReport();
  const nlohmann::json& step = TrainStep(report);
  const std::vector<std::string> remedies = ValidatorRemedies(report);
  EXPECT_EQ(step["metrics"]["remedies"].get<std::vector<std::string>>(), remedies);
  std::string remedy;
  for (size_t i = 0; i < remedies.size(); ++i)
    remedy += (i ? "; " : "") + std::to_string(i + 1) + ") " + remedies[i];
  EXPECT_EQ(step["remedy"], remedy);
}

// The plan's two fixes that fit, ranked (2 GPUs and no recompute beat 4 GPUs), then that no
// catalog accelerator holds the step: the single changes that do not fit are left to `plan`.
TEST(MemoryRemedies, The8bShapeOnOneH200ListsTheFixesThatFitThenTheAccelerators) {
  EXPECT_EQ(
      ValidatorRemedies(Oom8bReport()),
      std::vector<std::string>({
          "micro_batch 1 with grad_accum 4 + FSDP over 2 GPUs: (weights 29.9 GiB + grads 29.9 "
          "GiB + AdamW 59.8 GiB) / 2 + activations 56.7 GiB (estimated 227.0 GiB x 0.250) = "
          "116.6 GiB of 125.8 GiB usable: fits",
          "activation checkpointing + FSDP over 4 GPUs: (weights 29.9 GiB + grads 29.9 GiB + "
          "AdamW 59.8 GiB) / 4 + activations 68.6 GiB (estimated 227.0 GiB x 0.302) = 98.5 GiB "
          "of 125.8 GiB usable: fits; step time about x1.33",
          "none of A100-80GB, H100-80GB, H200 and MI300X holds the step with DDP (376.5 GiB per "
          "GPU, its gradient buckets included): shard or shrink it as above",
      }));
}

// The pilot's shape fits an H200 by the estimate; a step that ran out of memory there anyway
// still gets fixes, and the same ones from both sides.
TEST(MemoryRemedies, AnOutOfMemoryWhoseEstimateFitsStillGetsThePlansFixes) {
  const Project project =
      LoadProject(testing::SourceDir() / "examples/h200-pilot", ManifestRequirement::kOptional);
  PlanInput input;
  input.config = project.config;
  input.device_name = "NVIDIA H200";
  input.device_total_bytes = 150109880320;
  input.out_of_memory = true;
  const Plan plan = MakePlan(input, {}, Catalog::Embedded());
  EXPECT_TRUE(plan.memory.fits());
  ASSERT_TRUE(plan.best_fix.has_value());
  EXPECT_EQ(plan.fixes[*plan.best_fix].name, "micro_batch 2 with grad_accum 2");
  const std::vector<std::string> remedies =
      MemoryRemedies(project.config, "NVIDIA H200", 150109880320, Catalog::Embedded());
  // Every fix fits; a larger accelerator is not offered, since the estimate that fits the
  // H200 cannot say how much larger would do.
  ASSERT_EQ(remedies.size(), plan.fixes.size());
  EXPECT_EQ(remedies.front(), plan.fixes[*plan.best_fix].line);
}

TEST(MemoryRemedies, AnUnmeasuredCapacityJudgesNoFix) {
  const Project project =
      LoadProject(testing::SourceDir() / "examples/h200-8b-oom", ManifestRequirement::kOptional);
  std::vector<std::string> remedies = MemoryRemedies(project.config, "", -1, Catalog::Embedded());
  ASSERT_EQ(remedies.size(), 1u);
  EXPECT_NE(remedies[0].find("did not report its capacity"), std::string::npos) << remedies[0];
}

}  // namespace
}  // namespace trainlock
