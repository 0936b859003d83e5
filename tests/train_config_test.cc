// Training-config schema and the numbers derived from it.
#include <gtest/gtest.h>

#include "base/diagnostic.h"
#include "project/train_config.h"
#include "test_support.h"

namespace trainlock {
namespace {

TrainConfig Example(const char* project, const char* config) {
  std::filesystem::path file = testing::SourceDir() / "examples" / project / "configs" / config;
  return LoadTrainConfig(testing::ReadFile(file), file.string());
}

TEST(TrainConfig, PilotHasTheLlama32OneBShape) {
  TrainConfig c = Example("h200-pilot", "llama-1b.yaml");
  EXPECT_EQ(c.model.hidden_size, 2048);
  EXPECT_EQ(c.model.num_kv_heads, 8);
  EXPECT_EQ(c.model.head_dim(), 64);
  EXPECT_EQ(c.training.seq_len, 4096);
  EXPECT_EQ(c.training.micro_batch, 4);
  EXPECT_EQ(c.training.precision, "bf16");
}

TEST(TrainConfig, PilotParameterCountIsLlama32OneB) {
  // Llama-3.2-1B has 1,235,814,400 parameters with tied embeddings.
  EXPECT_EQ(Example("h200-pilot", "llama-1b.yaml").model.ParameterCount(), 1235814400);
}

TEST(TrainConfig, DefaultsApplyWhenOptionalKeysAreAbsent) {
  TrainConfig c = LoadTrainConfig(R"(
model: {architecture: llama, hidden_size: 8, num_layers: 1, num_heads: 2,
        intermediate_size: 16, vocab_size: 10}
training: {seq_len: 4, micro_batch: 1, precision: fp32, optimizer: {name: adamw, lr: 0.1}}
)",
                                  "c.yaml");
  EXPECT_EQ(c.model.num_kv_heads, 2);
  EXPECT_EQ(c.training.grad_accum, 1);
  EXPECT_EQ(c.training.parallelism, "ddp");
}

TEST(TrainConfig, KvHeadsMustDivideHeads) {
  try {
    LoadTrainConfig(R"(
model: {architecture: llama, hidden_size: 12, num_layers: 1, num_heads: 6, num_kv_heads: 4,
        intermediate_size: 16, vocab_size: 10}
training: {seq_len: 4, micro_batch: 1, precision: fp32, optimizer: {name: adamw, lr: 0.1}}
)",
                    "c.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of model.num_kv_heads"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace trainlock
