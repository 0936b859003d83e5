// Whether a GPU build of the validator has the accelerator its lock's targets need. A container
// started without its GPUs (no `--gpus`, no CDI spec) sees none; training on the CPU instead
// would judge another node than the one the lock's targets describe, and refusing the config
// ("bf16 is not supported on the CPU") would blame the project. Neither is the node's fault: it
// is an environment error (exit 3, report verdict "error").
#pragma once

#include <string>

#include "project/lockfile.h"

namespace trainlock::validate {

// Why this run cannot be judged here: a `build` of "cuda" or "rocm" with `device` "auto" or a
// GPU device, a lock without a cpu target, and no accelerator visible. "" when it can run.
std::string MissingAccelerator(const std::string& build, const std::string& device,
                               const Lockfile& lock, int visible_accelerators);

}  // namespace trainlock::validate
