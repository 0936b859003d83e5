// The validator's terminal summary: a header naming the validator, the project and lock, one
// line per check (the remedy under a failing one), and the verdict with where the report went;
// and the progress of a run: each check announced as it completes.
#pragma once

#include <optional>
#include <string>

#include "base/progress.h"
#include "base/rank_env.h"
#include "coordinator/validate.h"
#include "report/report.h"

namespace trainlock::validate {

void PrintSummary(const Report& report, const ValidateOptions& o, const std::string& lock_sha,
                  const std::optional<RankEnv>& rank);

// Announces every check in `report` that `progress` has not announced yet: called after each
// phase, so a log shows each check when it completes rather than at the end.
void AnnounceChecks(Progress& progress, const Report& report);

// The progress the options ask for; `rank` names the source. On a terminal only rank 0 draws
// (ranks sharing one terminal would overwrite each other's lines); logs and JSON get every
// rank's lines, each naming its rank.
ProgressStyle ProgressStyleFor(const ValidateOptions& o, const std::optional<RankEnv>& rank);
std::string ProgressSource(const std::optional<RankEnv>& rank);

}  // namespace trainlock::validate
