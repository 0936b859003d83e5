// What the lock's engine (validate.engine) can be asked to do, decided before any work: a
// config field or a validator option it cannot honour is refused (exit 2) naming the field or
// option and the engines that can. Whether this environment can run a Python engine at all is
// engine_probe.h's. The native engine's own limits are engine_support.h's.
#pragma once

#include "project/project.h"
#include "support/validate_options.h"

namespace trainlock::validate {

// Throws InputError (exit 2) as above; `cpu` when training on the CPU.
void RefuseUnsupportedEngineRun(const Project& project, const ValidateOptions& options, bool cpu);

}  // namespace trainlock::validate
