// What the validator's one training engine (native: engines/native/trainer.h) can honour of a
// training config, on the device it trains on. A field it cannot honour is refused before any
// training, naming the field and the engines that support it: a run at another shape than the
// config's would make the report state a shape that never ran.
#pragma once

#include <string>

#include "project/train_config.h"

namespace trainlock::validate {

// Throws InputError (exit 2), one line per field, "CONFIG_PATH: error: training.FIELD: VALUE is
// not supported by the native engine ...", for every field of `config` the native engine does
// not honour when training on the CPU (`cpu`) or on a GPU.
void RefuseUnhonouredFields(const TrainConfig& config, const std::string& config_path, bool cpu);

}  // namespace trainlock::validate
