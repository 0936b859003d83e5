// The validator's terminal summary: a header naming the validator, the project and lock, one
// line per check (the remedy under a failing one), and the verdict with where the report went.
#pragma once

#include <optional>
#include <string>

#include "base/rank_env.h"
#include "report/report.h"
#include "validate.h"

namespace trainlock::validate {

void PrintSummary(const Report& report, const ValidateOptions& o, const std::string& lock_sha,
                  const std::optional<RankEnv>& rank);

}  // namespace trainlock::validate
