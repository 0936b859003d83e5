// The training config (configs/*.yaml): model shape and training recipe, schema-validated.
#pragma once

#include <string>
#include <string_view>

#include "run/run_config.h"

namespace trainlock {

// Parses and validates YAML text; throws InputError with every problem found, each as
// "path:line:column: error: ...".
TrainConfig LoadTrainConfig(std::string_view text, const std::string& path);

}  // namespace trainlock
