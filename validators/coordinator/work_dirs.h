// Where a validation writes: the work directory of its worker processes and the checkpoint
// directory its round trip saves to.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "base/rank_env.h"
#include "project/project.h"
#include "support/validate_options.h"

namespace trainlock::validate {

// A fresh directory of this run's own (mkdir of a random name, never an existing one): under
// --work-dir when given (ranks' names start "rank-N-"), else under the temporary directory.
// Nothing an earlier run left in --work-dir is ever read as this run's results.
std::filesystem::path MakeWorkDir(const ValidateOptions& o, const std::optional<RankEnv>& rank);

// The checkpoint storage a run tests and where that choice came from: --checkpoint-dir
// ("option"), else the lock's validate.checkpoint-dir, relative to the project ("lock"), else
// none ("work-dir": `path` empty, the run's work directory holds its checkpoints).
struct CheckpointStorage {
  std::filesystem::path path;
  std::string source;  // "option" | "lock" | "work-dir"
};
CheckpointStorage ChooseCheckpointStorage(const ValidateOptions& o, const Project& project);

// Throws InputError (exit 2) naming the storage and where it was named (the lock or
// --checkpoint-dir) when it is not an existing directory this process may write: the storage
// is the long run's, never created here.
void RequireCheckpointStorage(const CheckpointStorage& storage, const Project& project);

// Throws InputError (exit 2) naming --state-dir when it is given and is not an existing
// directory this process may write.
void RequireStateDirectory(const std::filesystem::path& state_dir);

// `work`/checkpoints when no storage is named; else a directory of this run's own, made under
// the storage (RequireCheckpointStorage'd) with a random name (trainlock-validate-XXXXXX) that
// no other run can share or predict.
std::filesystem::path CheckpointRoot(const ValidateOptions& o, const Project& project,
                                     const std::filesystem::path& work);

}  // namespace trainlock::validate
