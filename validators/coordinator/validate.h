// `trainlock-validate`: runs every check on this node for one project and writes the report.
#pragma once

#include "support/validate_options.h"

namespace trainlock::validate {

// Returns the process exit code: 0 pass, 1 fail, 2 bad input, 3 environment failure.
int RunValidate(const ValidateOptions& options);

}  // namespace trainlock::validate
