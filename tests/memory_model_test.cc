// The training-memory estimate behind plan's fixes, on the example shapes.
#include <gtest/gtest.h>

#include "plan/memory_model.h"
#include "test_support.h"

namespace trainlock {
namespace {

TrainConfig Config(const char* project, const char* file) {
  auto path = testing::SourceDir() / "examples" / project / "configs" / file;
  return LoadTrainConfig(testing::ReadFile(path), path.string());
}

TEST(MemoryModel, StatesCostSixteenBytesPerParameter) {
  MemoryEstimate e = EstimateTrainingMemory(Config("h200-pilot", "llama-1b.yaml"));
  EXPECT_EQ(e.parameters, 1235814400.0);
  EXPECT_EQ(e.weights_bytes + e.grads_bytes + e.optimizer_bytes, 16.0 * 1235814400.0);
}

TEST(MemoryModel, LogitsCostTwelveBytesPerTokenAndVocabEntryUnderBf16) {
  MemoryEstimate e = EstimateTrainingMemory(Config("h200-pilot", "llama-1b.yaml"));
  EXPECT_EQ(e.logits_bytes, 4.0 * 4096 * 128256 * 12);
}

TEST(MemoryModel, CheckpointingAndShardingShrinkWhatTheyShould) {
  TrainConfig c = Config("h200-8b-oom", "llama-8b.yaml");
  MemoryEstimate base = EstimateTrainingMemory(c);
  MemoryEstimate ckpt = EstimateTrainingMemory(c, {0, true, 1});
  MemoryEstimate fsdp = EstimateTrainingMemory(c, {0, false, 8});
  EXPECT_LT(ckpt.activation_bytes, base.activation_bytes / 5);
  EXPECT_EQ(fsdp.optimizer_bytes * 8, base.optimizer_bytes);
  EXPECT_EQ(fsdp.activation_bytes, base.activation_bytes);
}

}  // namespace
}  // namespace trainlock
