// model.config: whether the training config trains the model the project pins. When the
// model's Hugging Face config.json is on this machine (fetched, or written by `trainlock init`
// into the cache; a local model's own directory), every shape field of the training config is
// compared with it before anything trains.
//
// Finding ids:
//   model.config        a training-config field disagrees with config.json (at the field)
//   model.unsupported   config.json asks for what the validator's Llama does not compute
//   model.config-hash   the config.json on disk is not the one the lock pins
#pragma once

#include <vector>

#include "compat/finding.h"
#include "project/project.h"

namespace trainlock {

// Empty when the project pins no model, its config.json is not on this machine, or everything
// agrees.
std::vector<Finding> CheckModelConfig(const Project& project);

}  // namespace trainlock
