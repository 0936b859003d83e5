// A config field the native engine cannot honour on the training device is refused before any
// training (exit 2), naming the config file, the field and the engines that support it: the
// report never states a shape that did not run.
#include <gtest/gtest.h>

#include <string>

#include "base/diagnostic.h"
#include "coordinator/engine_support.h"

namespace trainlock {
namespace {

// The refusal's text for `config`, "" when the engine honours it.
std::string Refusal(const TrainConfig& config, bool cpu) {
  try {
    validate::RefuseUnhonouredFields(config, "configs/train.yaml", cpu);
  } catch (const InputError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics().items()) all += d.Format() + "\n";
    return all;
  }
  return "";
}

TEST(EngineSupport, FsdpIsRefusedNamingTheFieldAndTheEnginesThatSupportIt) {
  TrainConfig config;
  config.training.parallelism = "fsdp";
  EXPECT_NE(Refusal(config, /*cpu=*/false)
                .find("configs/train.yaml: error: training.parallelism: fsdp is not supported by "
                      "the native engine (supported: ddp); engines that support it: fsdp2 "
                      "([validate] engine = \"fsdp2\")"),
            std::string::npos)
      << Refusal(config, false);
}

// The native trainer recomputes each decoder layer in backward (trainer_test.cc).
TEST(EngineSupport, ActivationCheckpointingIsHonouredOnEveryDevice) {
  TrainConfig config;
  config.training.activation_checkpointing = true;
  EXPECT_EQ(Refusal(config, /*cpu=*/false), "");
  EXPECT_EQ(Refusal(config, /*cpu=*/true), "");
}

TEST(EngineSupport, Bf16AndFp16OnTheCpuAreRefusedTheCpuTrainsFp32) {
  for (const char* precision : {"bf16", "fp16"}) {
    TrainConfig config;
    config.training.precision = precision;
    EXPECT_NE(Refusal(config, /*cpu=*/true)
                  .find(std::string("configs/train.yaml: error: training.precision: ") + precision +
                        " is not supported by the native engine on the CPU"),
              std::string::npos)
        << Refusal(config, true);
    EXPECT_EQ(Refusal(config, /*cpu=*/false), "");  // autocast on a GPU honours it
  }
}

TEST(EngineSupport, EveryUnhonouredFieldIsNamedAtOnce) {
  TrainConfig config;
  config.training.parallelism = "fsdp";
  config.training.precision = "bf16";
  const std::string refusal = Refusal(config, /*cpu=*/true);
  for (const char* field : {"training.parallelism", "training.precision"})
    EXPECT_NE(refusal.find(field), std::string::npos) << refusal;
}

TEST(EngineSupport, AnFp32DdpConfigIsHonouredOnTheCpu) {
  EXPECT_EQ(Refusal(TrainConfig{}, /*cpu=*/true), "");
}

}  // namespace
}  // namespace trainlock
