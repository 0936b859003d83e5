// What the lock's engine cannot do is refused before any work (exit 2), naming the field or
// option: a weights format no engine loads, a reshard that cannot keep the global batch, a
// precision the engine does not train. Refused here, none of them can end as a failing node or
// as a pass on a model the lock does not pin.
#include <gtest/gtest.h>

#include <string>

#include "base/diagnostic.h"
#include "coordinator/engine_requests.h"

namespace trainlock {
namespace {

// A project of `engine` with the config's parallelism that engine trains.
Project ProjectFor(const std::string& engine) {
  Project p;
  p.lock_path = "trainlock.lock";
  p.config_path = "configs/train.yaml";
  p.lock = Lockfile{};
  p.lock->validate.engine = engine;
  p.config.training.parallelism = engine == "fsdp2" ? "fsdp" : "ddp";
  return p;
}

// The refusal's text, "" when the run is accepted.
std::string Refusal(const Project& project, const validate::ValidateOptions& options = {},
                    bool cpu = false) {
  try {
    validate::RefuseUnsupportedEngineRun(project, options, cpu);
  } catch (const InputError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics().items()) all += d.Format() + "\n";
    return all;
  }
  return "";
}

ArtifactSource ModelOf(std::initializer_list<const char*> names) {
  ArtifactSource model;
  model.source = "local";
  for (const char* name : names) model.files.push_back({name, std::string(64, 'a'), 1});
  return model;
}

TEST(EngineRequests, PinnedWeightsNoEngineLoadsAreRefusedNamingModelFiles) {
  for (const char* engine : {"native", "ddp"}) {
    Project p = ProjectFor(engine);
    p.lock->model = ModelOf({"config.json", "pytorch_model.bin"});
    EXPECT_NE(Refusal(p).find("trainlock.lock: error: model.files pins weights no engine loads "
                              "(pytorch_model.bin); the engines load *.safetensors"),
              std::string::npos)
        << engine << ": " << Refusal(p);
  }
}

TEST(EngineRequests, PinnedSafetensorsBesideOtherFormatsAreLoaded) {
  Project p = ProjectFor("native");
  p.lock->model = ModelOf({"config.json", "pytorch_model.bin", "model.safetensors"});
  EXPECT_EQ(Refusal(p), "");
}

// A model pinned without weights (its config and tokenizer) is the documented seeded
// initialisation of the config's shape, stated in train.step's metrics.model.
TEST(EngineRequests, AModelPinnedWithoutWeightsIsNotRefused) {
  Project p = ProjectFor("native");
  p.lock->model = ModelOf({"config.json", "tokenizer.json", "training_args.bin"});
  EXPECT_EQ(Refusal(p), "");
}

TEST(EngineRequests, AReshardThatCannotKeepTheGlobalBatchIsRefused) {
  Project p = ProjectFor("ddp");
  p.config.training.grad_accum = 2;
  validate::ValidateOptions o;
  o.engine_nproc = 2;
  o.reshard_to = 3;
  EXPECT_NE(Refusal(p, o).find("--reshard-to: error: --reshard-to 3 cannot keep the global batch "
                               "of 4 micro-batches (world size 2 x training.grad_accum 2)"),
            std::string::npos)
      << Refusal(p, o);
  o.reshard_to = 4;
  EXPECT_EQ(Refusal(p, o), "");
}

// The bitflip control plants its fault in the native engine's step: another engine would train
// unflipped and the control would prove nothing.
TEST(EngineRequests, TheBitflipControlIsRefusedForAnEngineOtherThanNative) {
  validate::ValidateOptions o;
  o.negative_control = validate::NegativeControl::kFlipBit;
  EXPECT_NE(Refusal(ProjectFor("ddp"), o)
                .find("bitflip plants its fault in the native engine's "
                      "step"),
            std::string::npos)
      << Refusal(ProjectFor("ddp"), o);
  EXPECT_EQ(Refusal(ProjectFor("native"), o), "");
}

TEST(EngineRequests, Fp16IsRefusedForFsdp2NamingTheField) {
  Project p = ProjectFor("fsdp2");
  p.config.training.precision = "fp16";
  EXPECT_NE(Refusal(p).find("configs/train.yaml: error: training.precision: fp16 is not "
                            "supported by engine fsdp2"),
            std::string::npos)
      << Refusal(p);
  p.config.training.precision = "bf16";
  EXPECT_EQ(Refusal(p), "");
}

}  // namespace
}  // namespace trainlock
