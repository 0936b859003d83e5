// lock.stale and lock.config: whether the lock still describes the files a run would use (the
// manifest it was resolved from, the training config it recorded). `trainlock check` reports
// them as findings; the validator refuses to train on a drifted project.
#pragma once

#include <vector>

#include "compat/finding.h"
#include "project/project.h"

namespace trainlock {

// lock.stale when the manifest is present and is not the one the lock was made from
// (manifest-sha256); lock.config when the config the lock names changed (config-sha256); a
// config that is not there (Project::config_read false) is not judged.
// Empty without a lock.
std::vector<Finding> LockDrift(const Project& project);

}  // namespace trainlock
