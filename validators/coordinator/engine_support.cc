// The native engine's limits; see engine_support.h.
#include "coordinator/engine_support.h"

#include "base/diagnostic.h"

namespace trainlock::validate {

void RefuseUnhonouredFields(const TrainConfig& config, const std::string& config_path, bool cpu) {
  const TrainingConfig& t = config.training;
  Diagnostics diags;
  // The native trainer keeps one full replica per process and never shards parameters.
  if (t.parallelism != "ddp") {
    diags.Error(config_path, {},
                "training.parallelism: " + t.parallelism +
                    " is not supported by the native engine (supported: ddp); engines that "
                    "support it: fsdp2 ([validate] engine = \"fsdp2\")",
                "set parallelism: ddp to validate with the native engine");
  }
  // Autocast runs on CUDA/ROCm devices only (trainer.cc); on the CPU the step would train fp32.
  if (cpu && t.precision != "fp32") {
    diags.Error(config_path, {},
                "training.precision: " + t.precision +
                    " is not supported by the native engine on the CPU (supported there: fp32); "
                    "engines that support it: native on a CUDA or ROCm device",
                "validate on the GPU target (`trainlock validate DIR --image REF`), or set "
                "precision: fp32");
  }
  if (!diags.empty()) throw InputError(std::move(diags));
}

}  // namespace trainlock::validate
