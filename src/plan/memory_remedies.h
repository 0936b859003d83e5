// train.step's out-of-memory remedies: the fixes `trainlock plan` gives for the same report,
// ranked by the same engine (MakePlan, whose RankMemoryFixes is the only place that decides
// memory remedies), so that the validator's finding and the plan never give two answers to one
// question. Torch-free: the validator's coordinator calls it with what it measured, and the
// tests with a report's numbers.
#pragma once

#include <string>
#include <vector>

#include "compat/catalog.h"
#include "project/train_config.h"

namespace trainlock {

// The remedies for a step at `config` that ran out of memory on a device of
// `device_total_bytes` (as it reported its capacity; <= 0: not measured) named `device_name`
// ("" when unknown), each with its arithmetic, first choice first: the fixes that fit, ranked
// as `plan` ranks them (every fix tried when none fits), then a larger catalog accelerator
// that holds the step with DDP (or that none does; neither when the estimate fits the device).
//
// Both sides rank with plan's defaults, the common input they share: the validator does not
// know how many GPUs the run will have, and `plan` without --gpus does not assume it either,
// so FSDP is tried over the fewest power-of-two GPUs up to 64 that fits, with 10% of the
// capacity kept free. `plan --gpus N` asks a different question (FSDP over N) and may answer
// it differently.
std::vector<std::string> MemoryRemedies(const TrainConfig& config, const std::string& device_name,
                                        double device_total_bytes, const Catalog& catalog);

}  // namespace trainlock
