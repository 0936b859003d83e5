// Where a validation writes: the work directory of its worker processes and the checkpoint
// directory its round trip saves to.
#pragma once

#include <filesystem>
#include <optional>

#include "base/rank_env.h"
#include "project/project.h"
#include "support/validate_options.h"

namespace trainlock::validate {

// --work-dir, or a fresh temporary directory. Ranks of one node get a directory each under
// --work-dir ("rank-N"): their round trips must not share worker files.
std::filesystem::path MakeWorkDir(const ValidateOptions& o, const std::optional<RankEnv>& rank);

// --checkpoint-dir, else the lock's validate.checkpoint-dir (relative to the project), else
// `work`/checkpoints. Under shared checkpoint storage, a directory of this run's own, made here
// under a random name (trainlock-validate-XXXXXX) that no other run can share or predict.
std::filesystem::path CheckpointRoot(const ValidateOptions& o, const Project& project,
                                     const std::filesystem::path& work);

}  // namespace trainlock::validate
